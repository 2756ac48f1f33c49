package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/seglog/seglog/internal/vfs"
	"github.com/seglog/seglog/segment"
)

// Log is one partition: an ordered list of segments, the last of which is
// active (appended to). See the package doc for the concurrency and
// durability rules.
type Log struct {
	dir  string
	opts Options

	// writeMu serializes writers: appends, rolls, truncation, deletion
	// from the front, and Close. Helpers that need it end in Locked.
	writeMu sync.Mutex
	// Guarded by writeMu:
	sinceSync            int                // records appended since the last fsync (SyncEveryN)
	pendingDelete        []*segment.Segment // segments removed from the list whose files remain
	markerRemovalPending bool               // the clean-shutdown marker's removal is not yet fsynced
	dirSyncPending       bool               // a new segment's directory entry is not yet fsynced
	parentSyncPending    bool               // a new log directory's entry in its parent is not yet fsynced

	// ckptMu serializes writes of recovery-point and high-watermark.
	ckptMu       sync.Mutex
	checkpointed int64 // the offset last written to recovery-point; guarded by ckptMu

	// failedErr is set after an fsync error: writes refuse from then on.
	failedErr atomic.Pointer[error]

	// Published state, read without locks.
	segs    atomic.Pointer[[]*segment.Segment] // immutable snapshot, sorted by base
	start   atomic.Int64
	end     atomic.Int64
	flushed atomic.Int64 // every offset below it is fsynced
	closed  atomic.Bool

	// Tail waiters: notify is closed and replaced when the end advances
	// and someone is waiting.
	waiters atomic.Int64
	notify  atomic.Pointer[chan struct{}]

	// Group commit: one fsync at a time; the others wait for it.
	syncMu   sync.Mutex // guards syncing
	syncCond *sync.Cond
	syncing  bool

	appending atomic.Int64 // appenders between entering append and releasing writeMu
	truncGen  atomic.Int64 // incremented by every Truncate

	lock *dirLock // exclusive flock on dir, unless a Store holds its root's

	// Background interval flusher.
	stop chan struct{}
	wg   sync.WaitGroup

	// Replication state, guarded by writeMu (epochs also by epochMu for
	// readers of the cache).
	producers  *producerState
	snapshots  []int64 // offsets of the producer snapshot files, sorted
	epochMu    sync.Mutex
	epochs     *epochCache
	stampEpoch int32 // the epoch SetLeaderEpoch stamps on appends; -1: none
	// epochsDirty: the cache in memory moved its start past the file's.
	epochsDirty bool
	// truncationPending is the end of a truncation that a crash
	// interrupted, found at open; -1: none. Guarded by writeMu.
	truncationPending int64
	hw                atomic.Int64
	// hwCheckpointed is the high watermark last written to its file.
	hwCheckpointed atomic.Int64

	// Open statistics, for tests and the recovery benchmark.
	openStats OpenStats
}

// OpenStats describes what Open had to do.
type OpenStats struct {
	Clean            bool  // the log was closed cleanly
	Segments         int   // segments found
	RecoveredSegs    int   // segments rescanned
	RecoveredBytes   int64 // bytes rescanned
	TruncatedBytes   int64 // bytes cut at the first invalid batch
	DeletedSegments  int   // segments deleted after the first invalid batch
	RemovedLeftovers int   // stale temporary or orphaned index files removed
	FromManifest     bool  // the segment list came from the clean-close manifest
}

// Open opens (creating if needed) the partition log in dir.
func Open(dir string, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, stop: make(chan struct{}), stampEpoch: -1, truncationPending: -1, producers: newProducerState(), epochs: &epochCache{}}
	l.syncCond = sync.NewCond(&l.syncMu)
	ch := make(chan struct{})
	l.notify.Store(&ch)
	if opts.ReadOnly {
		if err := l.loadReadOnly(); err != nil {
			l.closeSegments()
			return nil, fmt.Errorf("storage: open %s read-only: %w", dir, err)
		}
		return l, nil
	}
	if !opts.unlocked {
		if err := opts.FS.MkdirAll(dir, opts.DirMode); err != nil {
			return nil, fmt.Errorf("storage: open %s: %w", dir, err)
		}
		lock, err := lockDir(dir)
		if err != nil {
			return nil, err
		}
		l.lock = lock
	}
	if err := l.load(); err != nil {
		l.closeSegments()
		l.lock.unlock()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	if err := l.loadReplicationState(); err != nil {
		l.closeSegments()
		l.lock.unlock()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	if opts.Sync == SyncInterval && !opts.externalFlusher {
		l.wg.Add(1)
		go l.flushLoop()
	}
	return l, nil
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// OpenStats reports what Open did (clean or not, what it rescanned).
func (l *Log) OpenStats() OpenStats { return l.openStats }

func (l *Log) load() error {
	fsys := l.opts.FS
	if err := fsys.MkdirAll(l.dir, l.opts.DirMode); err != nil {
		return err
	}
	if fi, err := fsys.Lstat(l.dir); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (symbolic links are not followed)", l.dir)
	}
	// The listing comes first: a directory it refuses (a stray or
	// symlinked segment file) fails the open with nothing changed.
	bases, err := l.listDir()
	if err != nil {
		return err
	}
	markerPath := filepath.Join(l.dir, cleanShutdownFile)
	_, err = fsys.Lstat(markerPath)
	clean := err == nil

	// After a clean close the manifest describes the segments (sizes,
	// timestamps): no file is opened per sealed segment. The directory is
	// still listed, so that files gone since are noticed: a hole is
	// refused before anything changes, so every later open refuses it too.
	var known map[int64]segmentInfo
	mismatch := false
	if clean {
		if m, ok := readManifest(fsys, l.dir); ok {
			ok, err := l.checkManifest(m.bases(), bases)
			if err != nil {
				return err
			}
			// Files the manifest does not know: trust nothing, recover.
			mismatch = !ok
			if ok {
				known = m.byBase()
				l.openStats.FromManifest = true
			}
		}
		// The removal is made durable before the first write (see
		// durableMarkerRemovalLocked): until the log changes, a marker
		// that a crash brings back describes the files truly.
		if err := fsys.Remove(markerPath); err != nil {
			return err
		}
		l.markerRemovalPending = true
		// A manifest is good for the one open that follows the close
		// that wrote it: remove it now, with the marker, so that no later
		// clean shutdown that did not write one can pair the marker with
		// a stale list.
		if err := fsys.Remove(filepath.Join(l.dir, manifestFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	clean = clean && !mismatch
	l.openStats.Clean = clean

	startOffset, haveStart, err := readCheckpoint(fsys, l.dir, logStartOffsetFile)
	if err != nil {
		haveStart = false // derived from the segments below instead
	}
	recoveryPoint, haveRP, err := readCheckpoint(fsys, l.dir, recoveryPointFile)
	if err != nil || !haveRP {
		recoveryPoint, clean = 0, clean && haveRP
	}
	// A truncation that a crash interrupted: recover from the segment
	// that holds its end, then finish it (finishLoad).
	if end, ok, err := readCheckpoint(fsys, l.dir, truncationFile); err != nil {
		return fmt.Errorf("%w: cannot finish an interrupted truncation: %w", ErrCorrupt, err)
	} else if ok {
		l.truncationPending = end
		recoveryPoint, clean = min(recoveryPoint, end), false
		l.openStats.Clean = false
	}

	if len(bases) == 0 {
		base := int64(0)
		if haveStart {
			base = startOffset
		}
		if l.truncationPending >= 0 {
			if err := l.finishTruncationLocked(); err != nil {
				return err
			}
			l.truncationPending = -1
		}
		seg, err := segment.Create(l.dir, base, l.opts.segmentOptions())
		if err != nil {
			return err
		}
		l.publish([]*segment.Segment{seg})
		l.start.Store(base)
		l.end.Store(base)
		// Nothing to make durable yet: without a recovery-point file a
		// reopen after a crash rescans from the start, which is empty.
		// The new file's directory entry (and, for a log outside a
		// Store, the directory's own) is fsynced before the first write.
		l.flushed.Store(base)
		l.checkpointed = -1
		l.dirSyncPending = true
		l.parentSyncPending = !l.opts.unlocked
		return nil
	}

	// Segments wholly below the start offset are left from a deletion
	// that a crash interrupted after the start offset was advanced.
	if haveStart {
		for len(bases) > 1 && bases[1] <= startOffset {
			if err := segment.Open(l.dir, bases[0], bases[1], l.opts.segmentOptions()).Delete(); err != nil {
				return err
			}
			bases = bases[1:]
		}
	}
	l.openStats.Segments = len(bases)

	segs := make([]*segment.Segment, len(bases))
	for i := 0; i < len(bases)-1; i++ {
		segs[i] = segment.Open(l.dir, bases[i], bases[i+1], l.opts.segmentOptions())
		if in, ok := known[bases[i]]; ok {
			segs[i].SetKnown(in.Size, in.MaxTimestamp, in.MaxTimestampOffset)
		}
	}
	last := len(bases) - 1
	if clean {
		active, err := segment.OpenActive(l.dir, bases[last], l.opts.segmentOptions())
		if err == nil && l.openStats.FromManifest {
			if _, serr := fsys.Lstat(filepath.Join(l.dir, segment.FileName(active.NextOffset(), segment.LogSuffix))); serr == nil && active.NextOffset() != active.Base() {
				err = fmt.Errorf("%w: a segment follows the manifest's last one", ErrCorrupt)
			}
		}
		if err != nil && l.openStats.FromManifest {
			// The manifest does not match the files: trust nothing.
			if active != nil {
				_ = active.Close()
			}
			l.openStats.FromManifest, l.openStats.Clean = false, false
			if bases, err = l.listDir(); err != nil {
				return err
			}
			if len(bases) == 0 {
				return fmt.Errorf("%w: the manifest lists segments that are gone", ErrCorrupt)
			}
			segs = make([]*segment.Segment, len(bases))
			for i := 0; i < len(bases)-1; i++ {
				segs[i] = segment.Open(l.dir, bases[i], bases[i+1], l.opts.segmentOptions())
			}
			return l.finishLoad(segs, bases, 0, false, startOffset, haveStart)
		}
		if err != nil {
			if active == nil {
				return err
			}
			// A clean marker over a damaged tail: recover it.
			_ = active.Close()
			clean = false
			l.openStats.Clean = false
		} else {
			segs[last] = active
		}
	}
	return l.finishLoad(segs, bases, recoveryPoint, clean, startOffset, haveStart)
}

// finishLoad recovers (when not clean) and publishes the loaded segments.
func (l *Log) finishLoad(segs []*segment.Segment, bases []int64, recoveryPoint int64, clean bool, startOffset int64, haveStart bool) error {
	fsys := l.opts.FS
	if !clean {
		// Recovery changes files: a crash from here on must not find the
		// marker again.
		if err := l.durableMarkerRemovalLocked(); err != nil {
			return err
		}
		if err := l.recover(segs, bases, recoveryPoint); err != nil {
			return err
		}
		segs = *l.segs.Load()
		if l.truncationPending >= 0 {
			var err error
			if segs, err = l.resumeTruncation(segs, l.truncationPending); err != nil {
				return err
			}
		}
	}
	l.publish(segs)
	active := segs[len(segs)-1]
	end := active.NextOffset()
	start := segs[0].Base()
	if haveStart && startOffset > start && startOffset <= end {
		start = startOffset
	}
	l.start.Store(start)
	l.end.Store(end)
	if clean {
		l.flushed.Store(min(max(recoveryPoint, start), end))
		l.checkpointed = recoveryPoint
	} else {
		l.flushed.Store(end)
		l.checkpointed = -1
		if err := l.checkpointLocked(); err != nil {
			if !vfs.IsNoSpace(err) {
				return err
			}
			// A full disk must not stop a recovery: without the file the
			// next crash rescans everything, which is only slower.
			if rerr := fsys.Remove(filepath.Join(l.dir, recoveryPointFile)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return err
			}
		}
	}
	if l.truncationPending >= 0 {
		if err := l.finishTruncationLocked(); err != nil {
			return err
		}
		l.truncationPending = -1
	}
	return nil
}

// checkManifest compares the segments a clean close's manifest names with
// those listed. Segments gone from the front are as if retention deleted
// them (the start moves up); one gone from the middle is a hole, refused.
// Segments gone from the end, or a listed segment that the manifest does
// not name, make ok false: the caller then trusts nothing and recovers.
func (l *Log) checkManifest(manifest, listed []int64) (ok bool, err error) {
	if slices.Equal(manifest, listed) {
		return true, nil
	}
	named := make(map[int64]bool, len(manifest))
	for _, b := range manifest {
		named[b] = true
	}
	for _, b := range listed {
		if !named[b] {
			return false, nil
		}
	}
	// Every listed segment is named: some named ones are gone. Only a
	// prefix may be.
	if len(listed) == 0 {
		return false, fmt.Errorf("%w: the manifest of the last clean close names segments that are gone", ErrCorrupt)
	}
	have := make(map[int64]bool, len(listed))
	for _, b := range listed {
		have[b] = true
	}
	last := listed[len(listed)-1]
	for _, b := range manifest {
		if !have[b] && b > last {
			return false, nil // gone from the end: recovery decides the end
		}
	}
	for _, b := range manifest {
		if !have[b] && b > listed[0] {
			return false, fmt.Errorf("%w: %s is missing (named by the manifest of the last clean close)", ErrCorrupt, filepath.Join(l.dir, segment.FileName(b, segment.LogSuffix)))
		}
	}
	return true, nil
}

// recover rescans the segments from the one holding the recovery point,
// cutting at the first invalid batch and deleting the segments after it.
// Everything recovered is fsynced before it returns.
func (l *Log) recover(segs []*segment.Segment, bases []int64, recoveryPoint int64) error {
	first := 0
	for i, b := range bases {
		if b <= recoveryPoint {
			first = i
		}
	}
	for i := first; i < len(bases); i++ {
		seg := segment.Open(l.dir, bases[i], bases[i], l.opts.segmentOptions())
		cut, err := seg.Recover()
		if err != nil {
			return err
		}
		size, _ := seg.Size()
		l.openStats.RecoveredSegs++
		l.openStats.RecoveredBytes += size + cut
		l.openStats.TruncatedBytes += cut
		segs[i] = seg
		lastSeg := i == len(bases)-1
		if !lastSeg && seg.NextOffset() != bases[i+1] {
			// The log is cut here: later segments do not follow on.
			for j := i + 1; j < len(bases); j++ {
				if err := segment.Open(l.dir, bases[j], bases[j], l.opts.segmentOptions()).Delete(); err != nil {
					return err
				}
				l.openStats.DeletedSegments++
			}
			segs = segs[:i+1]
			lastSeg = true
		}
		if err := seg.Sync(); err != nil {
			return err
		}
		if !lastSeg {
			if err := seg.Seal(); err != nil {
				return err
			}
		}
		if lastSeg {
			break
		}
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return err
	}
	l.publish(segs)
	return nil
}

func (l *Log) publish(segs []*segment.Segment) {
	s := slices.Clone(segs)
	l.segs.Store(&s)
}

func (l *Log) segments() []*segment.Segment { return *l.segs.Load() }

func (l *Log) active() *segment.Segment {
	s := l.segments()
	return s[len(s)-1]
}

// StartOffset returns the first readable offset.
func (l *Log) StartOffset() int64 { return l.start.Load() }

// EndOffset returns the offset the next record will get.
func (l *Log) EndOffset() int64 { return l.end.Load() }

// FlushedOffset returns the offset below which every record is fsynced.
func (l *Log) FlushedOffset() int64 { return l.flushed.Load() }

// SegmentInfo describes one segment.
type SegmentInfo struct {
	BaseOffset   int64  // first offset
	NextOffset   int64  // offset after the last record
	Size         int64  // bytes of the .log
	MaxTimestamp int64  // largest record timestamp (ms); -1 when empty
	Active       bool   // the segment appended to
	Path         string // the .log file
}

// Segments lists the log's segments, oldest first. MaxTimestamp of a
// sealed segment comes from its time index, which this opens if needed.
func (l *Log) Segments() ([]SegmentInfo, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	segs := l.segments()
	out := make([]SegmentInfo, 0, len(segs))
	for i, s := range segs {
		size, err := s.Size()
		if err != nil {
			return nil, err
		}
		ts, _, ok, err := s.MaxTimestamp()
		if errors.Is(err, segment.ErrDeleted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			ts = -1
		}
		out = append(out, SegmentInfo{BaseOffset: s.Base(), NextOffset: s.NextOffset(), Size: size, MaxTimestamp: ts, Active: i == len(segs)-1, Path: s.LogPath()})
	}
	return out, nil
}

// Stats is a summary of a log.
type Stats struct {
	StartOffset   int64
	EndOffset     int64
	FlushedOffset int64
	Segments      int
	Size          int64 // bytes of all .log files
}

// Stats returns a summary of the log.
func (l *Log) Stats() (Stats, error) {
	if l.closed.Load() {
		return Stats{}, ErrClosed
	}
	segs := l.segments()
	st := Stats{StartOffset: l.StartOffset(), EndOffset: l.EndOffset(), FlushedOffset: l.FlushedOffset(), Segments: len(segs)}
	for _, s := range segs {
		n, err := s.Size()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return st, err
		}
		st.Size += n
	}
	return st, nil
}

// Close flushes the log, writes the recovery point and the clean-shutdown
// marker, stops the background flusher and closes the files. Later calls
// return ErrClosed; Close itself is idempotent.
func (l *Log) Close() error {
	l.writeMu.Lock()
	if l.closed.Swap(true) {
		l.writeMu.Unlock()
		return nil
	}
	if l.opts.ReadOnly {
		l.writeMu.Unlock()
		l.wakeWaiters()
		return l.closeSegments()
	}
	close(l.stop)
	l.writeMu.Unlock()
	l.wg.Wait()
	l.wakeWaiters()

	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	var err error
	if l.failure() == nil {
		err = l.flushLocked()
		if err == nil {
			err = l.checkpointLocked()
		}
		if err == nil {
			err = l.checkpointHighWatermark()
		}
		if err == nil {
			err = l.writeProducerSnapshotLocked()
		}
		if err == nil && l.epochsDirty {
			err = l.writeEpochCacheLocked()
		}
		if err == nil && len(l.pendingDelete) == 0 {
			// With files of half-failed deletions still on disk, the next
			// open must list the directory (and remove them).
			err = l.writeManifestLocked()
		}
	}
	// Closing a segment trims its index files to their used length.
	err = errors.Join(err, l.closeSegments())
	if err == nil && l.failure() == nil {
		err = vfs.WriteFileAtomic(l.opts.FS, filepath.Join(l.dir, cleanShutdownFile), nil, l.opts.FileMode)
	}
	l.lock.unlock()
	if err != nil {
		return fmt.Errorf("storage: close %s: %w", l.dir, err)
	}
	return nil
}

func (l *Log) closeSegments() error {
	p := l.segs.Load()
	if p == nil {
		return nil
	}
	var errs []error
	for _, s := range *p {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// durableMarkerRemovalLocked makes the removal of the clean-shutdown marker
// durable before the log's files first change, so that a crash after the
// change is never taken for a clean shutdown.
func (l *Log) durableMarkerRemovalLocked() error {
	if l.parentSyncPending {
		if err := l.opts.FS.SyncDir(filepath.Dir(l.dir)); err != nil {
			return l.fail(err)
		}
		l.parentSyncPending = false
	}
	if !l.markerRemovalPending && !l.dirSyncPending {
		return nil
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.markerRemovalPending, l.dirSyncPending = false, false
	return nil
}

// loadReplicationState loads the leader epoch cache, the producer state and
// the high watermark after the segments are loaded.
func (l *Log) loadReplicationState() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if err := l.loadEpochCacheLocked(); err != nil {
		return err
	}
	if err := l.rebuildProducersLocked(); err != nil {
		return err
	}
	l.loadHighWatermark()
	return nil
}

// listDir lists the directory: the segments' base offsets (sorted), the
// producer snapshots (into l.snapshots); it removes leftovers of
// interrupted writes and deletions, and refuses names and file types that
// are not ours.
func (l *Log) listDir() ([]int64, error) {
	fsys := l.opts.FS
	entries, err := fsys.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	logs := map[int64]bool{}
	var orphans []string
	l.snapshots = l.snapshots[:0]
	for _, e := range entries {
		name := e.Name()
		if off, ok := segment.ParseFileName(name, snapshotSuffix); ok {
			l.snapshots = append(l.snapshots, off)
			continue
		}
		if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted") {
			orphans = append(orphans, name)
			continue
		}
		var suffix string
		for _, s := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
			if strings.HasSuffix(name, s) {
				suffix = s
			}
		}
		if suffix == "" {
			continue // not ours (checkpoints, marker, an operator's notes)
		}
		base, ok := segment.ParseFileName(name, suffix)
		if !ok {
			return nil, fmt.Errorf("%w: unexpected file %s: segment files are named by 20 decimal digits", ErrCorrupt, filepath.Join(l.dir, name))
		}
		if base > MaxOffset {
			return nil, fmt.Errorf("%w: %s: base offset %d leaves no offset for a record (the largest is %d)", ErrCorrupt, filepath.Join(l.dir, name), base, int64(MaxOffset))
		}
		if e.Type()&fs.ModeSymlink != 0 || !e.Type().IsRegular() {
			return nil, fmt.Errorf("%w: %s is not a regular file (symbolic links are refused)", ErrCorrupt, filepath.Join(l.dir, name))
		}
		if suffix == segment.LogSuffix {
			bases = append(bases, base)
			logs[base] = true
		}
	}
	// Index files without their .log are left from a deletion that a
	// crash interrupted.
	for _, e := range entries {
		for _, s := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
			if base, ok := segment.ParseFileName(e.Name(), s); ok && !logs[base] {
				orphans = append(orphans, e.Name())
			}
		}
	}
	for _, name := range orphans {
		if l.opts.ReadOnly {
			break // not ours to clean up
		}
		if err := fsys.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		l.openStats.RemovedLeftovers++
	}
	slices.Sort(bases)
	slices.Sort(l.snapshots)

	return bases, nil
}

// loadReadOnly opens the segments without changing anything: sealed ones
// lazily, the last one as a tail (see segment.OpenTail).
func (l *Log) loadReadOnly() error {
	fi, err := l.opts.FS.Lstat(l.dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (symbolic links are not followed)", l.dir)
	}
	bases, err := l.listDir()
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		// A partition no writer has opened yet (a topic's directories
		// are created before its logs): empty, at the start offset the
		// writer will create its first segment at. Refresh looks again.
		start, ok, err := readCheckpoint(l.opts.FS, l.dir, logStartOffsetFile)
		if err != nil || !ok {
			start = 0
		}
		l.publish(nil)
		l.start.Store(start)
		l.end.Store(start)
		l.flushed.Store(start)
		l.loadHighWatermark()
		return nil
	}
	segs := make([]*segment.Segment, len(bases))
	for i := 0; i < len(bases)-1; i++ {
		segs[i] = segment.Open(l.dir, bases[i], bases[i+1], l.opts.segmentOptions())
	}
	tail, err := segment.OpenTail(l.dir, bases[len(bases)-1], l.opts.segmentOptions())
	if err != nil {
		return err
	}
	segs[len(segs)-1] = tail
	l.publish(segs)
	start := bases[0]
	if v, ok, err := readCheckpoint(l.opts.FS, l.dir, logStartOffsetFile); err == nil && ok && v > start && v <= tail.NextOffset() {
		start = v
	}
	l.start.Store(start)
	l.end.Store(tail.NextOffset())
	l.flushed.Store(l.end.Load())
	l.loadHighWatermark()
	return nil
}

// Refresh makes a read-only log (Options.ReadOnly) see what the writing
// process appended since: complete batches of the tail segment, and the
// segments it rolled to. It returns whether the end offset moved. On a
// writable log it does nothing.
func (l *Log) Refresh() (bool, error) {
	if !l.opts.ReadOnly {
		return false, nil
	}
	if l.closed.Load() {
		return false, ErrClosed
	}
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	before := l.end.Load()
	// The writer's deletions from the front: the start moves, and the
	// segments below it go from the list.
	if v, ok, err := readCheckpoint(l.opts.FS, l.dir, logStartOffsetFile); err == nil && ok && v > l.start.Load() && v <= l.end.Load() {
		l.start.Store(v)
		segs := l.segments()
		n := 0
		for n < len(segs)-1 && segs[n+1].Base() <= v {
			n++
		}
		if n > 0 {
			l.publish(segs[n:])
			for _, s := range segs[:n] {
				_ = s.Close()
			}
		}
	}
	if len(l.segments()) == 0 {
		// Empty so far: has the writer created the first segment?
		if err := l.loadReadOnly(); err != nil {
			return false, err
		}
		if len(l.segments()) == 0 {
			return false, nil
		}
	} else if _, err := l.opts.FS.Lstat(l.active().LogPath()); errors.Is(err, os.ErrNotExist) {
		// The writer truncated below our tail segment and deleted it:
		// look at the directory again.
		old := l.segments()
		if err := l.loadReadOnly(); err != nil {
			return false, err
		}
		for _, s := range old {
			_ = s.Close()
		}
	}
	for {
		segs := l.segments()
		tail := segs[len(segs)-1]
		truncated, err := tail.Shrunk()
		if err != nil {
			return false, err
		}
		if truncated {
			// The writer truncated (a replica following a new leader):
			// look at the tail again from scratch.
			nt, err := segment.OpenTail(l.dir, tail.Base(), l.opts.segmentOptions())
			if err != nil {
				return false, err
			}
			_ = tail.Close()
			segs = append(segs[:len(segs)-1:len(segs)-1], nt)
			l.publish(segs)
			tail = nt
			l.end.Store(min(l.end.Load(), nt.NextOffset()))
		}
		if _, err := tail.Refresh(); err != nil {
			return false, err
		}
		// A segment at the tail's end means the writer rolled: the tail
		// is complete; follow into the next one.
		next := tail.NextOffset()
		if _, err := l.opts.FS.Lstat(filepath.Join(l.dir, segment.FileName(next, segment.LogSuffix))); err != nil || next == tail.Base() {
			break
		}
		nt, err := segment.OpenTail(l.dir, next, l.opts.segmentOptions())
		if err != nil {
			return false, err
		}
		l.publish(append(segs, nt))
	}
	l.end.Store(l.active().NextOffset())
	hw := l.hw.Load()
	l.loadHighWatermark()
	moved := l.end.Load() != before
	if moved || l.hw.Load() != hw {
		l.wakeWaiters()
	}
	return moved, nil
}
