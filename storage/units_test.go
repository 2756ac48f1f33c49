package storage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSizeReadsUnitsAndFormatReadsBack(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		str  string
	}{
		{"1048576", 1 << 20, "1MiB"},
		{"1MiB", 1 << 20, "1MiB"},
		{"64MiB", 64 << 20, "64MiB"},
		{"512KiB", 512 << 10, "512KiB"},
		{"1GiB", 1 << 30, "1GiB"},
		{"1gib", 1 << 30, "1GiB"},
		{"2TiB", 2 << 40, "2TiB"},
		{"1 MiB", 1 << 20, "1MiB"},
		{"1.5MiB", 3 << 19, "1536KiB"},
		{"100000", 100000, "100000"},
		{"1MB", 1_000_000, "1000000"},
		{"100KB", 100_000, "100000"},
		{"10B", 10, "10"},
		{"0", 0, "0"},
	} {
		got, err := ParseSize(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.str, FormatSize(got), tc.in)
		back, err := ParseSize(FormatSize(got))
		require.NoError(t, err)
		assert.Equal(t, got, back, "FormatSize reads back")
	}
	for _, bad := range []string{"", "MiB", "-1", "-1MiB", "1M", "64K", "1G", "lots", "9999999999GiB", "1.5", "0.1B", "1.0000001KiB", "NaNMiB"} {
		_, err := ParseSize(bad)
		assert.Error(t, err, bad)
	}
}

func TestParseDurationReadsDaysAndFormatReadsBack(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		str  string
	}{
		{"7d", 7 * day, "7d"},
		{"90m", 90 * time.Minute, "1h30m"},
		{"1h30m", 90 * time.Minute, "1h30m"},
		{"500ms", 500 * time.Millisecond, "500ms"},
		{"1d12h", 36 * time.Hour, "1d12h"},
		{"1.5d", 36 * time.Hour, "1d12h"},
		{"168h", 7 * day, "7d"},
		{"2h", 2 * time.Hour, "2h"},
		{"1h0m5s", time.Hour + 5*time.Second, "1h0m5s"},
		{"0", 0, "0"},
		{"-1h", -time.Hour, "-1h"},
		{"30s", 30 * time.Second, "30s"},
		{"0100s", 100 * time.Second, "1m40s"},
		{"1h10m", 70 * time.Minute, "1h10m"},
		{"1d10s", day + 10*time.Second, "1d10s"},
		{"2m0s", 2 * time.Minute, "2m"},
	} {
		got, err := ParseDuration(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.str, FormatDuration(got), tc.in)
		back, err := ParseDuration(FormatDuration(got))
		require.NoError(t, err)
		assert.Equal(t, got, back, "FormatDuration reads back")
	}
	for _, bad := range []string{"", "60", "7", "d", "1w", "1dd", "1.2.3d", "h", "--1h", "99999999999999d"} {
		_, err := ParseDuration(bad)
		assert.Error(t, err, bad)
	}
}

// FuzzParseSizeAndDuration: the size and duration parsers never panic,
// and what they accept their formatters print so that they read it back.
func FuzzParseSizeAndDuration(f *testing.F) {
	for _, s := range []string{"1GiB", "1.5d", "90m", "-1h", "1MB", "0", "1d12h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseSize(s); err == nil {
			back, err := ParseSize(FormatSize(v))
			if err != nil || back != v {
				t.Fatalf("size %q = %d prints %q, reads back %d, %v", s, v, FormatSize(v), back, err)
			}
		}
		if d, err := ParseDuration(s); err == nil {
			back, err := ParseDuration(FormatDuration(d))
			if err != nil || back != d {
				t.Fatalf("duration %q = %v prints %q, reads back %v, %v", s, d, FormatDuration(d), back, err)
			}
		}
	})
}
