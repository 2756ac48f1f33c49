package main

import (
	"testing"

	"github.com/seglog/seglog/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnescapeAndPlural(t *testing.T) {
	for in, want := range map[string]string{
		`\n`: "\n", `\0`: "\x00", `\t`: "\t", `\r\n`: "\r\n", `a\\b`: `a\b`, `\x1e`: "\x1e", `plain`: "plain", `\q`: `\q`, `end\`: `end\`,
	} {
		got, err := unescape(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{`\x`, `\x1`, `\xZZ`} {
		_, err := unescape(bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, "1 segment", plural(1, "segment"))
	assert.Equal(t, "0 segments", plural(0, "segment"))
	assert.Equal(t, "2 batches", plural(2, "batch"))
	assert.Equal(t, "3 entries", plural(3, "entry"))
	assert.Equal(t, "1 entry", plural(1, "entry"))
}

// FuzzParseUnits: the size and duration parsers never panic, and what
// they accept their formatters print so that they read it back.
func FuzzParseUnits(f *testing.F) {
	for _, s := range []string{"1GiB", "1.5d", "90m", "-1h", "1MB", "0", `\x1`, "1d12h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := storage.ParseSize(s); err == nil {
			back, err := storage.ParseSize(storage.FormatSize(v))
			if err != nil || back != v {
				t.Fatalf("size %q = %d prints %q, reads back %d, %v", s, v, storage.FormatSize(v), back, err)
			}
		}
		if d, err := storage.ParseDuration(s); err == nil {
			back, err := storage.ParseDuration(storage.FormatDuration(d))
			if err != nil || back != d {
				t.Fatalf("duration %q = %v prints %q, reads back %v, %v", s, d, storage.FormatDuration(d), back, err)
			}
		}
		_, _ = unescape(s)
		_, _ = parseFormat(s)
	})
}
