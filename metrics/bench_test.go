package metrics_test

import (
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seglog/seglog/metrics"
	"github.com/seglog/seglog/storage"
)

// BenchmarkScrape1000 is one scrape of a store with 1,000 open partitions
// (one record each), beside the cost of calling Log.Stats on each
// directly, in the same run:
//
//   - LogStats: Log.Stats of each of the 1,000 logs (the floor);
//   - Collect: Collector.Collect, its metrics drained from the channel
//     (OpenPartitions, Stats and OpenStats of each, building the metrics);
//   - Gather: a registry's Gather (Collect plus sorting into metric
//     families), what promhttp does before encoding;
//   - WriteText: WriteText to io.Discard (Gather plus the text format),
//     what seglog metrics does.
func BenchmarkScrape1000(b *testing.B) {
	const n = 1000
	st, err := storage.OpenStore(b.TempDir(), storage.StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateTopic("t", n, storage.TopicConfig{}); err != nil {
		b.Fatal(err)
	}
	logs := make([]*storage.Log, n)
	for p := range logs {
		l, err := st.Log("t", int32(p))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(storage.Record{Value: []byte("v")}); err != nil {
			b.Fatal(err)
		}
		logs[p] = l
	}
	c := metrics.New(st, metrics.Options{Fsync: metrics.NewFsyncHistogram(nil)})

	b.Run("LogStats", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range logs {
				if _, err := l.Stats(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Collect", func(b *testing.B) {
		b.ReportAllocs()
		ch := make(chan prometheus.Metric, 256)
		done := make(chan int)
		for b.Loop() {
			go func() {
				k := 0
				for range ch {
					k++
				}
				done <- k
			}()
			c.Collect(ch)
			close(ch)
			if k := <-done; k < 16*n {
				b.Fatalf("%d metrics", k)
			}
			ch = make(chan prometheus.Metric, 256)
		}
	})
	b.Run("Gather", func(b *testing.B) {
		b.ReportAllocs()
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteText", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := metrics.WriteText(io.Discard, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
