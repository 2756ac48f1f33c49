package kestrelbench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/bench"
)

// TestWorkloadMeasuresBesideItsBaseline runs the kestrel workload briefly:
// both results count operations and latencies over loopback, each beside
// its in-process queue baseline.
func TestWorkloadMeasuresBesideItsBaseline(t *testing.T) {
	g := Group()
	assert.Equal(t, "kestrel", g.Name)
	ws := g.Workloads(bench.Config{Producers: 1, Duration: 50 * time.Millisecond})
	require.Len(t, ws, 1)
	res, err := ws[0].Run(context.Background(), bench.NewEnv(t.TempDir()))
	require.NoError(t, err)
	require.Len(t, res, 2)
	for i, name := range []string{"kestrel-set", "kestrel-get-reliable"} {
		r := res[i]
		assert.Equal(t, name, r.Name)
		assert.Greater(t, r.Records, int64(0), name)
		require.NotNil(t, r.Latency, name)
		assert.Equal(t, r.Records, r.Latency.Count, name)
		require.NotNil(t, r.Baseline, name)
		assert.Greater(t, r.Baseline.Ops, int64(0), name)
	}
}
