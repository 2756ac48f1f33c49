package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func formatParam(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case time.Duration:
		return v.String()
	case fmt.Stringer:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

// formatBytes prints a byte count with a binary unit: 512B, 1KiB, 1.5MiB.
func formatBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	f := float64(n)
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	for i, u := range units {
		f /= 1024
		if f < 1024 || i == len(units)-1 {
			s := sig3(f)
			if strings.Contains(s, ".") {
				s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
			}
			return s + u
		}
	}
	return ""
}

// ParseBytes parses a size such as 512MiB, 1GiB, 64M (binary), 100MB
// (decimal) or a plain number of bytes. Units are not case-sensitive.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, suf := range []struct {
		s string
		m float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
	} {
		if len(t) > len(suf.s) && strings.EqualFold(t[len(t)-len(suf.s):], suf.s) {
			t, mult = strings.TrimSpace(t[:len(t)-len(suf.s)]), suf.m
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*mult > 1<<62 {
		return 0, fmt.Errorf("bad size %q (want e.g. 512MiB, 1GiB, 100MB)", s)
	}
	return int64(f * mult), nil
}

// formatRate prints a rate with an SI suffix: 1.23M, 456k, 12.3.
func formatRate(v float64) string {
	switch {
	case v <= 0:
		return "-"
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 2, 64) + "G"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

func formatMB(v float64) string {
	if v <= 0 {
		return "-"
	}
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// formatDuration prints a latency with three significant digits.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		return sig3(float64(d)/1e3) + "µs"
	case d < time.Second:
		return sig3(float64(d)/1e6) + "ms"
	default:
		return sig3(d.Seconds()) + "s"
	}
}

func sig3(f float64) string {
	switch {
	case f >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case f >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'f', 2, 64)
	}
}

func formatPercent(ratio float64) string {
	if ratio <= 0 {
		return "-"
	}
	return strconv.FormatFloat(ratio*100, 'f', 0, 64) + "%"
}

// WriteTable prints the report as a table followed by each result's
// parameters, the targets and the notes.
func (r *Report) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "seglog bench: %s/%s, %d CPUs, %s, dir %s, %s\n\n", r.Host.GOOS, r.Host.GOARCH, r.Host.CPUs, r.Host.GoVersion, r.Host.Dir, r.Elapsed.Round(time.Millisecond))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\trec/s\tMB/s\tbase MB/s\tbase op/s\tvs base\tp50\tp99\tp99.9\tmax\tdisk/payload\tpeak RSS\t")
	for _, res := range r.Results {
		cols := []string{res.Name, formatRate(res.RecordsPerSec), formatMB(res.MBPerSec), "-", "-", "-", "-", "-", "-", "-", "-", "-"}
		if b := res.Baseline; b != nil {
			cols[3], cols[4], cols[5] = formatMB(b.MBPerSec), formatRate(b.OpsPerSec), formatPercent(b.Ratio)
		}
		if l := res.Latency; l != nil {
			cols[6], cols[7], cols[8], cols[9] = formatDuration(l.P50), formatDuration(l.P99), formatDuration(l.P999), formatDuration(l.Max)
		}
		if res.DiskBytes > 0 && res.Bytes > 0 {
			cols[10] = strconv.FormatFloat(float64(res.DiskBytes)/float64(res.Bytes), 'f', 3, 64)
		}
		if res.PeakRSS > 0 {
			cols[11] = formatBytes(res.PeakRSS)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(ew, "\nworkloads:")
	for _, res := range r.Results {
		var ps []string
		for _, p := range res.Params {
			ps = append(ps, p.Name+"="+p.Value)
		}
		line := "  " + res.Name + ": " + strings.Join(ps, " ")
		if res.LatencyOf != "" {
			line += "; latency of " + res.LatencyOf
		}
		if b := res.Baseline; b != nil {
			line += "; baseline " + b.Name
			if b.Latency != nil {
				line += fmt.Sprintf(" (p50 %s, p99 %s)", formatDuration(b.Latency.P50), formatDuration(b.Latency.P99))
			}
		}
		fmt.Fprintln(ew, line)
		for _, n := range res.Notes {
			fmt.Fprintln(ew, "    "+n)
		}
	}
	if ts := r.Targets(); len(ts) > 0 {
		fmt.Fprintln(ew, "\ntargets (storage issue):")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		for _, t := range ts {
			met := "NOT MET"
			if t.Met {
				met = "met"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", met, t.Name, t.Value)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(ew, "\nnotes:")
		for _, n := range r.Notes {
			fmt.Fprintln(ew, "  "+n)
		}
	}
	return ew.err
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
