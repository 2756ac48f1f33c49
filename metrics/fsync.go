package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FsyncHistogram is the latency histogram of segment fsyncs,
// seglog_fsync_duration_seconds. Its Observe method is what
// storage.Options.OnFsync takes; it must exist before the store opens its
// logs (see the package doc). It is a prometheus.Collector on its own, for
// logs opened without a Store, and the Collector collects it when
// Options.Fsync names it.
type FsyncHistogram struct {
	h prometheus.Histogram
}

// NewFsyncHistogram returns an empty histogram with the given bucket upper
// bounds in seconds; nil means 15 buckets doubling from 50µs to 0.82s
// (from an fsync on fast flash to a disk that stalls).
func NewFsyncHistogram(buckets []float64) *FsyncHistogram {
	if buckets == nil {
		buckets = prometheus.ExponentialBuckets(50e-6, 2, 15)
	}
	return &FsyncHistogram{h: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "seglog_fsync_duration_seconds",
		Help:    "Latency of fsyncs of segment files, every partition of the store together.",
		Buckets: buckets,
	})}
}

// Observe records one fsync that took d. Pass it as
// storage.Options.OnFsync: it is lock-free (a few atomic adds), as OnFsync
// must be, since appenders waiting for the fsync wait for it too.
func (f *FsyncHistogram) Observe(d time.Duration) { f.h.Observe(d.Seconds()) }

// Describe sends the histogram's descriptor.
func (f *FsyncHistogram) Describe(ch chan<- *prometheus.Desc) { f.h.Describe(ch) }

// Collect sends the histogram.
func (f *FsyncHistogram) Collect(ch chan<- prometheus.Metric) { f.h.Collect(ch) }
