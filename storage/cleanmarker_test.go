package storage

import (
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/vfs/crashfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanMarkerKeptUntilFirstChange: an open that changes nothing leaves
// the clean-shutdown marker and the manifest, so a crash after it (a power
// cut, or the process killed with the active segment's indexes grown to
// their full size) still finds a clean log; the first change removes
// both, durably, before it changes a file, so a crash after it finds an
// unclean log that recovers every record.
func TestCleanMarkerKeptUntilFirstChange(t *testing.T) {
	for _, mode := range []crashfs.Mode{crashfs.Strict, crashfs.Lazy, crashfs.Kill} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := openFilled(t, dir, small(), 100, 5)
			require.NoError(t, l.Close())
			marker, manifest := filepath.Join(dir, cleanShutdownFile), filepath.Join(dir, manifestFile)

			fsys, err := crashfs.New(dir, crashfs.Options{Mode: mode, Seed: 1})
			require.NoError(t, err)
			opts := small()
			opts.FS = fsys
			l = openLog(t, dir, opts)
			require.True(t, l.OpenStats().Clean)
			assert.FileExists(t, marker)
			assert.FileExists(t, manifest)
			assertRecords(t, l, 100)

			fsys, _, err = fsys.Restart(crashfs.Options{Mode: mode, Seed: 2})
			require.NoError(t, err)
			_ = l.Close() // fails: the crash came first; it lets go of the lock
			opts.FS = fsys
			l = openLog(t, dir, opts)
			if mode != crashfs.Lazy {
				assert.True(t, l.OpenStats().Clean, "nothing changed: still clean after the crash")
				assert.True(t, l.OpenStats().FromManifest)
			} // Lazy may keep part of the growth of the active segment's indexes (a size that is no multiple of an entry): damage, recovered
			assertRecords(t, l, 100)

			_, err = l.Append(Record{Value: val(100)})
			require.NoError(t, err)
			assert.NoFileExists(t, marker)
			assert.NoFileExists(t, manifest)

			fsys, _, err = fsys.Restart(crashfs.Options{Mode: mode, Seed: 3})
			require.NoError(t, err)
			_ = l.Close()
			opts.FS = fsys
			l = openLog(t, dir, opts)
			assert.False(t, l.OpenStats().Clean, "the marker's removal was durable before the append")
			assert.GreaterOrEqual(t, readAll(t, l, 0), int64(100))
		})
	}
}
