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
	"strings"
	"syscall"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/spf13/cobra"
)

// maxBatchBytes is the largest batch the engine accepts (produce uses the
// storage default limits).
const maxBatchBytes = segment.DefaultMaxBatchBytes

// maxLineBytes is the longest line produce accepts: a batch of that one
// line is at most maxBatchBytes (before compression).
var maxLineBytes = segment.DefaultLimits.MaxRecordBytes()

// defaultBatchBytes is the default --batch-bytes.
const defaultBatchBytes = 1 << 20

// produceFlags are the produce command's flags.
type produceFlags struct {
	dir, topic, keySep, syncName, codecName, format, delim string
	partitions, partition, batch, syncEvery                int
	syncEveryInterval, linger                              time.Duration
	batchBytes                                             int64
}

func produceCommand(e *env) *cobra.Command {
	var o produceFlags
	cmd := command(e, "produce", "append records read from stdin, one per line", func(c *cli, pos []string) int {
		if code, bad := o.check(c, pos); bad {
			return code
		}
		return o.produce(e, c)
	})
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "data directory (required; created if needed)")
	f.StringVar(&o.topic, "topic", "", "topic (required; created if needed)")
	f.IntVar(&o.partitions, "partitions", 1, "partitions of the topic when it is created")
	f.IntVar(&o.partition, "partition", -1, "append every record to this partition (-1: by key, round-robin without)")
	f.StringVar(&o.format, "format", "text", "input format: text or json (one object per line)")
	f.StringVar(&o.keySep, "key-separator", "", "text format: split each line into key and value at the first occurrence of this string")
	f.StringVar(&o.delim, "delimiter", "\\n", "what ends each record of the input ('\\0' for NUL)")
	f.StringVar(&o.syncName, "sync", "never", "fsync policy: never (the OS writes back; flushed at the end), every-n, interval, always (fsync before the offset is printed)")
	f.IntVar(&o.syncEvery, "sync-every", storage.DefaultSyncEveryN, "records between fsyncs of --sync every-n")
	durationFlag(f, &o.syncEveryInterval, "sync-interval", storage.DefaultSyncInterval, "fsync period of --sync interval")
	f.StringVar(&o.codecName, "compression", "none", "batch compression: "+strings.Join(codecNames, ", "))
	durationFlag(f, &o.linger, "linger", 0, "wait up to this long for more lines before appending a batch (0: append what is already read)")
	f.IntVar(&o.batch, "batch", 1000, "most lines per batch")
	sizeFlag(f, &o.batchBytes, "batch-bytes", defaultBatchBytes, "most bytes of input per batch (at most 16MiB)")
	completeTopics(cmd, &o.dir)
	completeValues(cmd, "sync", syncNames)
	completeValues(cmd, "compression", codecNames)
	completeValues(cmd, "format", []string{"text", "json"})
	return cmd
}

// check validates the arguments and the flags whose values need no
// parsing; bad reports a usage error, whose exit code is code.
func (o *produceFlags) check(c *cli, pos []string) (code int, bad bool) {
	if code, bad := c.required(pos, "unexpected argument %q: records come from stdin", "dir", o.dir, "topic", o.topic); bad {
		return code, true
	}
	switch {
	case o.partitions < 1:
		return c.usageErr("--partitions %d: want at least 1", o.partitions), true
	case o.batch < 1:
		return c.usageErr("--batch %d: want at least 1", o.batch), true
	case o.batchBytes < 1:
		return c.usageErr("--batch-bytes %s: want at least 1 byte", storage.FormatSize(o.batchBytes)), true
	case o.batchBytes > maxBatchBytes:
		return c.usageErr("--batch-bytes %s: at most 16MiB, the largest batch the engine accepts", storage.FormatSize(o.batchBytes)), true
	case o.linger < 0:
		return c.usageErr("--linger %s is negative", storage.FormatDuration(o.linger)), true
	case c.isSet("key-separator") && o.keySep == "":
		return c.usageErr("--key-separator is empty"), true
	case o.syncEveryInterval <= 0:
		return c.usageErr("--sync-interval %s: want more than 0", storage.FormatDuration(o.syncEveryInterval)), true
	case o.syncEvery < 1:
		return c.usageErr("--sync-every %d: want at least 1", o.syncEvery), true
	case o.format != "text" && o.format != "json":
		return c.usageErr("--format %q: want text or json", o.format), true
	case o.format == "json" && c.isSet("key-separator"):
		return c.usageErr("--key-separator goes with --format text (a JSON record has its key)"), true
	}
	if err := storage.ValidateTopic(o.topic); err != nil {
		return c.usageErr("%v", err), true
	}
	return 0, false
}

// produce parses the remaining flags, opens the store and appends stdin.
func (o *produceFlags) produce(e *env, c *cli) int {
	policy, err := parseSync(o.syncName)
	if err != nil {
		return c.usageErr("%v", err)
	}
	codec, err := parseCodec(o.codecName)
	if err != nil {
		return c.usageErr("%v", err)
	}
	d, err := unescape(o.delim)
	if err != nil || d == "" {
		return c.usageErr("--delimiter %q: want a string, like '\\n' or '\\0'", o.delim)
	}
	sep, err := unescape(o.keySep)
	if err != nil {
		return c.usageErr("--key-separator %v", err)
	}
	store, code := openStore(c, o.dir, true, storage.StoreOptions{Log: storage.Options{FS: e.fs, Sync: policy, SyncInterval: o.syncEveryInterval, SyncEveryRecords: o.syncEvery, Compression: codec}})
	if store == nil {
		return code
	}
	p := &producer{c: c, store: store, topic: o.topic, partition: int32(o.partition), limits: storage.BatchLimits{Records: o.batch, Bytes: int(o.batchBytes)},
		linger: o.linger, ranges: map[int32]*offsetRange{}, delim: []byte(d), json: o.format == "json"}
	if sep != "" {
		p.sep = []byte(sep)
	}
	code = p.setup(o.partitions)
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
	c          *cli
	store      *storage.Store
	topic      string
	partition  int32 // --partition, -1: by key
	partitions int   // of the topic
	sep        []byte
	delim      []byte              // ends each input record
	json       bool                // --format json
	limits     storage.BatchLimits // --batch, --batch-bytes
	linger     time.Duration

	// What this run appended: every line up to appended (numbered from
	// 1), at these offsets per partition.
	appended int
	ranges   map[int32]*offsetRange
}

// offsetRange is the first and last offset appended to a partition.
type offsetRange struct{ first, last int64 }

func (p *producer) setup(partitions int) int {
	n, err := p.store.Partitions(p.topic)
	if errors.Is(err, storage.ErrUnknownTopic) {
		if err := p.store.CreateTopic(p.topic, partitions, storage.TopicConfig{}); err != nil {
			return p.c.fail("create topic %s: %v", p.topic, err)
		}
		n = partitions
	} else if err != nil {
		return p.c.fail("%v", err)
	} else if p.c.isSet("partitions") && n != partitions {
		p.c.warn("topic %s exists with %s; --partitions %d is ignored", p.topic, plural(int64(n), "partition"), partitions)
	}
	if cfg, err := p.store.TopicConfig(p.topic); err == nil {
		if cfg.Sync != "" && p.c.isSet("sync") {
			p.c.warn("topic %s has its own sync policy (%s): --sync is ignored", p.topic, cfg.Sync)
		}
		if cfg.Compression != "" && p.c.isSet("compression") {
			p.c.warn("topic %s has its own compression (%s): --compression is ignored", p.topic, cfg.Compression)
		}
	}
	p.partitions = n
	if p.partition >= 0 && int(p.partition) >= n {
		return p.c.fail("--partition %d: topic %s has partitions 0 to %d", p.partition, p.topic, n-1)
	}
	return exitOK
}

// chunk is a run of lines the reader got without waiting, at most one
// batch: up to the line cap and the byte cap.
type chunk struct {
	lines [][]byte
	bytes int  // the storage.RecordBytes of lines
	first int  // line number of lines[0]
	full  bool // the next line would pass a cap
	err   error
}

// readLines sends the lines of stdin in chunks, each one batch: it ends
// a chunk when the next line would pass a cap (that line starts the next
// chunk), and early when no more input is buffered (the next read would
// block).
func (p *producer) readLines(ctx context.Context, r io.Reader, out chan<- chunk) {
	defer close(out)
	br := bufio.NewReaderSize(r, 256<<10)
	send := func(ch chunk) bool {
		select {
		case out <- ch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	lineNo := 1     // the next line's number
	var held []byte // a line read that did not fit the chunk before
	for {
		ch := chunk{first: lineNo}
		if held != nil {
			ch = chunk{lines: [][]byte{held}, bytes: storage.RecordBytes(len(held)), first: lineNo - 1}
			held = nil
		}
		var arena []byte
		for {
			if len(ch.lines) == p.limits.Records {
				ch.full = true
				break
			}
			if len(ch.lines) > 0 && br.Buffered() == 0 {
				break
			}
			line, err := readLine(br, &arena, lineNo, p.delim)
			if line != nil {
				lineNo++
				if p.limits.Fits(len(ch.lines), ch.bytes, 1, storage.RecordBytes(len(line))) {
					ch.lines = append(ch.lines, line)
					ch.bytes += storage.RecordBytes(len(line))
				} else {
					held, ch.full = line, true
				}
			}
			if err != nil {
				if err != io.EOF {
					ch.err = err
				}
				if held != nil {
					// The last line starts a chunk of its own, which
					// carries the error.
					last := chunk{lines: [][]byte{held}, bytes: storage.RecordBytes(len(held)), first: lineNo - 1, err: ch.err}
					ch.err = nil
					if send(ch) {
						send(last)
					}
					return
				}
				if len(ch.lines) > 0 || ch.err != nil {
					send(ch)
				}
				return
			}
			if held != nil {
				break
			}
		}
		if !send(ch) {
			return
		}
	}
}

// readLine reads one record, without its delimiter delim, into arena (a
// shared backing array for the lines of a chunk). It returns io.EOF at
// the end of input, with the last record if it had no delimiter.
func readLine(br *bufio.Reader, arena *[]byte, lineNo int, delim []byte) ([]byte, error) {
	start := len(*arena)
	last := delim[len(delim)-1]
	for {
		frag, err := br.ReadSlice(last)
		if len(*arena)-start+len(frag) > maxLineBytes+len(delim) {
			return nil, fmt.Errorf("stdin line %d is longer than %d bytes, the most a record can hold in the largest batch the engine accepts (16MiB)", lineNo, maxLineBytes)
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
		if !bytes.HasSuffix((*arena)[start:], delim) {
			continue // the last byte of a longer delimiter, alone
		}
		end := len(*arena) - len(delim)
		return (*arena)[start:end:end], nil
	}
}

func (p *producer) run(ctx context.Context, stdin io.Reader, stdout io.Writer) int {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan chunk, 4)
	go p.readLines(rctx, stdin, in)
	w := bufio.NewWriterSize(stdout, 64<<10)
	var pending [][]byte
	var carry *chunk // received while filling a batch it did not fit
	var readErr error
	eof := false
	var timer *time.Timer
	for !eof && readErr == nil {
		// The first lines of a batch.
		var ch chunk
		if carry != nil {
			ch, carry = *carry, nil
		} else {
			select {
			case c, ok := <-in:
				if !ok {
					eof = true
				}
				ch = c
			case <-ctx.Done():
				eof = true
			}
		}
		pending, readErr = append(pending[:0], ch.lines...), ch.err
		pendingFirst, pendingBytes := ch.first, ch.bytes
		// With --linger, fill the batch with what arrives until it is full
		// or --linger has passed.
		if p.linger > 0 && !eof && readErr == nil && !ch.full {
			if timer == nil {
				timer = time.NewTimer(p.linger)
			} else {
				timer.Reset(p.linger)
			}
		fill:
			for {
				select {
				case c, ok := <-in:
					if !ok {
						eof = true
						break fill
					}
					if !p.limits.Fits(len(pending), pendingBytes, len(c.lines), c.bytes) {
						carry = &c
						break fill
					}
					pending, pendingBytes, readErr = append(pending, c.lines...), pendingBytes+c.bytes, c.err
					if readErr != nil || c.full {
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
		// pending is one batch: a chunk is, and the fill takes a chunk
		// only when the batch fits it.
		if len(pending) > 0 {
			if code := p.appendLines(w, pending, pendingFirst); code != exitOK {
				return code
			}
		}
	}
	if readErr != nil {
		return p.stop(w, "%v", readErr)
	}
	if err := w.Flush(); err != nil {
		return p.c.fail("write stdout: %v", err)
	}
	return exitOK
}
