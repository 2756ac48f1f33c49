package vfs

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// settledStamp waits until dir's stamp is settled and returns it.
func settledStamp(t *testing.T, dir string) DirStamp {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		s, settled, err := StatDirStamp(Default, dir)
		require.NoError(t, err)
		if settled {
			return s
		}
		require.True(t, time.Now().Before(deadline), "the stamp of %s did not settle in a second", dir)
		time.Sleep(time.Millisecond)
	}
}

// TestDirStampMovesWithEveryEntryChange: once settled, a stamp changes with
// every creation, removal and rename in the directory, and with a change
// of its times; writing into a file (not an entry change) leaves it.
func TestDirStampMovesWithEveryEntryChange(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	require.NoError(t, os.WriteFile(a, []byte("x"), 0o644))
	for _, tc := range []struct {
		name    string
		change  func() error
		changed bool
	}{
		{"nothing", func() error { return nil }, false},
		{"write into a file", func() error { return os.WriteFile(a, []byte("more"), 0o644) }, false},
		{"create", func() error { return os.WriteFile(filepath.Join(dir, "b"), nil, 0o644) }, true},
		{"rename", func() error { return os.Rename(filepath.Join(dir, "b"), filepath.Join(dir, "c")) }, true},
		{"remove", func() error { return os.Remove(filepath.Join(dir, "c")) }, true},
		{"set the directory's times back", func() error {
			old := time.Now().Add(-time.Hour)
			return os.Chtimes(dir, old, old)
		}, true},
		{"mkdir inside", func() error { return os.Mkdir(filepath.Join(dir, "sub"), 0o755) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := settledStamp(t, dir)
			require.NoError(t, tc.change())
			after, _, err := StatDirStamp(Default, dir)
			require.NoError(t, err)
			if tc.changed {
				assert.NotEqual(t, before, after)
			} else {
				assert.Equal(t, before, after)
			}
		})
	}
}

// TestDirStampOfACopy: a directory put in place of another, with the same
// entries and times, has another stamp (another inode).
func TestDirStampOfACopy(t *testing.T) {
	root := t.TempDir()
	dir, tmp := filepath.Join(root, "d"), filepath.Join(root, "d.new")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.Mkdir(tmp, 0o755))
	before := settledStamp(t, dir)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Rename(tmp, dir))
	after, _, err := StatDirStamp(Default, dir)
	require.NoError(t, err)
	assert.NotEqual(t, before, after)
}

// TestDirStampRefused: no stamp for a file, a missing path, or through a
// file system other than the OS's.
func TestDirStampRefused(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	_, _, err := StatDirStamp(Default, f)
	assert.ErrorIs(t, err, ErrNoDirStamp)
	_, _, err = StatDirStamp(Default, filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, _, err = StatDirStamp(wrappedFS{Default}, dir)
	assert.ErrorIs(t, err, ErrNoDirStamp)
}

// wrappedFS is a file system that is not the OS's (as a test's fault
// injection is).
type wrappedFS struct{ FS }

// TestDirStampNamesMountAndBoot: a stamp names the boot (the kernel's
// boot ID) and the mount (its unique ID), so that a file system repaired
// offline (unmounted, then mounted again) never matches a stamp taken
// before.
func TestDirStampNamesMountAndBoot(t *testing.T) {
	dir := t.TempDir()
	s, _, err := StatDirStamp(Default, dir)
	require.NoError(t, err)
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	assert.Equal(t, strings.ReplaceAll(strings.TrimSpace(string(b)), "-", ""), hex.EncodeToString(s.Boot[:]))
	assert.NotZero(t, s.Mount)
	other, _, err := StatDirStamp(Default, t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, s.Mount, other.Mount, "the same mount")
	assert.Equal(t, s.Boot, other.Boot)
}
