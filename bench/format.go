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

// formatGrowth prints a byte difference with its sign: +2.5MiB, -12KiB.
func formatGrowth(n int64) string {
	if n < 0 {
		return "-" + formatBytes(-n)
	}
	return "+" + formatBytes(n)
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

// countOf writes n and the noun, plural unless n is 1: "1 segment".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// reportWidth is the most columns a line of the table report takes.
const reportWidth = 100

// wrap writes text in lines of at most reportWidth columns, the first
// starting with first and the others with rest.
func wrap(w io.Writer, first, rest, text string) {
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > reportWidth {
			fmt.Fprintln(w, line)
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, line)
}

// targetsIntro says in user words what the targets are.
const targetsIntro = "targets: figures seglog is designed to reach on a typical server, each met or NOT MET " +
	"with what this run measured. NOT MET on a laptop, a shared VM or with reduced sizes is no error: " +
	"compare vs base, which is this disk in this run. --full uses the sizes they are stated for."

// WriteTable prints the report, at most 100 columns wide: a throughput
// table, a latency table, each result's parameters, the targets and the
// notes.
func (r *Report) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	wrap(ew, "", "  ", fmt.Sprintf("seglog bench: %s/%s, %d CPUs, %s, dir %s, %s", r.Host.GOOS, r.Host.GOARCH, r.Host.CPUs, r.Host.GoVersion, r.Host.Dir, r.Elapsed.Round(time.Millisecond)))
	fmt.Fprintln(ew)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\trec/s\tMB/s\tbase MB/s\tbase op/s\tvs base\tdisk/payload\tpeak RSS\t")
	for _, res := range r.Results {
		cols := []string{res.Name, formatRate(res.RecordsPerSec), formatMB(res.MBPerSec), "-", "-", "-", "-", "-"}
		if b := res.Baseline; b != nil {
			cols[3], cols[4], cols[5] = formatMB(b.MBPerSec), formatRate(b.OpsPerSec), formatPercent(b.Ratio)
		}
		if res.DiskBytes > 0 && res.Bytes > 0 {
			cols[6] = strconv.FormatFloat(float64(res.DiskBytes)/float64(res.Bytes), 'f', 3, 64)
		}
		if res.PeakRSS > 0 {
			cols[7] = formatBytes(res.PeakRSS)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(ew)
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency of one operation\tp50\tp99\tp99.9\tmax\t")
	for _, res := range r.Results {
		if l := res.Latency; l != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", res.Name, formatDuration(l.P50), formatDuration(l.P99), formatDuration(l.P999), formatDuration(l.Max))
		}
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
		line := res.Name + ": " + strings.Join(ps, " ")
		if res.LatencyOf != "" {
			line += "; latency of " + res.LatencyOf
		}
		if b := res.Baseline; b != nil {
			line += "; baseline " + b.Name
			if b.Latency != nil {
				line += fmt.Sprintf(" (p50 %s, p99 %s)", formatDuration(b.Latency.P50), formatDuration(b.Latency.P99))
			}
		}
		wrap(ew, "  ", "      ", line)
		for _, n := range res.Notes {
			wrap(ew, "    ", "      ", n)
		}
	}
	if ts := r.Targets(); len(ts) > 0 {
		fmt.Fprintln(ew)
		wrap(ew, "", "  ", targetsIntro)
		for _, t := range ts {
			met := "NOT MET"
			if t.Met {
				met = "met    "
			}
			wrap(ew, "  "+met+"  ", "           ", t.Name+" (measured "+t.Value+")")
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(ew, "\nnotes:")
		for _, n := range r.Notes {
			wrap(ew, "  ", "    ", n)
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
