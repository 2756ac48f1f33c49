package storage

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A check's momentary shared lock (asking whether a writer holds the
// directory) must not make a writer that opens in that instant fail.
func TestLockWaitsOutAMomentaryProbe(t *testing.T) {
	dir := t.TempDir()
	probe, err := os.Open(dir)
	require.NoError(t, err)
	defer probe.Close()
	require.NoError(t, syscall.Flock(int(probe.Fd()), syscall.LOCK_SH|syscall.LOCK_NB))

	busy := 0
	l, err := lockDirWaiting(dir, time.Minute, func() {
		busy++
		if busy == 1 { // the probe lets go after the writer found it busy
			require.NoError(t, syscall.Flock(int(probe.Fd()), syscall.LOCK_UN))
		}
	})
	require.NoError(t, err)
	defer l.unlock()
	assert.Equal(t, 1, busy, "the writer retried once the probe let go")
}

func TestLockHeldByAWriterIsErrLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDir(dir)
	require.NoError(t, err)
	defer first.unlock()
	_, err = lockDirWaiting(dir, 10*time.Millisecond, nil)
	assert.ErrorIs(t, err, ErrLocked)
}
