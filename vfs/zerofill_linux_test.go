package vfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// OverwritesSyncCheaply is true on ext4 and XFS and false elsewhere (here
// /dev/shm, a tmpfs, when there is one).
func TestOverwritesSyncCheaply(t *testing.T) {
	for _, dir := range []string{t.TempDir(), "/dev/shm"} {
		var sf unix.Statfs_t
		if err := unix.Statfs(dir, &sf); err != nil {
			continue // no /dev/shm
		}
		want := int64(sf.Type) == unix.EXT4_SUPER_MAGIC || int64(sf.Type) == unix.XFS_SUPER_MAGIC
		d, err := os.MkdirTemp(dir, "zerofill")
		require.NoError(t, err)
		defer os.RemoveAll(d)
		f, err := Default.OpenFile(filepath.Join(d, "f"), os.O_RDWR|os.O_CREATE, DefaultFileMode)
		require.NoError(t, err)
		assert.Equal(t, want, OverwritesSyncCheaply(f), "%s: file system %#x", dir, sf.Type)
		require.NoError(t, f.Close())
	}
}
