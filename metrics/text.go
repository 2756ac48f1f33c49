package metrics

import (
	"errors"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// WriteText collects cs once, through a registry of their own, and writes
// the metrics to w in the Prometheus text format, sorted by name (what a
// scrape of /metrics would return). When collecting fails in part (an
// invalid metric, two collectors with one name) it writes what it gathered
// and returns the error.
func WriteText(w io.Writer, cs ...prometheus.Collector) error {
	reg := prometheus.NewRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	mfs, gerr := reg.Gather()
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return err
		}
	}
	if gerr != nil {
		return errors.Join(errors.New("metrics: gather"), gerr)
	}
	return nil
}
