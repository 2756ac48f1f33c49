package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/crashchild"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

const crashDirEnv = "SEGLOG_BROKER_CRASH_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
	}
	os.Exit(m.Run())
}

// crashChild serves dir on 127.0.0.1:0, prints "ADDR host:port", and
// serves until it is killed.
func crashChild(dir string) {
	fail := func(what string, err error) {
		fmt.Println("ERROR", what, err)
		os.Exit(3)
	}
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	if err != nil {
		fail("open store", err)
	}
	offs, err := offsets.Open(offsets.Dir(dir), offsets.Options{})
	if err != nil {
		fail("open offsets", err)
	}
	srv, err := New(store, offs, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fail("new", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("listen", err)
	}
	fmt.Println("ADDR", ln.Addr().String())
	fail("serve", srv.Serve(ln))
}

// TestSIGKILLLosesNoAcknowledgedRecord kills a broker with SIGKILL while
// producers send with acks=-1 to a topic that syncs every append, and
// checks after a restart that every acknowledged record is there, once,
// at the offset it was acknowledged with.
func TestSIGKILLLosesNoAcknowledgedRecord(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	require.NoError(t, err)
	require.NoError(t, store.CreateTopic("durable", 2, storage.TopicConfig{Sync: "always"}))
	require.NoError(t, store.Close())

	type acked struct {
		partition int32
		offset    int64
		value     string
	}
	var (
		mu   sync.Mutex
		acks []acked
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	producer := func(addr string, id int) {
		defer wg.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
		if err != nil {
			return
		}
		defer cl.Close()
		for i := 0; ctx.Err() == nil; i++ {
			partition := int32(id % 2)
			value := fmt.Sprintf("p%d-%d", id, i)
			b, err := segment.AppendBatch(nil, []segment.Record{{Value: []byte(value), Timestamp: time.Now().UnixMilli()}}, segment.EncodeOptions{})
			if err != nil {
				return
			}
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = -1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "durable"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = partition, b
			rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
			req.Topics = []kmsg.ProduceRequestTopic{rt}
			resp, err := cl.SeedBrokers()[0].Request(ctx, req)
			if err != nil {
				return // the broker is gone
			}
			p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				return
			}
			mu.Lock()
			acks = append(acks, acked{partition, p.BaseOffset, value})
			mu.Unlock()
		}
	}
	crashchild.Run(t, []string{crashDirEnv + "=" + dir}, 400*time.Millisecond, func(line string) bool {
		addr, ok := strings.CutPrefix(line, "ADDR ")
		if !ok {
			require.NotContains(t, line, "ERROR")
			return false
		}
		for id := range 4 {
			wg.Add(1)
			go producer(addr, id)
		}
		return true
	})
	cancel()
	wg.Wait()
	require.NotEmpty(t, acks, "nothing was acknowledged before the kill")

	// Restarted: every acknowledged record is at its offset, once.
	b := startBroker(t, dir, Options{})
	seen := map[string]int{}
	at := map[string]acked{}
	for p := range int32(2) {
		l, err := b.store.Log("durable", p)
		require.NoError(t, err)
		r := l.NewReader(l.StartOffset())
		for r.Next() {
			v := string(r.Record().Value)
			seen[v]++
			at[v] = acked{p, r.Record().Offset, v}
		}
		require.NoError(t, r.Err())
	}
	for _, a := range acks {
		assert.Equal(t, 1, seen[a.value], "acknowledged record %s", a.value)
		assert.Equal(t, a, at[a.value])
	}
	t.Logf("%d records acknowledged before the kill, all found", len(acks))
}
