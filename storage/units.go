package storage

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The size and duration syntax of topic settings (TopicConfig.Set with
// seglog's names) and of the seglog command's flags.
//
// Sizes: a number of bytes, or a number (decimals allowed) with a unit,
// binary (KiB, MiB, GiB, TiB) or decimal (KB, MB, GB, TB), any case, e.g.
// 1GiB, 64MiB, 512KiB, 1MB, 1048576. A lone K, M or G is refused: it does
// not say which of the two it means.
//
// Durations: Go's time.ParseDuration (ns, us, ms, s, m, h, combined as in
// 1h30m or 500ms) plus d for 24 hours: 7d, 90m, 1d12h, 1.5d. A number
// without a unit other than 0 is refused (is 60 seconds or minutes?).

// sizeUnits are the units ParseSize accepts, longest suffix first.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// errSizeSyntax says what ParseSize accepts.
var errSizeSyntax = errors.New("want a size like 1048576, 512KiB, 64MiB, 1GiB or 1MB")

// ParseSize parses a size in bytes: 1048576, 512KiB, 64MiB, 1.5GiB, 1MB.
// It never panics, whatever the string.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		if v < 0 || v > math.MaxInt64/mult {
			return 0, errSizeSyntax
		}
		return v * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || mult == 1 || f < 0 || math.IsNaN(f) || f*float64(mult) >= math.MaxInt64 {
		return 0, errSizeSyntax
	}
	v := f * float64(mult)
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%s is not a whole number of bytes", s)
	}
	return int64(v), nil
}

// FormatSize prints a size with the largest binary unit that divides it
// (1GiB, 64MiB, 1536B as 1536), so that ParseSize reads it back.
func FormatSize(v int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v >= u.mult && v%u.mult == 0 {
			return strconv.FormatInt(v/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(v, 10)
}

const day = 24 * time.Hour

// errDurationSyntax says what ParseDuration accepts.
var errDurationSyntax = errors.New("want a duration like 500ms, 90m, 1h30m or 7d")

// ParseDuration parses a duration: time.ParseDuration's syntax plus d for
// 24 hours (7d, 1d12h, 1.5d), and 0. It never panics, whatever the
// string.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errDurationSyntax
	}
	neg := false
	if t[0] == '-' || t[0] == '+' {
		neg, t = t[0] == '-', t[1:]
	}
	if t == "" || t[0] == '-' || t[0] == '+' {
		return 0, errDurationSyntax
	}
	if t == "0" {
		return 0, nil
	}
	// Each run of digits and dots followed by "d" is days: turn it into
	// nanoseconds for time.ParseDuration, which sums repeated units.
	var b strings.Builder
	for i := 0; i < len(t); {
		j := i
		for j < len(t) && (t[j] >= '0' && t[j] <= '9' || t[j] == '.') {
			j++
		}
		if j == i {
			// A unit: copy it up to the next number.
			for j < len(t) && !(t[j] >= '0' && t[j] <= '9' || t[j] == '.') {
				j++
			}
			b.WriteString(t[i:j])
			i = j
			continue
		}
		if j < len(t) && t[j] == 'd' {
			f, err := strconv.ParseFloat(t[i:j], 64)
			if err != nil || f*float64(day) > math.MaxInt64 {
				return 0, errDurationSyntax
			}
			fmt.Fprintf(&b, "%dns", int64(f*float64(day)))
			i = j + 1
			continue
		}
		b.WriteString(t[i:j])
		i = j
	}
	d, err := time.ParseDuration(b.String())
	if err != nil {
		return 0, errDurationSyntax
	}
	if neg {
		d = -d
	}
	return d, nil
}

// FormatDuration prints a duration that ParseDuration reads back, with
// days and without zero units: 7d, 1d12h, 1h30m, 500ms, 0.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	days := d / day
	rest := d % day
	s := ""
	if days > 0 {
		s = strconv.FormatInt(int64(days), 10) + "d"
	}
	if rest > 0 {
		r := rest.String()
		// Duration.String writes every unit from the largest down:
		// drop a zero seconds ("1m0s") and then a zero minutes ("1h0m"),
		// never the zero digit of "1m40s".
		if strings.HasSuffix(r, "m0s") {
			r = strings.TrimSuffix(r, "0s")
		}
		if strings.HasSuffix(r, "h0m") {
			r = strings.TrimSuffix(r, "0m")
		}
		s += r
	}
	return sign + s
}
