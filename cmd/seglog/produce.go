package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

const produceDesc = `
Read records from stdin, one per line, and append them to a topic. Each line
is a value, or with --key-separator S a key, S, and a value (the first S
splits; a line without S is an error). Only the trailing "\n" is removed:
"\r" and every other byte stay in the value. The topic is created with
--partitions partitions when it does not exist.

Lines are appended in batches of up to --batch lines: a batch closes when
it is full, when --linger has passed since its first line, or (with
--linger 0, the default) as soon as no more input is already waiting.
With --partition P every record goes to P; otherwise a record with a key
goes to hash(key) mod partitions and keyless records go round-robin, one
batch at a time.

For each record, "PARTITION OFFSET" is printed on stdout once it is
appended under the --sync policy: with --sync always, a printed line means
the record is on disk (fsynced). At end of input, or on Ctrl-C, what was
read is appended, the store is flushed and closed cleanly, and the exit
code is 0.`

const produceExample = `
printf 'user1:hello\nuser2:world\n' | seglog produce --dir /var/lib/seglog --topic events --partitions 3 --key-separator : --sync always
seq 1000000 | seglog produce --dir /tmp/data --topic bench --sync none --batch 5000 > /dev/null`

// maxLineBytes is the longest line produce accepts: a batch holds at most
// segment.DefaultMaxBatchBytes.
const maxLineBytes = segment.DefaultMaxBatchBytes - 1024

func parseSync(s string) (storage.SyncPolicy, error) {
	switch s {
	case "none":
		return storage.SyncNever, nil
	case "always":
		return storage.SyncAlways, nil
	case "interval":
		return storage.SyncInterval, nil
	}
	return 0, fmt.Errorf("--sync %q: want none, always or interval", s)
}

func runProduce(e *env, args []string) int {
	c := newCLI(e, "seglog produce", "seglog produce --dir DIR --topic T [flags] < LINES", produceDesc, produceExample)
	dir := c.fs.String("dir", "", "data directory (required; created if needed)")
	topic := c.fs.String("topic", "", "topic (required)")
	partitions := c.fs.Int("partitions", 1, "partitions of the topic when it is created")
	partition := c.fs.Int("partition", -1, "append every record to this partition (-1: by key, round-robin without)")
	keySep := c.fs.String("key-separator", "", "split each line into key and value at the first occurrence of this string")
	syncName := c.fs.String("sync", "none", "durability: none (the OS writes back; flushed at the end), always (fsync before the offset is printed), interval")
	syncEvery := c.fs.Duration("sync-interval", time.Second, "fsync period of --sync interval")
	codecName := c.fs.String("compression", "none", "batch compression: none, gzip, snappy, zstd or s2")
	linger := c.fs.Duration("linger", 0, "wait up to this long for more lines before appending a batch (0: append what is already read)")
	batch := c.fs.Int("batch", 1000, "most lines per batch")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, bad := c.required(pos, "unexpected argument %q: records come from stdin", "dir", *dir, "topic", *topic); bad {
		return code
	}
	switch {
	case *partitions < 1:
		return c.usageErr("--partitions %d: want at least 1", *partitions)
	case *batch < 1:
		return c.usageErr("--batch %d: want at least 1", *batch)
	case *linger < 0:
		return c.usageErr("--linger %v is negative", *linger)
	case c.isSet("key-separator") && *keySep == "":
		return c.usageErr("--key-separator is empty")
	case *syncEvery <= 0:
		return c.usageErr("--sync-interval %v: want more than 0", *syncEvery)
	}
	if err := storage.ValidateTopic(*topic); err != nil {
		return c.usageErr("%v", err)
	}
	policy, err := parseSync(*syncName)
	if err != nil {
		return c.usageErr("%v", err)
	}
	codec, err := segment.ParseCodec(*codecName)
	if err != nil {
		return c.usageErr("--compression %q: want none, gzip, snappy, zstd or s2", *codecName)
	}
	store, code := openStore(c, *dir, true, storage.StoreOptions{Log: storage.Options{Sync: policy, SyncInterval: *syncEvery, Compression: codec}})
	if store == nil {
		return code
	}
	p := &producer{c: c, store: store, topic: *topic, partition: int32(*partition), batch: *batch, linger: *linger}
	if *keySep != "" {
		p.sep = []byte(*keySep)
	}
	code = p.setup(*partitions)
	if code == exitOK {
		ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM)
		code = p.run(ctx, e.stdin, e.stdout)
		stop()
	}
	if err := store.Close(); err != nil {
		return c.fail("close: %v", err)
	}
	return code
}

type producer struct {
	c         *cli
	store     *storage.Store
	topic     string
	partition int32
	sep       []byte
	batch     int
	linger    time.Duration
	log       *storage.Log // with --partition
}

func (p *producer) setup(partitions int) int {
	n, err := p.store.Partitions(p.topic)
	if errors.Is(err, storage.ErrUnknownTopic) {
		if err := p.store.CreateTopic(p.topic, partitions); err != nil {
			return p.c.fail("create topic %s: %v", p.topic, err)
		}
		n = partitions
	} else if err != nil {
		return p.c.fail("%v", err)
	} else if p.c.isSet("partitions") && n != partitions {
		p.c.warn("topic %s exists with %d partitions; --partitions %d is ignored", p.topic, n, partitions)
	}
	if p.partition >= 0 {
		if int(p.partition) >= n {
			return p.c.fail("--partition %d: topic %s has partitions 0 to %d", p.partition, p.topic, n-1)
		}
		l, err := p.store.Log(p.topic, p.partition)
		if err != nil {
			return p.c.fail("%v", err)
		}
		p.log = l
	}
	return exitOK
}

// chunk is a run of lines the reader got without waiting.
type chunk struct {
	lines [][]byte
	first int // line number of lines[0]
	err   error
}

// readLines sends chunks of at most max lines; a chunk ends early when no
// more input is buffered (the next read would block).
func readLines(ctx context.Context, r io.Reader, max int, out chan<- chunk) {
	defer close(out)
	br := bufio.NewReaderSize(r, 256<<10)
	lineNo := 1
	send := func(ch chunk) bool {
		select {
		case out <- ch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		ch := chunk{first: lineNo}
		var arena []byte
		for len(ch.lines) < max {
			line, err := readLine(br, &arena, lineNo)
			if line != nil {
				ch.lines = append(ch.lines, line)
				lineNo++
			}
			if err != nil {
				if err != io.EOF {
					ch.err = err
				}
				if len(ch.lines) > 0 || ch.err != nil {
					send(ch)
				}
				return
			}
			if br.Buffered() == 0 {
				break
			}
		}
		if !send(ch) {
			return
		}
	}
}

// readLine reads one line without its "\n" into arena (a shared backing
// array for the lines of a chunk). It returns io.EOF at the end of input,
// with the last line if it had no "\n".
func readLine(br *bufio.Reader, arena *[]byte, lineNo int) ([]byte, error) {
	start := len(*arena)
	for {
		frag, err := br.ReadSlice('\n')
		if len(*arena)-start+len(frag) > maxLineBytes+1 {
			return nil, fmt.Errorf("stdin line %d is longer than %d bytes", lineNo, maxLineBytes)
		}
		if cap(*arena)-len(*arena) < len(frag) {
			// Start a new arena: earlier lines keep the old one.
			n := make([]byte, len(*arena)-start, max(64<<10, 2*(len(*arena)-start+len(frag))))
			copy(n, (*arena)[start:])
			*arena, start = n, 0
		}
		*arena = append(*arena, frag...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if len(*arena) == start {
				return nil, io.EOF
			}
			return (*arena)[start:len(*arena):len(*arena)], io.EOF
		case err != nil:
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		line := (*arena)[start : len(*arena)-1 : len(*arena)-1]
		return line, nil
	}
}

func (p *producer) run(ctx context.Context, stdin io.Reader, stdout io.Writer) int {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan chunk, 4)
	go readLines(rctx, stdin, p.batch, in)
	w := bufio.NewWriterSize(stdout, 64<<10)
	var pending [][]byte
	pendingFirst := 0
	var readErr error
	eof := false
	var timer *time.Timer
	for !eof && readErr == nil {
		// Wait for the first lines of a batch.
		select {
		case ch, ok := <-in:
			if !ok {
				eof = true
				break
			}
			pending, pendingFirst, readErr = append(pending[:0], ch.lines...), ch.first, ch.err
		case <-ctx.Done():
			eof = true
		}
		// Fill the batch: up to --batch lines or --linger.
		if p.linger > 0 && !eof && readErr == nil && len(pending) < p.batch {
			if timer == nil {
				timer = time.NewTimer(p.linger)
			} else {
				timer.Reset(p.linger)
			}
		fill:
			for len(pending) < p.batch {
				select {
				case ch, ok := <-in:
					if !ok {
						eof = true
						break fill
					}
					pending, readErr = append(pending, ch.lines...), ch.err
					if readErr != nil {
						break fill
					}
				case <-timer.C:
					break fill
				case <-ctx.Done():
					eof = true
					break fill
				}
			}
			timer.Stop()
		}
		for len(pending) > 0 {
			n := min(len(pending), p.batch)
			if code := p.appendLines(w, pending[:n], pendingFirst); code != exitOK {
				return code
			}
			pending, pendingFirst = pending[n:], pendingFirst+n
		}
	}
	if readErr != nil {
		return p.c.fail("%v", readErr)
	}
	if err := w.Flush(); err != nil {
		return p.c.fail("write stdout: %v", err)
	}
	return exitOK
}

// appendLines appends lines as records and prints where each went.
func (p *producer) appendLines(w *bufio.Writer, lines [][]byte, first int) int {
	recs := make([]storage.Record, len(lines))
	for i, line := range lines {
		if p.sep == nil {
			recs[i].Value = line
			continue
		}
		k := bytes.Index(line, p.sep)
		if k < 0 {
			return p.c.fail("stdin line %d has no key separator %q (nothing from this line on was appended)", first+i, p.sep)
		}
		recs[i].Key, recs[i].Value = line[:k], line[k+len(p.sep):]
	}
	var buf []byte
	if p.log != nil {
		res, err := p.log.Append(recs...)
		if err != nil {
			return p.c.fail("append lines %d to %d: %v", first, first+len(lines)-1, err)
		}
		for i := range recs {
			buf = strconv.AppendInt(buf[:0], int64(p.partition), 10)
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, res.FirstOffset+int64(i), 10)
			buf = append(buf, '\n')
			w.Write(buf)
		}
	} else {
		out, err := p.store.Produce(p.topic, recs...)
		if err != nil {
			return p.c.fail("append lines %d to %d: %v", first, first+len(lines)-1, err)
		}
		for _, o := range out {
			buf = strconv.AppendInt(buf[:0], int64(o.Partition), 10)
			buf = append(buf, ' ')
			buf = strconv.AppendInt(buf, o.Offset, 10)
			buf = append(buf, '\n')
			w.Write(buf)
		}
	}
	if err := w.Flush(); err != nil {
		return p.c.fail("write stdout: %v", err)
	}
	return exitOK
}
