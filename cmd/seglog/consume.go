package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

const consumeDesc = `
Print the records of a topic: all partitions in order (partition 0 first),
or only --partition P. Without --follow it stops at the end of the log.

Where to start, per partition:
  --from earliest    the log start (default)
  --from latest      the log end: only records appended from now on
  --from OFFSET      an offset, e.g. 1234
  --from TIMESTAMP   the first record at or after a time, written either as
                     RFC 3339 (2024-05-01T12:00:00Z, 2024-05-01T14:00:00+02:00)
                     or as milliseconds since the Unix epoch with an "ms:"
                     prefix (ms:1714564800000)
With --group G, a partition where G has a committed offset starts there
(--from applies only to partitions without a commit), and the next offset
is committed after the records are printed and flushed (at-least-once: a
crash may print a record again); --commit-first commits before printing
(at-most-once: a crash may skip records). A committed offset below the
log start (retention deleted those records) is reported on stderr and
reset to the start; one past the end is reset to the end.

Output: --format text prints each value as raw bytes and a newline (with
--key-separator S: key, S, value; a null key prints as nothing), the input
format of seglog produce. --format json prints one object per line:
{"partition","offset","timestamp","key","value","headers"}; timestamp is
ms since the epoch; key and value are JSON strings when they are valid
UTF-8, else base64 with "key_encoding"/"value_encoding": "base64"; null is
null; headers is a list of {"key","value"}.

--follow waits for new records until Ctrl-C or SIGTERM, then exits 0. It
reads the logs read-only, without taking the data directory's lock, so it
follows what another process (a running seglog produce, a broker)
appends, also to partitions that held no record when it started. If
following fails (the topic is deleted meanwhile), it says so and exits 1.`

const consumeExample = `
seglog consume --dir /var/lib/seglog --topic events --format json --max 10
seglog consume --dir /var/lib/seglog --topic events --group audit --from ms:1714564800000 --key-separator :
seglog consume --dir /var/lib/seglog --topic events --partition 2 --from 2024-05-01T12:00:00Z --follow`

type fromKind int

const (
	fromEarliest fromKind = iota
	fromLatest
	fromOffset
	fromTime
)

type fromSpec struct {
	kind fromKind
	v    int64
}

func parseFrom(s string) (fromSpec, error) {
	switch s {
	case "earliest":
		return fromSpec{kind: fromEarliest}, nil
	case "latest":
		return fromSpec{kind: fromLatest}, nil
	}
	if ms, ok := strings.CutPrefix(s, "ms:"); ok {
		v, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return fromSpec{}, fmt.Errorf("--from %q: want milliseconds since the epoch after ms:", s)
		}
		return fromSpec{kind: fromTime, v: v}, nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		if v < 0 {
			return fromSpec{}, fmt.Errorf("--from %d: a negative offset", v)
		}
		return fromSpec{kind: fromOffset, v: v}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return fromSpec{kind: fromTime, v: t.UnixMilli()}, nil
	}
	return fromSpec{}, fmt.Errorf("--from %q: want earliest, latest, an offset, an RFC 3339 time or ms:MILLISECONDS", s)
}

// resolve returns the offset where spec starts on l.
func (f fromSpec) resolve(l *storage.Log) (int64, error) {
	switch f.kind {
	case fromLatest:
		return l.EndOffset(), nil
	case fromOffset:
		return f.v, nil
	case fromTime:
		return l.OffsetForTime(f.v)
	}
	return l.StartOffset(), nil
}

func runConsume(e *env, args []string) int {
	c := newCLI(e, "seglog consume", "seglog consume --dir DIR --topic T [flags]", consumeDesc, consumeExample)
	dir := c.fs.String("dir", "", "data directory (required)")
	topic := c.fs.String("topic", "", "topic (required)")
	partition := c.fs.Int("partition", -1, "read only this partition (-1: all)")
	fromStr := c.fs.String("from", "earliest", "where to start: earliest, latest, OFFSET, RFC 3339 TIMESTAMP or ms:MILLISECONDS")
	group := c.fs.String("group", "", "consumer group: start from its committed offsets and commit as records are printed")
	commitFirst := c.fs.Bool("commit-first", false, "with --group, commit before printing (at-most-once) instead of after (at-least-once)")
	maxN := c.fs.Int64("max", 0, "stop after this many records (0: no limit)")
	follow := c.fs.Bool("follow", false, "at the end of the log, wait for new records until interrupted")
	format := c.fs.String("format", "text", "output format: text or json")
	keySep := c.fs.String("key-separator", "", "text format: print the key and this separator before the value")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, bad := c.required(pos, "unexpected argument %q", "dir", *dir, "topic", *topic); bad {
		return code
	}
	switch {
	case *format != "text" && *format != "json":
		return c.usageErr("--format %q: want text or json", *format)
	case *maxN < 0:
		return c.usageErr("--max %d is negative", *maxN)
	case *commitFirst && *group == "":
		return c.usageErr("--commit-first needs --group")
	case *partition < -1:
		return c.usageErr("--partition %d: want a partition number", *partition)
	}
	if err := storage.ValidateTopic(*topic); err != nil {
		return c.usageErr("%v", err)
	}
	from, err := parseFrom(*fromStr)
	if err != nil {
		return c.usageErr("%v", err)
	}
	// Read-only: consume changes nothing in the logs and takes no lock,
	// so it can follow a log that a producer process is writing.
	store, code := openStore(c, *dir, false, storage.StoreOptions{Log: storage.Options{ReadOnly: true}})
	if store == nil {
		return code
	}
	defer store.Close()
	n, code, ok := topicPartitions(c, store, *dir, *topic)
	if !ok {
		return code
	}
	var parts []int32
	if *partition >= 0 {
		if *partition >= n {
			return c.fail("--partition %d: topic %s has partitions 0 to %d", *partition, *topic, n-1)
		}
		parts = []int32{int32(*partition)}
	} else {
		for p := range n {
			parts = append(parts, int32(p))
		}
	}
	var ost *offsets.Store
	if *group != "" {
		if ost, err = openOffsets(*dir); err != nil {
			return c.fail("%v", err)
		}
		defer ost.Close()
	}
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cs := &consumer{c: c, topic: *topic, group: *group, ost: ost, commitFirst: *commitFirst, max: *maxN,
		json: *format == "json", sep: *keySep, w: bufio.NewWriterSize(e.stdout, 64<<10)}
	if *keySep != "" {
		cs.useSep = true
	}
	for _, p := range parts {
		l, err := store.Log(*topic, p)
		if err != nil {
			return c.fail("%v", err)
		}
		start, err := cs.startOffset(l, p, from)
		if err != nil {
			return c.fail("%s: %v", storage.PartitionDir(*topic, p), err)
		}
		cs.parts = append(cs.parts, &partReader{p: p, l: l, r: l.NewReader(start), pos: start, committed: -1})
	}
	return cs.run(ctx, *follow)
}

// openOffsets opens the data directory's consumer offset store.
func openOffsets(dir string) (*offsets.Store, error) {
	st, err := offsets.Open(filepath.Join(dir, "offsets"), offsets.Options{})
	if errors.Is(err, offsets.ErrLocked) {
		return nil, fmt.Errorf("the offset store %s is in use by another process", filepath.Join(dir, "offsets"))
	}
	return st, err
}

type partReader struct {
	p         int32
	l         *storage.Log
	r         *storage.Reader
	pos       int64 // next offset to print
	committed int64 // last offset committed by this run, -1: none
}

type consumer struct {
	c           *cli
	topic       string
	group       string
	ost         *offsets.Store
	commitFirst bool
	max         int64
	json        bool
	sep         string
	useSep      bool
	w           *bufio.Writer
	parts       []*partReader
	printed     int64
}

func (cs *consumer) startOffset(l *storage.Log, p int32, from fromSpec) (int64, error) {
	name := storage.PartitionDir(cs.topic, p)
	start, end := l.StartOffset(), l.EndOffset()
	if cs.ost != nil {
		pos, err := cs.ost.Fetch(cs.group, cs.topic, p)
		switch {
		case err == nil && pos.Offset < start:
			cs.c.warn("group %s: committed offset %d on %s is below the log start %d (retention deleted those records): resetting to %d", cs.group, pos.Offset, name, start, start)
			return start, nil
		case err == nil && pos.Offset > end:
			cs.c.warn("group %s: committed offset %d on %s is past the log end %d: resetting to %d", cs.group, pos.Offset, name, end, end)
			return end, nil
		case err == nil:
			return pos.Offset, nil
		case !errors.Is(err, offsets.ErrNoCommit):
			return 0, err
		}
	}
	off, err := from.resolve(l)
	if err != nil {
		return 0, err
	}
	switch {
	case off < start:
		cs.c.warn("offset %d on %s is below the log start %d: starting at %d", off, name, start, start)
		off = start
	case off > end:
		cs.c.warn("offset %d on %s is past the log end %d: starting at %d", off, name, end, end)
		off = end
	}
	return off, nil
}

const consumeChunk = 500

func (cs *consumer) run(ctx context.Context, follow bool) int {
	defer cs.w.Flush()
	for {
		progressed := false
		for _, pr := range cs.parts {
			for {
				if ctx.Err() != nil || cs.done() {
					return cs.finish(ctx)
				}
				n, err := cs.chunk(pr)
				if err != nil {
					cs.w.Flush()
					return cs.c.fail("%s: %v", storage.PartitionDir(cs.topic, pr.p), err)
				}
				if n == 0 {
					break
				}
				progressed = true
			}
		}
		if progressed {
			continue
		}
		if !follow {
			return cs.finish(ctx)
		}
		if pr, err := waitAny(ctx, cs.parts); err != nil {
			if ctx.Err() != nil {
				return cs.finish(ctx)
			}
			// Following failed (the partition was deleted, a file is
			// unreadable): say so, after committing what was printed.
			code := cs.finish(ctx)
			cs.c.fail("%s: waiting for records: %v", storage.PartitionDir(cs.topic, pr.p), err)
			return max(code, exitFailure)
		}
	}
}

func (cs *consumer) done() bool { return cs.max > 0 && cs.printed >= cs.max }

// finish commits (when interrupted, what was printed) and reports.
func (cs *consumer) finish(ctx context.Context) int {
	if err := cs.w.Flush(); err != nil {
		return cs.c.fail("write stdout: %v", err)
	}
	if ctx.Err() != nil && cs.group != "" {
		fmt.Fprintf(cs.c.e.stderr, "%s: interrupted after %d records; committed group %s's positions\n", cs.c.name, cs.printed, cs.group)
	}
	return exitOK
}

// chunk reads up to consumeChunk records of a partition, prints them and
// commits after them (before them with --commit-first). It returns how
// many it printed.
func (cs *consumer) chunk(pr *partReader) (int, error) {
	limit := consumeChunk
	if cs.max > 0 {
		limit = int(min(int64(limit), cs.max-cs.printed))
	}
	recs := make([]storage.Record, 0, limit)
	for len(recs) < limit && pr.r.Next() {
		r := pr.r.Record()
		cp := storage.Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: cloneBytes(r.Key), Value: cloneBytes(r.Value)}
		for _, h := range r.Headers {
			cp.Headers = append(cp.Headers, segment.RecordHeader{Key: cloneBytes(h.Key), Value: cloneBytes(h.Value)})
		}
		recs = append(recs, cp)
	}
	if err := pr.r.Err(); err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return 0, nil
	}
	next := recs[len(recs)-1].Offset + 1
	if cs.commitFirst {
		if err := cs.commit(pr, next); err != nil {
			return 0, err
		}
	}
	for i := range recs {
		if err := cs.print(pr.p, &recs[i]); err != nil {
			return 0, err
		}
	}
	if err := cs.w.Flush(); err != nil {
		return 0, fmt.Errorf("write stdout: %w", err)
	}
	pr.pos = next
	cs.printed += int64(len(recs))
	if !cs.commitFirst {
		if err := cs.commit(pr, next); err != nil {
			return 0, err
		}
	}
	return len(recs), nil
}

func (cs *consumer) commit(pr *partReader, next int64) error {
	if cs.ost == nil || next == pr.committed {
		return nil
	}
	if err := cs.ost.Commit(cs.group, cs.topic, pr.p, next, ""); err != nil {
		return fmt.Errorf("commit offset %d for group %s: %w", next, cs.group, err)
	}
	pr.committed = next
	return nil
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func (cs *consumer) print(p int32, r *storage.Record) error {
	if cs.json {
		rj := newRecordJSON(r, 0)
		rj.Partition = &p
		return writeJSONLine(cs.w, rj)
	}
	if cs.useSep {
		cs.w.Write(r.Key)
		cs.w.WriteString(cs.sep)
	}
	cs.w.Write(r.Value)
	return cs.w.WriteByte('\n')
}

// waitAny waits until any partition has a record at its position, or ctx
// is done (ctx.Err()), or a wait fails: it returns the partition that
// failed and the error.
func waitAny(ctx context.Context, parts []*partReader) (*partReader, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		pr  *partReader
		err error
	}
	done := make(chan result, len(parts))
	for _, pr := range parts {
		go func() { done <- result{pr, pr.l.Wait(wctx, pr.pos)} }()
	}
	first := <-done
	cancel()
	for range len(parts) - 1 {
		<-done
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return first.pr, first.err
}
