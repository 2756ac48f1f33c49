package storage

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/seglog/seglog/vfs"
)

// cleanShutdown is what the log knows of the clean-shutdown marker and
// manifest on disk: a clean Close writes them, so that the next open reads
// no data; the first change after an open removes them, durably. Guarded
// by writeMu.
type cleanShutdown struct {
	removalPending bool      // the marker and manifest are to be removed, durably, before the first change
	current        bool      // the marker and manifest on disk describe the files, unchanged since the open: Close leaves them
	manifest       *manifest // the manifest on disk, as read by the open or written by Close (nil: none known)
	manifestSum    uint64    // the xxhash64 of its bytes
	stamped        bool      // the marker holds marker (see stamp)
	marker         cleanStamp
	stampPending   bool // Close left the marker unstamped: the stamp was not settled (stampAfterClose)
}

// durableMarkerRemovalLocked removes the clean-shutdown marker and the
// manifest, and makes their removal (and a new segment's directory entry)
// durable, before the log's files first change: a crash after the change
// is never taken for a clean shutdown, and no later clean shutdown that
// did not write a manifest can pair its marker with a stale one.
func (l *Log) durableMarkerRemovalLocked() error {
	if !l.clean.removalPending && !l.dirSyncPending {
		return nil
	}
	if l.clean.removalPending {
		for _, name := range []string{cleanShutdownFile, manifestFile} {
			if err := l.opts.FS.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return l.fail(err)
			}
		}
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.clean.removalPending, l.dirSyncPending, l.clean.current = false, false, false
	return nil
}

// stamp records in the clean-shutdown marker of the log in dir its
// stamp, once it is settled (vfs.StatDirStamp), and the manifest's
// checksum, so that the next open can skip the listing. Close calls it
// when c.manifest, on disk, names the log's files. Before it writes, it
// lists the directory and checks that it holds what the manifest names
// and no leftover (another process may have created files while the log
// was open), and that the stamp did not move meanwhile. The write is in
// place and not fsynced: after a power cut the marker holds this stamp,
// an older one or none, and an older one cannot match (the marker is a
// new file at every close that rewrites it, and the directory's durable
// state moved past it otherwise), so the worst is a listing. It returns
// true when the stamp was not settled yet: the caller may try again a
// clock tick later (a Store does, once for all its logs: stampClosed), or
// leave it to the next unchanged Close.
func (c *cleanShutdown) stamp(fsys vfs.FS, dir string) (unsettled bool) {
	s, settled, err := vfs.StatDirStamp(fsys, dir)
	if err != nil || c.manifest == nil {
		return false
	}
	if !settled {
		return true
	}
	want := cleanStamp{Dir: s, Manifest: c.manifestSum}
	if c.stamped && c.marker == want {
		return false
	}
	ls, err := listPartitionDir(fsys, dir, nil)
	if err != nil || len(ls.orphans) > 0 || !slices.Equal(ls.bases, c.manifest.bases()) || !slices.Equal(ls.snapshots, c.manifest.Snapshots) {
		return false
	}
	if again, _, err := vfs.StatDirStamp(fsys, dir); err != nil || again != s {
		return false
	}
	f, err := fsys.OpenFile(filepath.Join(dir, cleanShutdownFile), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return false // gone: the log changed since (another process's)
	}
	_, err = f.Write(encodeCleanStamp(want))
	if cerr := f.Close(); err == nil && cerr == nil {
		c.marker, c.stamped = want, true
	}
	return false
}

// stampAfterClose tries again to stamp the marker of a closed log whose
// Close found the stamp unsettled, and reports whether it still is.
func (l *Log) stampAfterClose() (unsettled bool) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.clean.stampPending {
		l.clean.stampPending = l.clean.stamp(l.opts.FS, l.dir)
	}
	return l.clean.stampPending
}

// stampClosed stamps the markers of closed logs whose Close found the
// stamp unsettled (their last rename was in the current clock tick),
// waiting for the clock once for all of them: the kernel's tick is 1 to
// 10 ms, and most logs closed a while ago by the time the last one is.
func stampClosed(logs []*Log) {
	for wait := 0; ; wait++ {
		pending := logs[:0]
		for _, l := range logs {
			if l.stampAfterClose() {
				pending = append(pending, l)
			}
		}
		if logs = pending; len(logs) == 0 || wait == maxStampWait {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// maxStampWait bounds stampClosed's waiting, in milliseconds.
const maxStampWait = 20
