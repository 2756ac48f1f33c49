package storage

import (
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenPrefetchesOnlyWhatItReads: an open prefetches the active
// segment's indexes as the clean Close left them (a few entries), not at
// the full size the open then grows them to: that would fill the page
// cache with megabytes of zeros on every open.
func TestOpenPrefetchesOnlyWhatItReads(t *testing.T) {
	dir := t.TempDir()
	l := openFilled(t, dir, Options{}, 1000, 10)
	require.NoError(t, l.Close())
	for range 3 {
		l = openLog(t, dir, Options{})
		for _, suffix := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
			pages, err := vfs.CachedPages(filepath.Join(dir, segment.FileName(0, suffix)))
			require.NoError(t, err)
			require.Greater(t, len(pages), 2000, "the open grew the index to its full size")
			cached := 0
			for _, in := range pages {
				if in {
					cached++
				}
			}
			assert.LessOrEqual(t, cached, 16, "%s: pages of the grown index in the page cache", suffix)
		}
		require.NoError(t, l.Close())
	}
}
