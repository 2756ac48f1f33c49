package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/bench"
)

// TestBenchWorkloadsFlag runs durable-sync and point-read, chosen with
// --workloads, at small sizes, and checks that the help lists them.
func TestBenchWorkloadsFlag(t *testing.T) {
	r := seglog(t, "", "bench", "--workloads", "durable-sync,point-read", "--dir", t.TempDir(),
		"--log-size", "1MiB", "--duration", "50ms", "--json", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	var rep bench.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	var names []string
	for _, res := range rep.Results {
		names = append(names, res.Name)
		assert.Greater(t, res.Records, int64(0), res.Name)
		assert.NotNil(t, res.Latency, res.Name)
		assert.NotNil(t, res.Baseline, res.Name)
	}
	assert.Equal(t, []string{"point-read", "durable-sync"}, names)
	assert.Len(t, rep.Targets(), 4)

	r = seglog(t, "", "bench", "--workloads", "durable-sync,nope")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `unknown workload "nope"`)

	r = seglog(t, "", "bench", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{"point-read", "durable-sync", "--workloads LIST"} {
		assert.Contains(t, r.stdout, want)
	}
}
