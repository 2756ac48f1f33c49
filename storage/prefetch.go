package storage

import (
	"path/filepath"
	"sync"

	"github.com/seglog/seglog/internal/vfs"
	"github.com/seglog/seglog/segment"
)

// prefetchTail is how much of the end of the active segment's .log an
// open prefetches: its tail is verified from the last index entry (at most
// IndexIntervalBytes and one batch before the end).
const prefetchTail = 256 << 10

// prefetch starts the kernel reading, in the background, what an open of
// the log reads after the listing: the manifest and checkpoint files, the
// newest producer snapshot, the active segment's indexes and the two ends
// of its .log (its first batch's timestamp, its tail). After a cold start
// each is a disk round trip, read one after another; prefetched, they are
// read together while the open goes on. On a warm page cache it costs a
// few system calls, made in a goroutine beside the open. The returned
// function waits for it: the open calls it before it returns.
func (l *Log) prefetch(active int64) (wait func()) {
	if l.opts.FS != vfs.Default {
		return func() {} // only the OS file system has a page cache to fill
	}
	whole := []string{manifestFile, recoveryPointFile, logStartOffsetFile, leaderEpochFile, highWatermarkFile,
		segment.FileName(active, segment.IndexSuffix), segment.FileName(active, segment.TimeIndexSuffix)}
	if n := len(l.snapshots); n > 0 {
		whole = append(whole, segment.FileName(l.snapshots[n-1], snapshotSuffix))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		vfs.Prefetch(l.opts.FS, filepath.Join(l.dir, segment.FileName(active, segment.LogSuffix)), 64<<10, prefetchTail)
		for _, name := range whole {
			vfs.Prefetch(l.opts.FS, filepath.Join(l.dir, name), -1, 0)
		}
	})
	return wg.Wait
}
