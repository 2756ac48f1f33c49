package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/seglog/seglog/segment"
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
	out, err := p.store.ProduceTo(p.topic, p.partition, recs...)
	var pe *storage.ProduceError
	if errors.As(err, &pe) {
		last := first + len(lines) - 1
		what := fmt.Sprintf("lines %d-%d", first, last)
		if first == last {
			what = fmt.Sprintf("line %d", first)
		}
		if pe.Records < len(recs) {
			what = fmt.Sprintf("the %d of %s for partition %d", pe.Records, what, pe.Partition)
		}
		return p.stopPartial(w, first, len(lines), pe.Appended, "append %s: %v", what, pe.Err)
	}
	if err != nil {
		return p.stop(w, "%v", err)
	}
	p.appended = first + len(lines) - 1
	var buf []byte
	for _, r := range out {
		p.track(r.Partition, r.Offset)
		buf = strconv.AppendInt(buf[:0], int64(r.Partition), 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, r.Offset, 10)
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
			r, err := segment.DecodeRecordJSON(line)
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

// track notes that a partition took an offset.
func (p *producer) track(part int32, off int64) {
	if r, ok := p.ranges[part]; ok {
		r.last = off
		return
	}
	p.ranges[part] = &offsetRange{first: off, last: off}
}

// stop reports an error and what was appended before it, on stderr; it
// returns exit code 1.
func (p *producer) stop(w *bufio.Writer, format string, args ...any) int {
	return p.stopPartial(w, 0, 0, nil, format, args...)
}

// stopPartial is stop when the batch of n lines from line first failed
// after the parts of it in done were appended.
func (p *producer) stopPartial(w *bufio.Writer, first, n int, done []storage.Appended, format string, args ...any) int {
	_ = w.Flush() // what was appended is printed before the error
	p.c.warn(format, args...)
	var b strings.Builder
	if p.appended == 0 {
		b.WriteString("no line was appended")
	} else {
		fmt.Fprintf(&b, "appended lines 1-%d (offsets", p.appended)
		for i, part := range slices.Sorted(maps.Keys(p.ranges)) {
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
		fmt.Fprintf(&b, " partition %d (%d lines, offsets %d-%d)", d.Partition, d.Records, d.FirstOffset, d.FirstOffset+int64(d.Records)-1)
	}
	fmt.Fprintf(&b, "; not appended: the other lines of %d-%d and line %d onward", first, first+n-1, first+n)
	return p.c.fail("%s", b.String())
}
