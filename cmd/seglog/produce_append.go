package main

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seglog/seglog/storage"
)

// appendLines appends lines (the first is line number first) as one
// batch per partition and prints where each went. A line without the key
// separator stops produce after the lines before it are appended.
func (p *producer) appendLines(w *bufio.Writer, lines [][]byte, first int) int {
	recs, bad, err := p.parseLines(lines, first)
	if err != nil {
		if bad > 0 {
			if code := p.appendLines(w, lines[:bad], first); code != exitOK {
				return code
			}
		}
		return p.stop(w, "%v", err)
	}
	parts, order, groups, err := p.route(recs)
	if err != nil {
		return p.stop(w, "%v", err)
	}
	offs, code := p.appendGroups(w, recs, first, len(lines), order, groups)
	if code != exitOK {
		return code
	}
	p.appended = first + len(lines) - 1
	var buf []byte
	for i := range recs {
		buf = strconv.AppendInt(buf[:0], int64(parts[i]), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, offs[i], 10)
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		return p.c.fail("write stdout: %v", err)
	}
	return exitOK
}

// parseLines turns lines (the first is line number first) into records;
// on a bad line it returns its index and why.
func (p *producer) parseLines(lines [][]byte, first int) ([]storage.Record, int, error) {
	recs := make([]storage.Record, len(lines))
	for i, line := range lines {
		if p.json {
			r, err := decodeJSONRecord(line)
			if err != nil {
				return nil, i, fmt.Errorf("stdin line %d: %v", first+i, err)
			}
			recs[i] = r
			continue
		}
		if p.sep == nil {
			recs[i].Value = line
			continue
		}
		k := bytes.Index(line, p.sep)
		if k < 0 {
			return nil, i, fmt.Errorf("stdin line %d has no key separator %q", first+i, p.sep)
		}
		recs[i].Key, recs[i].Value = line[:k], line[k+len(p.sep):]
	}
	return recs, 0, nil
}

// route returns each record's partition, the partitions in the order of
// their first record, and the records of each partition.
func (p *producer) route(recs []storage.Record) (parts, order []int32, groups map[int32][]int, err error) {
	// Route: --partition, the key's partition, or one round-robin
	// partition for the whole (keyless) batch; one batch per partition, in
	// the order of their first line.
	parts = make([]int32, len(recs))
	groups = map[int32][]int{}
	for i := range recs {
		var part int32
		switch {
		case p.partition >= 0:
			part = p.partition
		case recs[i].Key == nil && i > 0:
			part = parts[0]
		default:
			var err error
			if part, err = p.store.Partition(p.topic, recs[i].Key); err != nil {
				return nil, nil, nil, err
			}
		}
		parts[i] = part
		if _, ok := groups[part]; !ok {
			order = append(order, part)
		}
		groups[part] = append(groups[part], i)
	}
	return parts, order, groups, nil
}

// appendGroups appends the records of each partition in order as one
// batch (the n lines from line first) and returns each record's offset; a
// failed append stops produce with what was appended.
func (p *producer) appendGroups(w *bufio.Writer, recs []storage.Record, first, n int, order []int32, groups map[int32][]int) ([]int64, int) {
	offs := make([]int64, len(recs))
	var done []partialAppend
	for _, part := range order {
		batch := make([]storage.Record, 0, len(groups[part]))
		for _, i := range groups[part] {
			batch = append(batch, recs[i])
		}
		l, err := p.store.Log(p.topic, part)
		var res storage.AppendResult
		if err == nil {
			res, err = l.Append(batch...)
		}
		if err != nil {
			last := first + n - 1
			what := fmt.Sprintf("lines %d-%d", first, last)
			if first == last {
				what = fmt.Sprintf("line %d", first)
			}
			if len(order) > 1 {
				what = fmt.Sprintf("the %d of %s for partition %d", len(batch), what, part)
			}
			return nil, p.stopPartial(w, first, n, done, "append %s: %v", what, err)
		}
		for j, i := range groups[part] {
			offs[i] = res.FirstOffset + int64(j)
		}
		done = append(done, partialAppend{part: part, n: len(batch), from: res.FirstOffset})
	}
	for _, d := range done {
		p.track(d.part, d.from, d.from+int64(d.n)-1)
	}
	return offs, exitOK
}

// partialAppend is the part of a batch that went to one partition before
// another partition's part failed.
type partialAppend struct {
	part int32
	n    int
	from int64
}

func (p *producer) track(part int32, from, to int64) {
	if r, ok := p.ranges[part]; ok {
		r.last = to
		return
	}
	p.ranges[part] = &offsetRange{first: from, last: to}
}

// stop reports an error and what was appended before it, on stderr; it
// returns exit code 1.
func (p *producer) stop(w *bufio.Writer, format string, args ...any) int {
	return p.stopPartial(w, 0, 0, nil, format, args...)
}

// stopPartial is stop when the batch of n lines from line first failed
// after the parts of it in done were appended.
func (p *producer) stopPartial(w *bufio.Writer, first, n int, done []partialAppend, format string, args ...any) int {
	_ = w.Flush() // what was appended is printed before the error
	p.c.warn(format, args...)
	var b strings.Builder
	if p.appended == 0 {
		b.WriteString("no line was appended")
	} else {
		fmt.Fprintf(&b, "appended lines 1-%d (offsets", p.appended)
		parts := make([]int32, 0, len(p.ranges))
		for part := range p.ranges {
			parts = append(parts, part)
		}
		slices.Sort(parts)
		for i, part := range parts {
			if i > 0 {
				b.WriteString(",")
			}
			r := p.ranges[part]
			fmt.Fprintf(&b, " %d-%d of partition %d", r.first, r.last, part)
		}
		b.WriteString(")")
	}
	if len(done) == 0 {
		fmt.Fprintf(&b, "; line %d onward not appended", p.appended+1)
		return p.c.fail("%s", b.String())
	}
	// Part of the failed batch went to other partitions first.
	fmt.Fprintf(&b, "; of lines %d-%d, appended only those for", first, first+n-1)
	for i, d := range done {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " partition %d (%d lines, offsets %d-%d)", d.part, d.n, d.from, d.from+int64(d.n)-1)
	}
	fmt.Fprintf(&b, "; not appended: the other lines of %d-%d and line %d onward", first, first+n-1, first+n)
	return p.c.fail("%s", b.String())
}
