package storage

import (
	"testing"

	"github.com/seglog/seglog/vfs/crashfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTruncateMakesEverythingKeptDurable: under SyncNever, with rolled
// segments that no fsync reached yet, a Truncate into the active segment
// or into an older one makes every record it keeps durable before it
// returns (older segments included), so a power cut right after it loses
// none of them, and the recovery point it wrote covers only fsynced bytes.
func TestTruncateMakesEverythingKeptDurable(t *testing.T) {
	cases := []struct {
		name string
		back int64 // how far below the end the truncation cuts
	}{
		{"into the active segment", 2},
		{"into an older segment", 300},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The background flusher of rolled segments races the
			// truncation: several trials give it every chance to lose.
			for trial := 0; trial < 8; trial++ {
				dir := t.TempDir()
				fsys, err := crashfs.New(dir, crashfs.Options{Mode: crashfs.Strict})
				require.NoError(t, err)
				opts := smallOn(fsys)
				opts.Sync = SyncNever
				l, err := Open(dir, opts)
				require.NoError(t, err)
				fill(t, l, 1000, 5)
				segs, err := l.Segments()
				require.NoError(t, err)
				require.Greater(t, len(segs), 3, "the workload rolls")
				cut := l.EndOffset() - tc.back
				require.NoError(t, l.Truncate(cut))
				cut = l.EndOffset()

				fsys.CrashNow()
				_, err = fsys.Crash()
				require.NoError(t, err)
				_ = l.Close() // fails: the power went first

				l = openLog(t, dir, small())
				require.Equal(t, cut, l.EndOffset(), "trial %d: records kept by Truncate were lost", trial)
				assert.Equal(t, cut, readAll(t, l, 0))
				rp, ok, err := ReadCheckpoint(dir, RecoveryPointFile)
				require.NoError(t, err)
				if ok {
					assert.LessOrEqual(t, rp, cut)
				}
				require.NoError(t, l.Close())
			}
		})
	}
}
