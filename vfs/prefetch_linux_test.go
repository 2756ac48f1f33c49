package vfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// resident reports which of the file's pages are in the page cache.
func resident(t *testing.T, path string) []bool {
	t.Helper()
	pages, err := CachedPages(path)
	require.NoError(t, err)
	return pages
}

// evict drops the file's (clean) pages from the page cache.
func evict(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
	for i, in := range resident(t, path) {
		require.False(t, in, "page %d still cached after FADV_DONTNEED", i)
	}
}

// waitResident waits until the pages of [from, to) are cached.
func waitResident(t *testing.T, path string, from, to int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pages := resident(t, path)
		missing := 0
		for _, in := range pages[from:to] {
			if !in {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of pages [%d,%d) not cached 10 s after Prefetch", missing, from, to)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPrefetch: Prefetch brings a whole file, or its two ends, into the
// page cache without a read by the caller; missing files are ignored.
func TestPrefetch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	const pages = 1024
	page := os.Getpagesize()
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, pages*page))
	require.NoError(t, err)
	require.NoError(t, f.Sync()) // clean pages can be dropped
	require.NoError(t, f.Close())

	evict(t, path)
	Prefetch(Default, path, -1, 0)
	waitResident(t, path, 0, pages)

	evict(t, path)
	Prefetch(Default, path, int64(16*page), int64(64*page))
	waitResident(t, path, 0, 16)
	waitResident(t, path, pages-64, pages)

	Prefetch(Default, filepath.Join(t.TempDir(), "missing"), -1, 0)
	evict(t, path)
	Prefetch(readDirOnly{Default}, path, -1, 0) // not the OS file system: nothing
	// A prefetch of another file through the OS file system, asked for
	// after it, is cached: had the first one asked the kernel to read
	// ahead, that read would have been queued before this one's.
	other := filepath.Join(t.TempDir(), "other")
	require.NoError(t, os.WriteFile(other, make([]byte, pages*page), 0o600))
	syncFile(t, other)
	evict(t, other)
	Prefetch(Default, other, -1, 0)
	waitResident(t, other, 0, pages)
	assert.NotContains(t, resident(t, path), true)
}

// syncFile fsyncs the file at path, so that its pages are clean and can
// be evicted.
func syncFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}
