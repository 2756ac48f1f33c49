package offsets

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestConcurrentCommits(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncAlways, SyncInterval, SyncNever} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Sync: policy, SyncInterval: time.Millisecond, CompactBytes: 16 << 10}
			s := openT(t, dir, opts)
			const writers, perWriter = 16, 200
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var readers sync.WaitGroup
			for r := range 2 {
				readers.Add(1)
				go func() {
					defer readers.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						s.MinCommitted("t", int32(r))
						s.Readers("t")
						s.Positions("w0")
						_, _ = s.Fetch("w1", "t", 0)
						s.Stats()
						time.Sleep(50 * time.Microsecond) // leave CPU to the writers
					}
				}()
			}
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					g := fmt.Sprintf("w%d", w)
					for i := 1; i <= perWriter; i++ {
						if i%10 == 0 {
							assert.NoError(t, s.CommitBatch(g, []Commit{{"t", 0, int64(i), ""}, {"t", 1, int64(i), ""}}))
						} else {
							assert.NoError(t, s.Commit(g, "t", int32(i%2), int64(i), "m"))
						}
						if policy == SyncAlways {
							// Durable when it returns, so visible: the
							// fsync leader updates the reads before it
							// wakes the committers it covered.
							pos, err := s.Fetch(g, "t", int32(i%2))
							if assert.NoError(t, err) {
								assert.Equal(t, int64(i), pos.Offset, "read your own durable commit")
							}
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			readers.Wait()
			require.NoError(t, s.Sync()) // reads see durable commits only
			check := func(s *Store) {
				for w := range writers {
					for p := range int32(2) {
						pos, err := s.Fetch(fmt.Sprintf("w%d", w), "t", p)
						require.NoError(t, err)
						assert.Equal(t, int64(perWriter), pos.Offset)
					}
				}
				off, ok := s.MinCommitted("t", 0)
				assert.True(t, ok)
				assert.Equal(t, int64(perWriter), off)
			}
			check(s)
			st := s.Stats()
			assert.Positive(t, st.Compactions)
			if policy == SyncAlways {
				t.Logf("%d records, %d fsyncs", st.Records, st.Syncs)
				assert.Less(t, st.Syncs, st.Records, "concurrent commits share fsyncs")
			}
			require.NoError(t, s.Close())
			s = openT(t, dir, opts)
			check(s)
			require.NoError(t, s.Close())
		})
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, policy := range []SyncPolicy{SyncAlways, SyncInterval, SyncNever} {
		s := openT(t, t.TempDir(), Options{Sync: policy, SyncInterval: time.Millisecond})
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assert.NoError(t, s.Commit("g", "t", int32(i), 1, ""))
			}()
		}
		wg.Wait()
		if policy == SyncInterval {
			// The background syncer has run: Close must stop a worker
			// that is live, not one that never started.
			require.Eventually(t, func() bool { return s.Stats().Syncs > 0 }, 10*time.Second, time.Millisecond)
		}
		require.NoError(t, s.Close())
	}
}

func TestSyncIntervalFlushes(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: SyncInterval, SyncInterval: 5 * time.Millisecond})
	defer s.Close()
	require.NoError(t, s.Commit("g", "t", 0, 1, ""))
	assert.Eventually(t, func() bool { return s.Stats().Syncs > 0 }, 2*time.Second, 5*time.Millisecond)
}
