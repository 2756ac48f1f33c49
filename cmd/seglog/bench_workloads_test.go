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

// TestBenchKestrelWorkload runs the kestrel group briefly: both results
// count operations and latencies over loopback, each beside its
// in-process queue baseline.
func TestBenchKestrelWorkload(t *testing.T) {
	r := seglog(t, "", "bench", "kestrel", "--dir", t.TempDir(), "--duration", "50ms", "--producers", "2", "--json", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	var rep bench.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Results, 2)
	for i, name := range []string{"kestrel-set", "kestrel-get-reliable"} {
		res := rep.Results[i]
		assert.Equal(t, name, res.Name)
		assert.Equal(t, "kestrel", res.Workload)
		assert.Greater(t, res.Records, int64(0), name)
		require.NotNil(t, res.Latency, name)
		assert.Equal(t, res.Records, res.Latency.Count, name)
		require.NotNil(t, res.Baseline, name)
		assert.Contains(t, res.Baseline.Name, "in-process queue", name)
		assert.Greater(t, res.Baseline.Ops, int64(0), name)
		assert.Greater(t, res.Baseline.Ratio, 0.0, name)
	}
	r = seglog(t, "", "bench", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "kestrel")
}
