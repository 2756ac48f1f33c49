package broker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics counts the requests a Server answered and their latency, per
// API: seglog_broker_requests_total{api,result} (result "ok", or "closed"
// when the request closed its connection) and
// seglog_broker_request_duration_seconds{api}, from the moment the
// request's size was read to the handler's answer (a long-poll fetch's
// wait included; the writing of the response not). It is a
// prometheus.Collector; register it beside metrics.Collector.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics returns empty counters.
func NewMetrics() *Metrics {
	return &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seglog_broker_requests_total",
			Help: "Kafka requests answered by the broker, by API and result.",
		}, []string{"api", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seglog_broker_request_duration_seconds",
			Help:    "Time from a request's arrival to its answer, by API.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18),
		}, []string{"api"}),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.latency.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.latency.Collect(ch)
}

func (m *Metrics) observe(key int16, d time.Duration, err error) {
	api := kmsg.NameForKey(key)
	result := "ok"
	if err != nil {
		result = "closed"
	}
	m.requests.WithLabelValues(api, result).Inc()
	m.latency.WithLabelValues(api).Observe(d.Seconds())
}
