package queue_test

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/storage"
)

// benchQueue fills queue "jobs" in a new data directory with n items of
// 100 bytes and opens it with the offsets store under sync.
func benchQueue(b *testing.B, n int, sync offsets.SyncPolicy) (*queue.Queue, *storage.Log) {
	b.Helper()
	dir := b.TempDir()
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	require.NoError(b, err)
	b.Cleanup(func() { store.Close() })
	ost, err := offsets.Open(filepath.Join(dir, "offsets"), offsets.Options{Sync: sync})
	require.NoError(b, err)
	b.Cleanup(func() { ost.Close() })
	q, err := queue.Open(store, ost, "jobs", queue.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { q.Close() })
	value := bytes.Repeat([]byte("v"), 100)
	msgs := make([]queue.Message, 0, 1000)
	for i := 0; i < n; i++ {
		msgs = append(msgs, queue.Message{Value: value})
		if len(msgs) == cap(msgs) || i == n-1 {
			_, err := q.Append(msgs...)
			require.NoError(b, err)
			msgs = msgs[:0]
		}
	}
	l, err := store.Log("jobs", 0)
	require.NoError(b, err)
	return q, l
}

// BenchmarkQueue measures items handed out and finished per second, beside
// the baseline of a plain storage.Reader reading the same kind of log in
// the same run. "never" and "always" are the offsets store's sync policy:
// with always, every Confirm (and Get) waits for an fsync of the offsets
// journal, shared by concurrent consumers.
func BenchmarkQueue(b *testing.B) {
	b.Run("baseline=reader", func(b *testing.B) {
		_, l := benchQueue(b, b.N, offsets.SyncNever)
		b.ReportAllocs()
		b.ResetTimer()
		r := l.NewReader(0)
		n := 0
		for r.Next() {
			n++
		}
		require.NoError(b, r.Err())
		require.Equal(b, b.N, n)
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
	})
	for _, sc := range []struct {
		name string
		sync offsets.SyncPolicy
	}{{"never", offsets.SyncNever}, {"always", offsets.SyncAlways}} {
		b.Run("get/sync="+sc.name, func(b *testing.B) {
			q, _ := benchQueue(b, b.N, sc.sync)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := q.Get(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
		b.Run("open+confirm/sync="+sc.name, func(b *testing.B) {
			q, _ := benchQueue(b, b.N, sc.sync)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				it, err := q.Open(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if err := q.Confirm(it.Lease); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
	// Eight consumers: their confirms share fsyncs.
	b.Run("open+confirm/sync=always/consumers=8", func(b *testing.B) {
		q, _ := benchQueue(b, b.N, offsets.SyncAlways)
		b.ReportAllocs()
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				it, err := q.Open(context.Background())
				if err != nil {
					b.Error(err)
					return
				}
				if err := q.Confirm(it.Lease); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		st := q.Stats()
		b.ReportMetric(float64(st.Confirmed)/float64(max(1, st.Commits)), "confirms/commit")
	})
}
