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
	codec, err := segment.ParseCodec(o.codecName)
	if err != nil {
		return c.usageErr("--compression %q: want %s", o.codecName, strings.Join(codecNames, ", "))
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
	c         *cli
	store     *storage.Store
	topic     string
	partition int32 // --partition, -1: by key
	sep       []byte
	delim     []byte              // ends each input record
	json      bool                // --format json
	limits    storage.BatchLimits // --batch, --batch-bytes
	linger    time.Duration

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
	_, code, _ := partitionsOf(p.c, p.topic, n, int(p.partition))
	return code
}

// chunk is a run of lines the reader got without waiting (about one
// batch: up to --batch lines, and no line after --batch-bytes), and the
// read error that ended it.
type chunk struct {
	lines [][]byte
	first int // line number of lines[0]
	err   error
}

// readLines sends the lines of stdin in chunks: a chunk ends at the
// --batch count of lines or at the line that reaches --batch-bytes, and
// early when no more input is buffered (the next read would block).
func (p *producer) readLines(ctx context.Context, r io.Reader, out chan<- chunk) {
	defer close(out)
	br := bufio.NewReaderSize(r, 256<<10)
	lineNo := 1 // the next line's number
	for {
		ch := chunk{first: lineNo}
		var arena []byte
		var err error
		size := 0 // the storage.RecordBytes of lines
		for err == nil && len(ch.lines) < p.limits.Records && size < p.limits.Bytes && (len(ch.lines) == 0 || br.Buffered() > 0) {
			var line []byte
			if line, err = readLine(br, &arena, lineNo, p.delim); line != nil {
				ch.lines, lineNo, size = append(ch.lines, line), lineNo+1, size+storage.RecordBytes(len(line))
			}
		}
		if err != io.EOF {
			ch.err = err
		}
		if len(ch.lines) > 0 || ch.err != nil {
			select {
			case out <- ch:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
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

// run appends the lines of stdin in batches of up to --batch lines and
// --batch-bytes bytes: a batch goes when it is full, at the end of input,
// and otherwise when no more input is buffered, or with --linger that long
// after its first line.
func (p *producer) run(ctx context.Context, stdin io.Reader, stdout io.Writer) int {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan chunk, 4)
	go p.readLines(rctx, stdin, in)
	w := bufio.NewWriterSize(stdout, 64<<10)
	var pending [][]byte // the batch: lines from line first, size bytes
	first, size := 1, 0
	flush := func() int {
		if len(pending) == 0 {
			return exitOK
		}
		code := p.appendLines(w, pending, first)
		first, pending, size = first+len(pending), pending[:0], 0
		return code
	}
	timer := time.NewTimer(p.linger)
	timer.Stop()
	for {
		var ch chunk
		ok := true
		select {
		case ch, ok = <-in:
		case <-timer.C:
			if code := flush(); code != exitOK {
				return code
			}
			continue
		case <-ctx.Done():
			ok = false
		}
		for _, line := range ch.lines {
			n := storage.RecordBytes(len(line))
			if !p.limits.Fits(len(pending), size, 1, n) {
				if code := flush(); code != exitOK {
					return code
				}
			}
			if len(pending) == 0 && p.linger > 0 {
				timer.Reset(p.linger)
			}
			pending, size = append(pending, line), size+n
			if len(pending) == p.limits.Records {
				if code := flush(); code != exitOK {
					return code
				}
			}
		}
		if !ok || ch.err != nil || p.linger == 0 {
			if code := flush(); code != exitOK {
				return code
			}
		}
		if ch.err != nil {
			return p.stop(w, "%v", ch.err)
		}
		if !ok {
			break
		}
	}
	if err := w.Flush(); err != nil {
		return p.c.fail("write stdout: %v", err)
	}
	return exitOK
}
