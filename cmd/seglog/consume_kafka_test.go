package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestConsumeGroupJoinsThroughTheBroker(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	addr, _, stderr, stop := serveInProcess(t, "--dir", dir)
	createTopicWith(t, addr, "through", 2)

	// A Kafka client of group g holds both partitions.
	var mu sync.Mutex
	owned := map[int32]bool{}
	track := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range m["through"] {
				if add {
					owned[p] = true
				} else {
					delete(owned, p)
				}
			}
		}
	}
	ownedNow := func() []int32 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(maps.Keys(owned))
	}
	member, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("through"),
		kgo.OnPartitionsAssigned(track(true)), kgo.OnPartitionsRevoked(track(false)), kgo.OnPartitionsLost(track(false)),
		kgo.HeartbeatInterval(50*time.Millisecond))
	require.NoError(t, err)
	defer member.Close()
	require.Eventually(t, func() bool { return len(ownedNow()) == 2 }, 30*time.Second, 10*time.Millisecond)

	// seglog consume --group g joins the same group: one partition each.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, w := io.Pipe()
	var out lines
	go scanInto(r, &out)
	done := make(chan int, 1)
	var cerr lockedBuffer
	go func() {
		done <- runContext(ctx, []string{"consume", "--dir", dir, "--topic", "through", "--group", "g", "--follow", "--format", "%p %v\\n"}, strings.NewReader(""), w, &cerr)
		w.Close()
	}()
	require.Eventually(t, func() bool { return len(ownedNow()) == 1 }, 30*time.Second, 10*time.Millisecond, "consume did not join: %s", cerr.String())
	mine := 1 - ownedNow()[0]

	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer prod.Close()
	for i := range 20 {
		res := prod.ProduceSync(ctx, &kgo.Record{Topic: "through", Partition: int32(i % 2), Value: []byte(fmt.Sprint("v", i))})
		require.NoError(t, res.FirstErr())
	}
	require.Eventually(t, func() bool { return len(out.all()) >= 10 }, 30*time.Second, 10*time.Millisecond)
	cancel()
	code := <-done
	require.Equal(t, exitOK, code, "stderr: %s; stdout: %v", cerr.String(), out.all())
	assert.Contains(t, cerr.String(), "joins through the broker")
	for _, l := range out.all() {
		assert.True(t, strings.HasPrefix(l, fmt.Sprint(mine, " ")), "printed %q of the other member's partition", l)
	}
	assert.Len(t, out.all(), 10)

	// Its commits are the group's, in the data directory's offset store.
	var offs strings.Builder
	require.Equal(t, exitOK, runContext(context.Background(), []string{"offsets", "--dir", dir, "--group", "g", "--json"}, strings.NewReader(""), &offs, io.Discard))
	assert.Contains(t, offs.String(), fmt.Sprintf(`"partition":%d,"committed":10`, mine))

	// Without --follow, alone in its group, it reads both partitions to
	// their end and stops.
	var all strings.Builder
	require.Equal(t, exitOK, runContext(context.Background(), []string{"consume", "--dir", dir, "--topic", "through", "--group", "other", "--format", "%v\\n"}, strings.NewReader(""), &all, io.Discard))
	assert.Len(t, strings.Fields(all.String()), 20)
	require.Equal(t, exitOK, stop(), stderr.String())
}
