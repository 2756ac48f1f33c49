package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seglog/seglog/consumer"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/spf13/cobra"
)

// outputFormat is how consume prints a record.
type outputFormat struct {
	json    bool
	tokens  []formatToken // a FORMAT string, or --format text as one
	topic   string
	scratch []byte
}

// formatToken is a literal or one % token of a FORMAT string.
type formatToken struct {
	lit  string
	verb byte // 0: lit
}

// parseFormat parses a kcat-style FORMAT string.
func parseFormat(f string) ([]formatToken, error) {
	var toks []formatToken
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			toks = append(toks, formatToken{lit: string(lit)})
			lit = nil
		}
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch {
		case c == '%':
			if i == len(f)-1 {
				return nil, fmt.Errorf("--format %q ends with a lone %%", f)
			}
			i++
			switch v := f[i]; v {
			case '%':
				lit = append(lit, '%')
			case 't', 'p', 'o', 'T', 'k', 'K', 'v', 's', 'S', 'h':
				flush()
				toks = append(toks, formatToken{verb: v})
			default:
				return nil, fmt.Errorf("--format %q: unknown token %%%c (want %%t %%p %%o %%T %%k %%K %%v %%s %%S %%h %%%%)", f, v)
			}
		case c == '\\' && i < len(f)-1:
			u, err := unescape(f[i : i+2])
			if err != nil {
				return nil, err
			}
			lit = append(lit, u...)
			i++
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return toks, nil
}

func consumeCommand(e *env) *cobra.Command {
	var dir, topic, fromStr, group, format, keySep, delim string
	var partition int
	var commitFirst, follow, printKey, printTS, printHeaders bool
	var maxN int64
	cmd := command(e, "consume", "print records of a topic, optionally as a consumer group", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q", "dir", dir, "topic", topic); bad {
			return code
		}
		printKey = printKey || c.isSet("key-separator")
		out := outputFormat{topic: topic}
		sep, err := unescape(keySep)
		if err != nil {
			return c.usageErr("--key-separator %v", err)
		}
		d, err := unescape(delim)
		if err != nil {
			return c.usageErr("--delimiter %v", err)
		}
		switch {
		case format == "json":
			out.json = true
		case format == "text":
		case strings.Contains(format, "%"):
			if out.tokens, err = parseFormat(format); err != nil {
				return c.usageErr("%v", err)
			}
		default:
			return c.usageErr("--format %q: want text, json, or a FORMAT string with %% tokens (see --help)", format)
		}
		switch {
		case maxN < 0:
			return c.usageErr("--max %d is negative", maxN)
		case commitFirst && group == "":
			return c.usageErr("--commit-first needs --group")
		case partition < -1:
			return c.usageErr("--partition %d: want a partition number", partition)
		case format != "text" && (printKey || printTS || printHeaders || c.isSet("delimiter")):
			return c.usageErr("--print-key, --print-timestamp, --print-headers, --key-separator and --delimiter go with --format text")
		case format == "text":
			out.tokens = textFormat(printTS, printHeaders, printKey, sep, d)
		}
		if err := storage.ValidateTopic(topic); err != nil {
			return c.usageErr("%v", err)
		}
		from, err := consumer.ParsePosition(fromStr, time.Now())
		if err != nil {
			return c.usageErr("--from %v", err)
		}
		return runConsume(c, dir, topic, partition, from, group, commitFirst, maxN, follow, out)
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required)")
	f.StringVar(&topic, "topic", "", "topic (required)")
	f.IntVar(&partition, "partition", -1, "read only this partition (-1: all)")
	f.StringVar(&fromStr, "from", "earliest", "where to start: earliest, latest, OFFSET, -N, -DURATION, TIME (see above)")
	f.StringVar(&group, "group", "", "consumer group: start from its committed offsets and commit as records are printed")
	f.BoolVar(&commitFirst, "commit-first", false, "with --group, commit before printing (at most once) instead of after (at least once)")
	f.Int64Var(&maxN, "max", 0, "stop after this many records (0: no limit)")
	f.BoolVar(&follow, "follow", false, "at the end of the log, wait for new records until interrupted (and for the topic, if it does not exist yet)")
	f.StringVar(&format, "format", "text", "text, json, or a FORMAT string like '%p %o %k=%v\\n' (see above)")
	f.BoolVar(&printKey, "print-key", false, "text format: print the key and --key-separator before the value")
	f.BoolVar(&printTS, "print-timestamp", false, "text format: print the timestamp (ms since the epoch) and --key-separator first")
	f.BoolVar(&printHeaders, "print-headers", false, "text format: print the headers (k=v,k=v) and --key-separator before the key")
	f.StringVar(&keySep, "key-separator", "\\t", "text format: what follows the timestamp, headers and key")
	f.StringVar(&delim, "delimiter", "\\n", "text format: what follows each record ('\\0' for NUL)")
	completeTopics(cmd, &dir)
	completeValues(cmd, "format", []string{"text", "json"})
	return cmd
}

func runConsume(c *cli, dir, topic string, partition int, from consumer.Position, group string, commitFirst bool, maxN int64, follow bool, out outputFormat) int {
	e := c.e
	// Read-only: consume changes nothing in the logs and takes no lock,
	// so it can follow a log that a producer process is writing.
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, code := openStoreReadOnly(c, dir)
	if store == nil {
		return code
	}
	if follow {
		if store, code = awaitTopic(ctx, c, store, dir, topic); store == nil {
			return code
		}
	}
	defer store.Close()
	n, code, ok := topicPartitions(c, store, dir, topic)
	if !ok {
		return code
	}
	opts := consumer.Options{Group: group, From: from, Follow: follow, Notify: func(msg string) { c.warn("%s", msg) }}
	if partition >= 0 || group == "" {
		if opts.Partitions, code, ok = partitionsOf(c, topic, n, partition); !ok {
			return code
		}
	}
	cs, err := consumer.Open(store, topic, opts)
	if err != nil {
		return c.fail("%v", err)
	}
	defer cs.Close()
	if addr := cs.Broker(); addr != "" {
		fmt.Fprintf(e.stderr, "%s: group %s joins through the broker at %s\n", c.name, group, addr)
	}
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	defer w.Flush()
	var printed int64
	for maxN == 0 || printed < maxN {
		limit := consumer.MaxPoll
		if maxN > 0 {
			limit = int(min(int64(limit), maxN-printed))
		}
		recs, err := cs.Poll(ctx, limit)
		if err == io.EOF || ctx.Err() != nil {
			break
		}
		if err != nil {
			w.Flush()
			return c.fail("%v", err)
		}
		if commitFirst {
			if err := cs.Commit(recs); err != nil {
				return c.fail("%v", err)
			}
		}
		for i := range recs {
			if err := out.print(w, recs[i].Partition, &recs[i].Record); err != nil {
				return c.fail("write stdout: %v", err)
			}
		}
		if err := w.Flush(); err != nil {
			return c.fail("write stdout: %v", err)
		}
		printed += int64(len(recs))
		if !commitFirst {
			if err := cs.Commit(recs); err != nil {
				return c.fail("%v", err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		return c.fail("write stdout: %v", err)
	}
	if ctx.Err() != nil && group != "" {
		fmt.Fprintf(e.stderr, "%s: interrupted after %d records; committed group %s's positions\n", c.name, printed, group)
	}
	return exitOK
}

// print writes record r of partition p to w.
func (o *outputFormat) print(w *bufio.Writer, p int32, r *storage.Record) error {
	if o.json {
		rj := segment.NewRecordJSON(r, 0)
		rj.Partition = &p
		return writeJSONLine(w, rj)
	}
	b := o.scratch[:0]
	for _, t := range o.tokens {
		switch t.verb {
		case 0:
			b = append(b, t.lit...)
		case 't':
			b = append(b, o.topic...)
		case 'p':
			b = strconv.AppendInt(b, int64(p), 10)
		case 'o':
			b = strconv.AppendInt(b, r.Offset, 10)
		case 'T':
			b = strconv.AppendInt(b, r.Timestamp, 10)
		case 'k':
			b = append(b, r.Key...)
		case 'K':
			b = strconv.AppendInt(b, bytesLen(r.Key), 10)
		case 'v', 's':
			b = append(b, r.Value...)
		case 'S':
			b = strconv.AppendInt(b, bytesLen(r.Value), 10)
		case 'h':
			b = appendHeaders(b, r.Headers)
		}
	}
	o.scratch = b
	_, err := w.Write(b)
	return err
}

// textFormat is --format text as a FORMAT: the timestamp, headers and key
// that the --print-* flags ask for, each followed by sep, then the value
// and delim.
func textFormat(ts, headers, key bool, sep, delim string) []formatToken {
	var toks []formatToken
	for _, f := range []struct {
		on   bool
		verb byte
	}{{ts, 'T'}, {headers, 'h'}, {key, 'k'}} {
		if f.on {
			toks = append(toks, formatToken{verb: f.verb}, formatToken{lit: sep})
		}
	}
	return append(toks, formatToken{verb: 'v'}, formatToken{lit: delim})
}

// bytesLen is len(b), or -1 for nil (a null key or value).
func bytesLen(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}

// appendHeaders appends headers as kcat prints them: k=v,k=v.
func appendHeaders(b []byte, hs []segment.RecordHeader) []byte {
	for i, h := range hs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, h.Key...)
		b = append(b, '=')
		b = append(b, h.Value...)
	}
	return b
}

// topicPoll is how often consume --follow looks for a topic that does not
// exist yet.
const topicPoll = 250 * time.Millisecond

// awaitTopic returns a read-only store of dir that holds topic: store
// itself when it does, else, after saying once that it waits, a store
// opened again every topicPoll until the topic exists (a producer or a
// broker creates it) or ctx ends (then nil and exitOK, as an interrupted
// follow). A reader's store lists the topics when it opens, so seeing a
// new one takes a new store.
func awaitTopic(ctx context.Context, c *cli, store *storage.Store, dir, topic string) (*storage.Store, int) {
	if _, err := store.Partitions(topic); !errors.Is(err, storage.ErrUnknownTopic) {
		return store, exitOK
	}
	c.warn("topic %s does not exist in %s yet: waiting for it", topic, dir)
	t := time.NewTicker(topicPoll)
	defer t.Stop()
	for {
		_ = store.Close()
		select {
		case <-ctx.Done():
			return nil, exitOK
		case <-t.C:
		}
		var code int
		if store, code = openStoreReadOnly(c, dir); store == nil {
			return nil, code
		}
		if _, err := store.Partitions(topic); !errors.Is(err, storage.ErrUnknownTopic) {
			return store, exitOK
		}
	}
}
