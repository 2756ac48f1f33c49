package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// A group through the broker. While a broker serves Kafka on a data
// directory it names its listener in the directory (brokerFile); a
// Consumer of a group over all partitions then joins the group through
// it, as a Kafka consumer of the group (franz-go's client), so that these
// processes and any Kafka clients of the group split the partitions in
// one group. A listener file left by a broker that was killed names an
// address nobody answers on: the Consumer then splits by leases.

// brokerFile names the Kafka listener of the broker serving the data
// directory, while it serves.
const brokerFile = "kafka-listener"

// AnnounceBroker records, in the data directory dir, that a broker serves
// Kafka clients at addr, for the consumers of the directory to join their
// groups through it. A broker calls it once it listens, and
// WithdrawBroker when it stops.
func AnnounceBroker(dir, addr string) error {
	return vfs.WriteFileAtomic(vfs.Default, filepath.Join(dir, brokerFile), []byte(addr+"\n"), vfs.DefaultFileMode)
}

// WithdrawBroker removes what AnnounceBroker recorded.
func WithdrawBroker(dir string) {
	_ = os.Remove(filepath.Join(dir, brokerFile))
}

// BrokerAddr returns the address of the broker serving dir, or "" when
// none answers there.
func BrokerAddr(dir string) string {
	b, err := vfs.ReadFile(vfs.Default, filepath.Join(dir, brokerFile), 1<<10)
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

// brokerIdle is how long Poll without Follow waits for more records from
// the broker before it takes the group's partitions as read to their end.
const brokerIdle = 2 * time.Second

// brokerConsumer is a member of the group through the broker.
type brokerConsumer struct {
	addr string
	cl   *kgo.Client
}

// joinBroker joins opts.Group's consumers of topic through the broker at
// addr.
func joinBroker(addr, topic string, opts Options) (*brokerConsumer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(opts.Group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kafkaOffset(opts.From)), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("consume through the broker at %s: %w", addr, err)
	}
	return &brokerConsumer{addr: addr, cl: cl}, nil
}

// kafkaOffset is a Position as a Kafka consumer's reset offset: where a
// partition the group has no commit on starts.
func kafkaOffset(p Position) kgo.Offset {
	switch p.kind {
	case latest:
		return kgo.NewOffset().AtEnd()
	case atOffset:
		return kgo.NewOffset().At(p.v)
	case fromEnd:
		return kgo.NewOffset().AtEnd().Relative(-p.v)
	case atTime:
		return kgo.NewOffset().AfterMilli(p.v)
	}
	return kgo.NewOffset().AtStart()
}

func (b *brokerConsumer) poll(ctx context.Context, n int, follow bool) ([]Record, error) {
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if !follow {
			pctx, cancel = context.WithTimeout(ctx, brokerIdle)
		}
		fs := b.cl.PollRecords(pctx, n)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("%s: %w", storage.PartitionDir(t, p), err)
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		krecs := fs.Records()
		if len(krecs) == 0 {
			if !follow {
				return nil, io.EOF // nothing more within brokerIdle: read to the end
			}
			continue
		}
		recs := make([]Record, len(krecs))
		for i, r := range krecs {
			rec := storage.Record{Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, segment.RecordHeader{Key: []byte(h.Key), Value: h.Value})
			}
			recs[i] = Record{Partition: r.Partition, Record: rec, kafka: r}
		}
		return recs, nil
	}
}

// commit commits the offset after each partition's last record of recs.
func (b *brokerConsumer) commit(recs []Record) error {
	krecs := make([]*kgo.Record, 0, len(recs))
	for _, r := range recs {
		if r.kafka != nil {
			krecs = append(krecs, r.kafka)
		}
	}
	// What was handled is committed even when an interrupt comes
	// meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.cl.CommitRecords(ctx, krecs...)
}

func (b *brokerConsumer) close() { b.cl.Close() } // leaves the group
