package bench

import (
	"time"
)

// Param is one parameter of a workload, as shown in the report.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Result is what one workload measured.
//
// Throughput counts payload: records, and the bytes of their values and
// keys (MB is 10^6 bytes). Batch headers, record framing and index files
// are overhead that the engine pays out of the same time.
type Result struct {
	Name     string  `json:"name"`     // unique in a report, e.g. "produce-1k"
	Workload string  `json:"workload"` // produce, consume, end-to-end, random-read, point-read, durable, durable-sync, recovery, offsets
	Params   []Param `json:"params,omitempty"`

	Records       int64         `json:"records"`       // records (or operations) done
	Bytes         int64         `json:"payload_bytes"` // payload bytes
	Elapsed       time.Duration `json:"elapsed_ns"`
	RecordsPerSec float64       `json:"records_per_sec"`
	MBPerSec      float64       `json:"mb_per_sec"`

	// Latency is the distribution of one operation, described by
	// LatencyOf ("AppendBatch call", "append to delivery", "Open", ...).
	Latency   *Latency `json:"latency,omitempty"`
	LatencyOf string   `json:"latency_of,omitempty"`

	DiskBytes int64 `json:"disk_bytes,omitempty"`     // file sizes in the workload's directory afterwards
	PeakRSS   int64 `json:"peak_rss_bytes,omitempty"` // process peak RSS while it ran

	// Baseline is the plain-file measurement of the same work in the same
	// run and directory.
	Baseline *Baseline `json:"baseline,omitempty"`

	// Metrics holds workload-specific figures (open_ms, speedup, ...).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Targets []Target           `json:"targets,omitempty"`
	Notes   []string           `json:"notes,omitempty"`
}

// Baseline is what a plain file did with the same work: a sequential
// write (with fsync where the workload fsyncs), a sequential read, or
// random preads, in the same directory and the same run.
type Baseline struct {
	Name      string        `json:"name"`
	Bytes     int64         `json:"bytes"`
	Ops       int64         `json:"ops"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	MBPerSec  float64       `json:"mb_per_sec"`
	OpsPerSec float64       `json:"ops_per_sec"`
	Latency   *Latency      `json:"latency,omitempty"`
	// Ratio is the workload's throughput over the baseline's: 1 means
	// the engine went as fast as the plain file. It compares MB/s when the
	// baseline moves bytes, operations per second otherwise.
	Ratio float64 `json:"ratio"`
}

// Target is one of seglog's performance targets (the figures it is
// designed to reach on a typical server), checked against this run.
type Target struct {
	Name  string `json:"name"`  // what is required
	Value string `json:"value"` // what was measured
	Met   bool   `json:"met"`
}

// AddParam adds a parameter to the result (for workloads defined outside
// this package).
func (r *Result) AddParam(name string, value any) { r.param(name, value) }

// SetMetric sets a workload-specific figure.
func (r *Result) SetMetric(name string, v float64) { r.metric(name, v) }

// Finish fills the rates of the result and of its baseline from their
// counts and elapsed times; a workload calls it last.
func (r *Result) Finish() {
	if r.Baseline != nil {
		r.Baseline.finish()
	}
	r.finish()
}

func (r *Result) param(name string, value any) {
	r.Params = append(r.Params, Param{Name: name, Value: formatParam(value)})
}

func (r *Result) metric(name string, v float64) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	r.Metrics[name] = v
}

func (r *Result) target(name, value string, met bool) {
	r.Targets = append(r.Targets, Target{Name: name, Value: value, Met: met})
}

// finish fills the rates from Records, Bytes and Elapsed.
func (r *Result) finish() {
	if s := r.Elapsed.Seconds(); s > 0 {
		r.RecordsPerSec = float64(r.Records) / s
		r.MBPerSec = float64(r.Bytes) / s / 1e6
	}
	if b := r.Baseline; b != nil {
		switch {
		case b.MBPerSec > 0 && r.MBPerSec > 0:
			b.Ratio = r.MBPerSec / b.MBPerSec
		case b.OpsPerSec > 0:
			b.Ratio = r.RecordsPerSec / b.OpsPerSec
		}
	}
}

func (b *Baseline) finish() {
	if s := b.Elapsed.Seconds(); s > 0 {
		b.MBPerSec = float64(b.Bytes) / s / 1e6
		b.OpsPerSec = float64(b.Ops) / s
	}
}

// Host describes where a report was measured.
type Host struct {
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
	Dir       string `json:"dir"`
	Kernel    string `json:"kernel,omitempty"`
}

// Report is a whole run: every result, in order.
type Report struct {
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Host    Host          `json:"host"`
	Config  Config        `json:"config"`
	Results []Result      `json:"results"`
	Notes   []string      `json:"notes,omitempty"`
}

// Targets lists every target of every result, in order.
func (r *Report) Targets() []Target {
	var ts []Target
	for _, res := range r.Results {
		ts = append(ts, res.Targets...)
	}
	return ts
}
