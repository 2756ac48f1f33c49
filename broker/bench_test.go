package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// BenchmarkProduce1MiB: one batch of 1,000 records of 1 KiB, appended in
// process (the baseline) and sent as a produce request (acks=1) over
// loopback to the broker, encoded once beforehand: the broker's own cost
// of a produce, without a client library's encoding. "broker" awaits
// each answer before the next request; "broker-5-in-flight" keeps five
// requests unanswered, as kgo does in the broker workload of seglog bench.
func BenchmarkProduce1MiB(b *testing.B) {
	recs := make([]segment.Record, 1000)
	for i := range recs {
		recs[i] = segment.Record{Value: bytes.Repeat([]byte{byte(i)}, 1024), Timestamp: 1_700_000_000_000}
	}
	batch, err := segment.AppendBatch(nil, recs, segment.EncodeOptions{})
	require.NoError(b, err)

	b.Run("append", func(b *testing.B) {
		l, err := storage.Open(b.TempDir(), storage.Options{Sync: storage.SyncNever})
		require.NoError(b, err)
		defer l.Close()
		buf := make([]byte, len(batch))
		b.SetBytes(int64(len(batch)))
		for b.Loop() {
			copy(buf, batch) // as the broker reads a request into its buffer
			if _, err := l.AppendBatch(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	produce := func(inFlight int) func(b *testing.B) {
		return func(b *testing.B) {
			tb := startBroker(b, b.TempDir(), Options{})
			require.NoError(b, tb.store.CreateTopic("bench", 1, storage.TopicConfig{Sync: "never"}))
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(9)
			req.Acks, req.TimeoutMillis = 1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "bench"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = batch
			rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
			req.Topics = []kmsg.ProduceRequestTopic{rt}
			frame := []byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0} // size, key 0, version 9, corr 1, empty client id, no tags
			frame = req.AppendTo(frame)
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
			nc, err := net.Dial("tcp", tb.addr)
			require.NoError(b, err)
			defer nc.Close()
			// The writer keeps inFlight requests unanswered, as a
			// client pipelining its produce requests does; the loop
			// reads the answers.
			slots := make(chan struct{}, inFlight)
			stop := make(chan struct{})
			wrote := make(chan error, 1)
			go func() {
				for {
					select {
					case slots <- struct{}{}:
					case <-stop:
						wrote <- nil
						return
					}
					if _, err := nc.Write(frame); err != nil {
						wrote <- err
						return
					}
				}
			}()
			resp := make([]byte, 1<<10)
			b.SetBytes(int64(len(batch)))
			for b.Loop() {
				if _, err := io.ReadFull(nc, resp[:4]); err != nil {
					b.Fatal(err)
				}
				n := binary.BigEndian.Uint32(resp)
				if _, err := io.ReadFull(nc, resp[:n]); err != nil {
					b.Fatal(err)
				}
				<-slots
			}
			b.StopTimer()
			close(stop)
			nc.Close() // the writer may be in a Write: it fails
			if err := <-wrote; err != nil && !errors.Is(err, net.ErrClosed) {
				b.Fatal(err)
			}
			tb.stop()
		}
	}
	b.Run("broker", produce(1))
	b.Run("broker-5-in-flight", produce(5))
}
