package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// seglog consume --group through the broker. While seglog serve serves
// Kafka on a data directory it names its listener in the directory
// (kafkaListenerFile); a consume --group over all partitions then joins
// the group through it, as a Kafka consumer of the group (franz-go's
// client), so that the CLI processes and any Kafka clients of the group
// split the partitions between them in one group. A listener file left by
// a broker that was killed names an address nobody answers on: consume
// then splits by leases (consume_leases.go).

// kafkaListenerFile names the Kafka listener of the broker serving the
// data directory, while it serves.
const kafkaListenerFile = "kafka-listener"

// writeKafkaListener records addr for consumers of the directory.
func writeKafkaListener(dir, addr string) error {
	return vfs.WriteFileAtomic(vfs.Default, filepath.Join(dir, kafkaListenerFile), []byte(addr+"\n"), vfs.DefaultFileMode)
}

// removeKafkaListener removes the record when the broker stops.
func removeKafkaListener(dir string) {
	_ = os.Remove(filepath.Join(dir, kafkaListenerFile))
}

// kafkaListener returns the address of the broker serving dir, or "" when
// none answers there.
func kafkaListener(dir string) string {
	b, err := vfs.ReadFile(vfs.Default, filepath.Join(dir, kafkaListenerFile), 1<<10)
	if err != nil {
		return ""
	}
	addr := strings.TrimSpace(string(b))
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	nc.Close()
	return addr
}

// kafkaOffset is --from as a Kafka consumer's reset offset: where a
// partition the group has no commit on starts.
func kafkaOffset(f fromSpec) kgo.Offset {
	switch f.kind {
	case fromLatest:
		return kgo.NewOffset().AtEnd()
	case fromOffset:
		return kgo.NewOffset().At(f.v)
	case fromEnd:
		return kgo.NewOffset().AtEnd().Relative(-f.v)
	case fromTime:
		return kgo.NewOffset().AfterMilli(f.v)
	}
	return kgo.NewOffset().AtStart()
}

// brokerIdle is how long consume without --follow waits for more records
// from the broker before it takes the group's partitions as read to
// their end.
const brokerIdle = 2 * time.Second

// runConsumeKafka consumes topic as a member of group through the broker
// at addr: records printed, then committed (before, with --commit-first).
func runConsumeKafka(c *cli, addr, topic, group string, from fromSpec, commitFirst bool, maxN int64, follow bool, out outputFormat) int {
	ctx, stop := signal.NotifyContext(c.e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kafkaOffset(from)), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return c.fail("consume through the broker at %s: %v", addr, err)
	}
	defer cl.Close() // leaves the group
	fmt.Fprintf(c.e.stderr, "%s: group %s joins through the broker at %s\n", c.name, group, addr)
	cs := &consumer{c: c, topic: topic, group: group, max: maxN, out: out, w: bufio.NewWriterSize(c.e.stdout, 64<<10)}
	defer cs.w.Flush()
	commit := func(recs []*kgo.Record) error {
		// What was printed is committed even when an interrupt comes
		// meanwhile (as consume without a broker does).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := cl.CommitRecords(cctx, recs...); err != nil {
			return fmt.Errorf("commit for group %s: %w", group, err)
		}
		return nil
	}
	for !cs.done() {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if !follow {
			pctx, cancel = context.WithTimeout(ctx, brokerIdle)
		}
		limit := consumeChunk
		if maxN > 0 {
			limit = int(min(int64(limit), maxN-cs.printed))
		}
		fs := cl.PollRecords(pctx, limit)
		cancel()
		if ctx.Err() != nil {
			break
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("%s: %w", storage.PartitionDir(t, p), err)
			}
		})
		if ferr != nil {
			return cs.c.fail("%v", ferr)
		}
		recs := fs.Records()
		if len(recs) == 0 {
			if !follow {
				break // nothing more within brokerIdle: read to the end
			}
			continue
		}
		if commitFirst {
			if err := commit(recs); err != nil {
				return c.fail("%v", err)
			}
		}
		for _, r := range recs {
			rec := storage.Record{Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, segment.RecordHeader{Key: []byte(h.Key), Value: h.Value})
			}
			if err := cs.print(r.Partition, &rec); err != nil {
				return c.fail("write stdout: %v", err)
			}
		}
		if err := cs.w.Flush(); err != nil {
			return c.fail("write stdout: %v", err)
		}
		cs.printed += int64(len(recs))
		if !commitFirst {
			if err := commit(recs); err != nil {
				return c.fail("%v", err)
			}
		}
	}
	return cs.finish(ctx)
}
