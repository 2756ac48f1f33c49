package brokerbench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fetch workload's own client reads back every record produced,
// from the broker and from kfake alike, and gives up (with an error,
// not a hang) on records that are not there.
func TestFetchRawReadsEveryRecordFromBrokerAndKfake(t *testing.T) {
	const n = 3000
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := startServer(t.TempDir(), 0)
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.close()) }()
	fake, fakeAddr, err := fakeCluster()
	require.NoError(t, err)
	defer fake.Close()

	for _, tc := range []struct {
		name, addr string
	}{{"broker", s.addr}, {"kfake", fakeAddr}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := produceKgo(ctx, tc.addr, 1, n)
			require.NoError(t, err)
			elapsed, err := fetchRaw(ctx, tc.addr, n)
			require.NoError(t, err)
			assert.Positive(t, elapsed)
		})
	}
	t.Run("more records than stored", func(t *testing.T) {
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := fetchRaw(short, s.addr, n+1)
		assert.Error(t, err)
	})
}
