package vfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RealPath resolves as the kernel does: through a link, ".." is the
// parent of where the link leads; relative paths start from the physical
// working directory even when $PWD names it through a link.
func TestRealPath(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	real := filepath.Join(root, "data", "orders-0")
	require.NoError(t, os.MkdirAll(real, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "elsewhere"), 0o755))
	link := filepath.Join(root, "elsewhere", "current")
	require.NoError(t, os.Symlink(real, link))

	t.Chdir(link) // $PWD is the link
	for _, tc := range []struct{ path, want string }{
		{".", real},
		{"..", filepath.Join(root, "data")},
		{"../orders-0", real},
		{link, real},
		{link + "/..", filepath.Join(root, "data")},
		{real, real},
	} {
		got, err := RealPath(tc.path)
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.want, got, tc.path)
	}
	_, err = RealPath(filepath.Join(root, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
