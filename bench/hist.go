package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: 1 ns to 100 s at 3 significant digits (a recorded
// value is within 0.1% of the value reported back).
const (
	histMin     = 1
	histMax     = int64(100 * time.Second)
	histSigFigs = 3
)

// Histogram records latencies in nanoseconds. It is an HDR histogram:
// constant memory, constant-time Record, percentiles within 0.1%. The
// exact maximum is kept beside it. A Histogram is not safe for concurrent
// use: give each goroutine its own and Merge them.
type Histogram struct {
	h   *hdrhistogram.Histogram
	max time.Duration
	// clamped counts values outside [1 ns, 100 s], recorded at the bound.
	clamped int64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(histMin, histMax, histSigFigs)}
}

// Record adds one latency. Values below 1 ns or above 100 s are recorded
// at the bound (and counted as clamped); the exact maximum is still kept.
func (h *Histogram) Record(d time.Duration) {
	if d > h.max {
		h.max = d
	}
	v := int64(d)
	if v < histMin {
		v, h.clamped = histMin, h.clamped+1
	} else if v > histMax {
		v, h.clamped = histMax, h.clamped+1
	}
	_ = h.h.RecordValue(v) // cannot fail: v is within the bounds
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil {
		return
	}
	h.h.Merge(o.h)
	h.max = max(h.max, o.max)
	h.clamped += o.clamped
}

// Count returns the number of values recorded.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Percentile returns the value at percentile p (0 to 100).
func (h *Histogram) Percentile(p float64) time.Duration {
	return time.Duration(h.h.ValueAtPercentile(p))
}

// Latency summarizes the histogram; nil when it is empty.
func (h *Histogram) Latency() *Latency {
	if h.Count() == 0 {
		return nil
	}
	return &Latency{
		Count: h.Count(),
		Mean:  time.Duration(h.h.Mean()),
		P50:   h.Percentile(50),
		P99:   h.Percentile(99),
		P999:  h.Percentile(99.9),
		Max:   h.max,
	}
}

// Latency is a latency distribution's summary. Durations are in
// nanoseconds in JSON.
type Latency struct {
	Count int64         `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
}
