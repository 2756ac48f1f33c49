package metrics_test

import (
	"log"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/seglog/seglog/metrics"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/retention"
	"github.com/seglog/seglog/storage"
)

// Example wires the fsync histogram into the store's logs before they
// open, registers a Collector over the store, the offsets store and the
// cleaner, and serves /metrics.
func Example() {
	root, _ := os.MkdirTemp("", "seglog-metrics")
	defer os.RemoveAll(root)

	fsync := metrics.NewFsyncHistogram(nil)
	st, err := storage.OpenStore(root, storage.StoreOptions{
		Log: storage.Options{Sync: storage.SyncAlways, OnFsync: fsync.Observe},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ost, err := offsets.Open(offsets.Dir(root), offsets.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer ost.Close()
	cl, err := retention.New(st, ost, retention.Options{Default: retention.Policy{Consumed: true}})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.New(st, metrics.Options{Offsets: ost, Cleaner: cl, Fsync: fsync}))
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// go http.ListenAndServe(":9100", nil)
}
