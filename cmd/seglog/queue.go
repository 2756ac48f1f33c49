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
	"syscall"
	"time"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/spf13/cobra"
)

func queueCommand(e *env) *cobra.Command {
	cmd := command(e, "queue", "put, get and peek items of a Kestrel-style queue", func(c *cli, pos []string) int {
		if len(pos) > 0 {
			return c.usageErr("unknown subcommand %q: want put, get, peek or stats", pos[0])
		}
		return c.usageErr("a subcommand is required: put, get, peek or stats")
	})
	cmd.AddCommand(queuePutCommand(e), queueGetCommand(e), queuePeekCommand(e), queueStatsCommand(e))
	return cmd
}

// withQueue opens queue name in dir, runs fn on it, and closes the queue
// and its stores; a failure to close fails the command. With create, the
// data directory and the queue are created when missing; without, a
// missing queue is an error.
func withQueue(c *cli, dir, name string, create bool, logOpts storage.Options, qopts queue.Options, fn func(*queue.Queue) int) int {
	if err := storage.ValidateTopic(name); err != nil {
		return c.usageErr("--queue: %v", err)
	}
	exists := func(store *storage.Store) error {
		if _, err := store.Partitions(name); !create && errors.Is(err, storage.ErrUnknownTopic) {
			return fmt.Errorf("queue %s does not exist in %s", name, dir)
		}
		return nil
	}
	return withStores(c, dir, create, storage.StoreOptions{Log: logOpts}, exists, func(store *storage.Store, ost *offsets.Store) int {
		q, err := queue.Open(store, ost, name, qopts)
		if err != nil {
			return c.fail("%v", err)
		}
		code := fn(q)
		if err := q.Close(); err != nil && code == exitOK {
			return c.fail("%v", err)
		}
		return code
	})
}

// queuePutBatch caps the lines of one append.
const queuePutBatch = 1000

func queuePutCommand(e *env) *cobra.Command {
	var dir, name, syncName string
	var ttl time.Duration
	cmd := command(e, "put", "append the lines of stdin as items", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q (items come from stdin)", "dir", dir, "queue", name); bad {
			return code
		}
		if ttl < 0 {
			return c.usageErr("--ttl %s is negative", storage.FormatDuration(ttl))
		}
		sync, err := parseSync(syncName)
		if err != nil {
			return c.usageErr("%v", err)
		}
		return withQueue(c, dir, name, true, storage.Options{FS: e.fs, Sync: sync}, queue.Options{SweepInterval: -1}, func(q *queue.Queue) int {
			return putLines(c, q, e.stdin, e.stdout, ttl)
		})
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required; created if needed)")
	f.StringVar(&name, "queue", "", "queue name (required; created if needed)")
	durationFlag(f, &ttl, "ttl", 0, "expire each item this long after it is put (0: never)")
	f.StringVar(&syncName, "sync", "never", "fsync policy: never (the OS writes back; flushed at the end), every-n, interval, always (fsync before the offset is printed)")
	completeValues(cmd, "sync", syncNames)
	return cmd
}

// putLines appends the lines of stdin to q as items that expire after
// ttl, in batches, and prints the offset of each.
func putLines(c *cli, q *queue.Queue, stdin io.Reader, stdout io.Writer, ttl time.Duration) int {
	out := bufio.NewWriter(stdout)
	in := bufio.NewReaderSize(stdin, 64<<10)
	var (
		msgs  []queue.Message
		size  int // the storage.RecordBytes of msgs
		line  int
		first int // the line of msgs[0]
	)
	limits := storage.BatchLimits{Records: queuePutBatch, Bytes: defaultBatchBytes}
	flush := func() error {
		if len(msgs) == 0 {
			return nil
		}
		res, err := q.Append(msgs...)
		if err != nil {
			return fmt.Errorf("append lines %d to %d: %w", first, first+len(msgs)-1, err)
		}
		for off := res.FirstOffset; off <= res.LastOffset; off++ {
			fmt.Fprintln(out, off)
		}
		msgs, size = msgs[:0], 0
		return out.Flush()
	}
	var stopped error // why reading stopped before the end; the lines before are put
	for stopped == nil {
		b, err := in.ReadBytes('\n')
		if len(b) > 0 {
			line++
			b = bytes.TrimSuffix(b, []byte("\n"))
			if len(b) > maxLineBytes {
				stopped = fmt.Errorf("line %d: %d bytes, more than an item can hold (%d); lines before it were put", line, len(b), maxLineBytes)
				break
			}
			n := storage.RecordBytes(len(b))
			if !limits.Fits(len(msgs), size, 1, n) {
				if err := flush(); err != nil {
					return c.fail("%v", err)
				}
			}
			if len(msgs) == 0 {
				first = line
			}
			msgs = append(msgs, queue.Message{Value: b, TTL: ttl})
			size += n
		}
		if err == io.EOF {
			break
		} else if err != nil {
			stopped = fmt.Errorf("read stdin: %v", err)
		}
	}
	if err := flush(); err != nil {
		return c.fail("%v", err)
	}
	if stopped != nil {
		return c.fail("%v", stopped)
	}
	return exitOK
}

func queueGetCommand(e *env) *cobra.Command {
	var dir, name, format string
	var maxN int
	var wait, leaseFor time.Duration
	cmd := command(e, "get", "hand out items and remove them", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q", "dir", dir, "queue", name); bad {
			return code
		}
		switch {
		case maxN < 0:
			return c.usageErr("--max %d is negative", maxN)
		case wait < 0:
			return c.usageErr("--wait %s is negative", storage.FormatDuration(wait))
		case leaseFor <= 0:
			return c.usageErr("--lease %s: want a positive duration", storage.FormatDuration(leaseFor))
		case format != "text" && format != "json":
			return c.usageErr("--format %q: want text or json", format)
		}
		ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		// --wait 0 is a poll: the context has ended, and Open takes what
		// is there.
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		return withQueue(c, dir, name, false, storage.Options{}, queue.Options{LeaseTimeout: leaseFor}, func(q *queue.Queue) int {
			w := bufio.NewWriter(e.stdout)
			for n := 0; maxN == 0 || n < maxN; n++ {
				it, err := q.Open(ctx)
				if err != nil {
					if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
						break
					}
					return c.fail("%v", err)
				}
				if err := printQueueItem(w, &it, format == "json"); err != nil {
					if aerr := q.Abort(it.Lease); aerr != nil {
						return c.fail("write stdout: %v; giving item %d back: %v (it is handed out again after its lease)", err, it.Offset, aerr)
					}
					return c.fail("write stdout: %v (item %d is not removed)", err, it.Offset)
				}
				if err := q.Confirm(it.Lease); err != nil {
					return c.fail("item %d was printed but not removed (it will be handed out again): %v", it.Offset, err)
				}
			}
			return exitOK
		})
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required)")
	f.StringVar(&name, "queue", "", "queue name (required)")
	f.IntVar(&maxN, "max", 1, "hand out at most this many items (0: all there are)")
	durationFlag(f, &wait, "wait", 0, "wait up to this long in all for items to arrive (0: do not wait)")
	durationFlag(f, &leaseFor, "lease", queue.DefaultLeaseTimeout, "lease of each item until it is printed and confirmed")
	f.StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func queuePeekCommand(e *env) *cobra.Command {
	var dir, name, format string
	var maxN int
	cmd := command(e, "peek", "show the items get would hand out next", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q", "dir", dir, "queue", name); bad {
			return code
		}
		switch {
		case maxN < 1:
			return c.usageErr("--max %d: want at least 1", maxN)
		case format != "text" && format != "json":
			return c.usageErr("--format %q: want text or json", format)
		}
		return withQueue(c, dir, name, false, storage.Options{}, queue.Options{SweepInterval: -1}, func(q *queue.Queue) int {
			items, err := q.Peek(maxN)
			if err != nil {
				return c.fail("%v", err)
			}
			w := bufio.NewWriter(e.stdout)
			for i := range items {
				if err := printQueueItem(w, &items[i], format == "json"); err != nil {
					return c.fail("write stdout: %v", err)
				}
			}
			return exitOK
		})
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required)")
	f.StringVar(&name, "queue", "", "queue name (required)")
	f.IntVar(&maxN, "max", 10, "print at most this many items")
	f.StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

type queueStatsRow struct {
	Queue          string `json:"queue"`
	Position       int64  `json:"position"`
	End            int64  `json:"end_offset"`
	Pending        int64  `json:"pending"`
	ConfirmedAbove int64  `json:"confirmed_above"`
}

func queueStatsCommand(e *env) *cobra.Command {
	var dir, name string
	var asJSON bool
	cmd := command(e, "stats", "show queue positions and backlog", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q", "dir", dir); bad {
			return code
		}
		names := []string{name}
		if name == "" {
			code := withStores(c, dir, false, storage.StoreOptions{}, nil, func(store *storage.Store, ost *offsets.Store) int {
				names = queue.List(store, ost)
				return exitOK
			})
			if code != exitOK {
				return code
			}
		}
		var rows []queueStatsRow
		for _, n := range names {
			code := withQueue(c, dir, n, false, storage.Options{}, queue.Options{SweepInterval: -1}, func(q *queue.Queue) int {
				st := q.Stats()
				rows = append(rows, queueStatsRow{Queue: n, Position: st.Head, End: st.End, Pending: st.Pending, ConfirmedAbove: st.ConfirmedAbove})
				return exitOK
			})
			if code != exitOK {
				return code
			}
		}
		return printRows(c, e.stdout, rows, asJSON, true, "QUEUE\tPOSITION\tEND\tPENDING\tCONFIRMED-ABOVE", func(r queueStatsRow) string {
			return fmt.Sprintf("%s\t%d\t%d\t%d\t%d", r.Queue, r.Position, r.End, r.Pending, r.ConfirmedAbove)
		})
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required)")
	f.StringVar(&name, "queue", "", "show only this queue")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per queue per line instead of a table")
	return cmd
}

// queueItemJSON is an item as get and peek --format json print it.
type queueItemJSON struct {
	segment.RecordJSON
	ExpiresAt  *int64 `json:"expires_at"`
	Deliveries int    `json:"deliveries"`
}

// printQueueItem writes an item and flushes w.
func printQueueItem(w *bufio.Writer, it *queue.Item, asJSON bool) error {
	if asJSON {
		rec := segment.Record{Offset: it.Offset, Timestamp: it.Timestamp, Key: it.Key, Value: it.Value, Headers: it.Headers}
		j := queueItemJSON{RecordJSON: segment.NewRecordJSON(&rec, 0), Deliveries: it.Deliveries}
		if !it.ExpiresAt.IsZero() {
			ms := it.ExpiresAt.UnixMilli()
			j.ExpiresAt = &ms
		}
		if err := writeJSONLine(w, j); err != nil {
			return err
		}
	} else {
		w.Write(it.Value)
		w.WriteByte('\n')
	}
	return w.Flush()
}
