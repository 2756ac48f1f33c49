package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/segment"
)

// Tests with franz-go's client doing what applications do: produce with
// every codec, idempotent retries, consumer groups reading records,
// ListOffsets by time.

func produceAll(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

// consumeN reads n records of topic from offset 0 without a group.
func consumeN(t *testing.T, b *testBroker, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := b.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %d of %d records", len(out), n)
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

func TestKgoProducesAndConsumesWithEveryCodec(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	for _, tt := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			topic := "codec-" + tt.name
			cl := b.client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(tt.codec), kgo.AllowAutoTopicCreation())
			var recs []*kgo.Record
			for i := range 300 {
				recs = append(recs, &kgo.Record{
					Key:     []byte(fmt.Sprint("key-", i)),
					Value:   []byte(fmt.Sprintf("value %d %0100d", i, i)),
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}},
				})
			}
			produceAll(t, cl, recs...)
			got := consumeN(t, b, topic, len(recs))
			require.Len(t, got, len(recs))
			for i, r := range got {
				assert.Equal(t, int64(i), r.Offset)
				assert.Equal(t, recs[i].Key, r.Key)
				assert.Equal(t, recs[i].Value, r.Value)
				assert.Equal(t, recs[i].Headers, r.Headers)
			}
		})
	}
}

// dropProxy forwards connections to a broker and, while drops is
// positive, cuts the connection instead of passing on a produce
// response: the client never hears that its records were written, and
// retries them.
type dropProxy struct {
	ln      net.Listener
	target  string
	drops   atomic.Int32
	dropped atomic.Int32
	wg      sync.WaitGroup
}

func newDropProxy(t *testing.T, ln net.Listener, target string) *dropProxy {
	p := &dropProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		var mu sync.Mutex
		produces := map[int32]bool{} // correlation ids of produce requests
		p.wg.Add(2)
		go func() { // client → broker
			defer p.wg.Done()
			defer s.Close()
			for {
				frame, err := readFrame(c)
				if err != nil {
					return
				}
				if len(frame) >= 12 && binary.BigEndian.Uint16(frame[4:]) == 0 {
					mu.Lock()
					produces[int32(binary.BigEndian.Uint32(frame[8:]))] = true
					mu.Unlock()
				}
				if _, err := s.Write(frame); err != nil {
					return
				}
			}
		}()
		go func() { // broker → client
			defer p.wg.Done()
			defer c.Close()
			for {
				frame, err := readFrame(s)
				if err != nil {
					return
				}
				mu.Lock()
				produce := len(frame) >= 8 && produces[int32(binary.BigEndian.Uint32(frame[4:]))]
				mu.Unlock()
				if produce && p.drops.Add(-1) >= 0 {
					p.dropped.Add(1)
					s.Close()
					return
				}
				if _, err := c.Write(frame); err != nil {
					return
				}
			}
		}()
	}
}

// readFrame reads one size-prefixed frame, the size included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

func TestKgoIdempotentRetriesAreWrittenOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Clients learn the proxy's address from Metadata.
	b := startBroker(t, t.TempDir(), Options{Advertise: ln.Addr().String()})
	proxy := newDropProxy(t, ln, b.addr)
	require.Zero(t, createTopic(t, b, "idem", 1, nil).ErrorCode)
	proxy.drops.Store(3)

	cl, err := kgo.NewClient(kgo.SeedBrokers(proxy.ln.Addr().String()), kgo.DefaultProduceTopic("idem"),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }), kgo.MetadataMinAge(10*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint("idem-", i))})
	}
	for _, r := range recs {
		produceAll(t, cl, r) // one request each: three of them are retried
	}
	require.Equal(t, int32(3), proxy.dropped.Load(), "responses dropped")
	l, err := b.store.Log("idem", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(len(recs)), l.EndOffset(), "every record once")
	got := consumeN(t, b, "idem", len(recs))
	for i, r := range got {
		assert.Equal(t, recs[i].Value, r.Value)
		assert.Equal(t, int64(i), recs[i].Offset, "the retried record's acknowledged offset")
	}
}

func TestKgoGroupConsumersReadEveryRecordOnce(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	require.Zero(t, createTopic(t, b, "t", 4, nil).ErrorCode)
	prod := b.client(kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var want []string
	for i := range 400 {
		want = append(want, fmt.Sprint("r", i))
	}
	read := func(cl *kgo.Client, mu *sync.Mutex, into map[string]int, stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			fs := cl.PollFetches(ctx)
			cancel()
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { into[string(r.Value)]++ })
			mu.Unlock()
		}
	}
	var mu sync.Mutex
	seen := [2]map[string]int{{}, {}}
	var o1, o2 owned
	c1 := groupConsumer(b, kgo.CooperativeStickyBalancer(), &o1)
	c2 := groupConsumer(b, kgo.CooperativeStickyBalancer(), &o2)
	require.Eventually(t, func() bool { return len(o1.get()) == 2 && len(o2.get()) == 2 }, 20*time.Second, 10*time.Millisecond)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range []*kgo.Client{c1, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			read(c, &mu, seen[i], stop)
		}()
	}
	for _, v := range want {
		produceAll(t, prod, &kgo.Record{Value: []byte(v)})
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen[0])+len(seen[1]) == len(want)
	}, 30*time.Second, 10*time.Millisecond)
	close(stop)
	wg.Wait()
	for _, v := range want {
		assert.Equal(t, 1, seen[0][v]+seen[1][v], "record %s", v)
	}
	assert.NotEmpty(t, seen[0])
	assert.NotEmpty(t, seen[1])
}

func TestListOffsetsByTime(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	require.Zero(t, createTopic(t, b, "time", 1, nil).ErrorCode)
	cl := b.client(kgo.DefaultProduceTopic("time"))
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 100 {
		produceAll(t, cl, &kgo.Record{Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	for _, tt := range []struct {
		name       string
		ts         int64
		wantOffset int64
		wantTS     int64
	}{
		{"before every record", base.UnixMilli() - 1, 0, base.UnixMilli()},
		{"exactly a record's time", base.Add(42 * time.Second).UnixMilli(), 42, base.Add(42 * time.Second).UnixMilli()},
		{"between two records", base.Add(42*time.Second + time.Millisecond).UnixMilli(), 43, base.Add(43 * time.Second).UnixMilli()},
		{"after every record", base.Add(time.Hour).UnixMilli(), -1, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "time"
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Timestamp = tt.ts
			rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{p}
			req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
			got := roundTrip[*kmsg.ListOffsetsResponse](t, b.client(), req).Topics[0].Partitions[0]
			require.Zero(t, got.ErrorCode)
			assert.Equal(t, tt.wantOffset, got.Offset)
			assert.Equal(t, tt.wantTS, got.Timestamp)
		})
	}
}
func TestLogAppendTimeTopicStampsRecords(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	got := createTopic(t, b, "stamped", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	require.Zero(t, got.ErrorCode, "%v", got.ErrorMessage)
	before := time.Now().Add(-time.Second).UnixMilli() // the clock's millisecond may lag
	cl := b.client(kgo.DefaultProduceTopic("stamped"))
	produceAll(t, cl, &kgo.Record{Value: []byte("v"), Timestamp: time.UnixMilli(1000)})
	r := consumeN(t, b, "stamped", 1)[0]
	assert.GreaterOrEqual(t, r.Timestamp.UnixMilli(), before, "the broker's append time, not the producer's")
	assert.Equal(t, int8(1), r.Attrs.TimestampType(), "LogAppendTime")

	// The produce answer carries the time it stamped.
	p := produce(t, b.client(), "stamped", -1, map[int32][]byte{0: engineBatch(t, 1, segment.EncodeOptions{})})[0]
	require.Zero(t, p.ErrorCode)
	assert.GreaterOrEqual(t, p.LogAppendTime, before)
	assert.Equal(t, int64(1), p.BaseOffset)
}
