package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openSeconds matches the value of seglog_log_open_seconds, the one
// timing seglog metrics prints.
var openSeconds = regexp.MustCompile(`(?m)^(seglog_log_open_seconds\{[^}]*\}) \S+$`)

// TestMetricsGolden runs seglog metrics on the golden data directory and
// compares what it prints with testdata/metrics.golden (how long each log
// took to open shows as T), and checks that it changed no byte.
func TestMetricsGolden(t *testing.T) {
	data := goldenData(t)
	before := hashTree(t, data)
	out := transcript(t, data, []step{
		run1("metrics", "--dir", data),
		run1("metrics", "--dir", data+"/nope"),
		run1("metrics"),
	})
	out = openSeconds.ReplaceAllString(out, "$1 T")
	checkGolden(t, "metrics", out)
	assert.Equal(t, before, hashTree(t, data), "seglog metrics changed the data directory")
}

// TestMetricsNoOffsetStore prints the store's metrics when no group has
// committed (no offsets directory): no group metrics, exit 0.
func TestMetricsNoOffsetStore(t *testing.T) {
	data := t.TempDir()
	makeLog(t, data, "orders", 1, 1, 3, 1024)
	r := seglog(t, "", "metrics", "--dir", data)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `seglog_log_end_offset{partition="0",topic="orders"} 3`+"\n")
	assert.NotContains(t, r.stdout, "seglog_group_")
	assert.NotContains(t, r.stdout, "seglog_offsets_")
}
