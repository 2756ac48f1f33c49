package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Log is one partition: an ordered list of segments, the last of which is
// active (appended to). See the package doc for the concurrency and
// durability rules.
//
// Lock order (a goroutine holding one may take those after it, never
// those before):
//
//	writeMu → syncMu → ckptMu → epochMu → a segment's mu → the Budget's mu
//
// writeMu is held by every writer and by Close; syncMu only around the
// syncing flag, never across an fsync (Truncate keeps fsyncs out by
// setting the flag, not by holding the lock); ckptMu across a checkpoint
// file's atomic replacement; a segment's mu is taken inside segment
// methods; rollMu (the list of rolled segments not yet fsynced) only
// around that list, with nothing taken inside it. Readers take no lock
// of the Log: they load the published state (segs, start, end) and hold
// a segment's mu for reading while they read its files.
type Log struct {
	dir  string
	opts Options

	// writeMu serializes writers: appends, rolls, truncation, deletion
	// from the front, and Close. Helpers that need it end in Locked.
	writeMu sync.Mutex
	// Guarded by writeMu:
	sinceSync            int                // records appended since the last fsync (SyncEveryN)
	pendingDelete        []*segment.Segment // segments removed from the list whose files remain
	markerRemovalPending bool               // the clean-shutdown marker and manifest are to be removed, durably, before the first change
	manifestCurrent      bool               // the marker and manifest on disk describe the files, unchanged since the open: Close leaves them
	manifest             *manifest          // the manifest on disk, as read by the open or written by Close (nil: none known)
	manifestSum          uint64             // the xxhash64 of its bytes
	markerStamped        bool               // the marker holds marker (see stampMarkerLocked)
	marker               cleanStamp         // the marker's stamp, when markerStamped
	stampPending         bool               // Close left the marker unstamped: the stamp was not settled (stampAfterClose)
	dirSyncPending       bool               // a new segment's directory entry is not yet fsynced
	startFile            int64              // the start offset in the partition's log-start-offset file (-1: none)

	// ckptMu serializes writes of recovery-point and high-watermark.
	ckptMu       sync.Mutex
	checkpointed int64 // the offset last written to recovery-point; guarded by ckptMu
	// ckptDirSyncPending: recovery-point was last replaced without the
	// directory fsync (checkpointLazy); guarded by ckptMu.
	ckptDirSyncPending bool

	// failedErr is set after an fsync error: writes refuse from then on.
	failedErr atomic.Pointer[error]
	// damage is set by an open that found damage below the recovery
	// point: writes refuse (ErrDamaged) until a repair.
	damage atomic.Pointer[DamageError]
	// durablePoint is the recovery point the open read (every byte below
	// it was fsynced): the damage rule's bound. Set by the open only.
	durablePoint int64

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
	// dirSyncDue counts the rolls that left the directory's fsync to the
	// next raise of the flushed offset; dirSynced is the count the last
	// such fsync covered (guarded by the syncing flag: syncDirIfDue).
	dirSyncDue atomic.Int64
	dirSynced  int64

	// Rolled segments whose .log is not yet fsynced, oldest first, and
	// whether a goroutine is fsyncing them (sync.go, syncRolled). Guarded
	// by rollMu, which is taken last: nothing is locked while holding it.
	rollMu      sync.Mutex
	rollPending []rolledSegment
	rollFlusher bool

	appending      atomic.Int64 // appenders between entering append and releasing writeMu
	appendsStarted atomic.Int64 // appends begun, ever (for the group commit's gathering)
	truncGen       atomic.Int64 // incremented by every Truncate

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

	// Counters since Open, for Stats (and metrics).
	counters counters
}

// OpenStats describes what Open had to do.
type OpenStats struct {
	Clean            bool  // the log was closed cleanly
	Segments         int   // segments found
	RecoveredSegs    int   // segments rescanned
	RecoveredBytes   int64 // bytes rescanned
	TruncatedBytes   int64 // bytes cut at the first invalid batch
	DeletedSegments  int   // segments after the first invalid batch, moved into quarantine (Quarantined)
	RemovedLeftovers int   // stale temporary or orphaned index files removed
	FromManifest     bool  // the segment list came from the clean-close manifest
	DirUnchanged     bool  // the directory was unchanged since that close (its stamp matched): not listed
	// Quarantined lists the files the open moved into the quarantine
	// folder (QuarantineDir) rather than delete them.
	Quarantined []Quarantined
	// Damage is the damage found below the recovery point: the log
	// refuses writes (ErrDamaged) until it is repaired; nil when none.
	Damage *DamageError
}

// Open opens (creating if needed) the partition log in dir.
func Open(dir string, opts Options) (*Log, error) {
	began := time.Now()
	l, err := open(dir, opts)
	if err == nil {
		l.counters.openNanos = int64(time.Since(began))
	}
	return l, err
}

func open(dir string, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, stop: make(chan struct{}), stampEpoch: -1, truncationPending: -1, startFile: -1, producers: newProducerState(), epochs: &epochCache{}}
	l.syncCond = sync.NewCond(&l.syncMu)
	ch := make(chan struct{})
	l.notify.Store(&ch)
	if opts.ReadOnly {
		if err := l.loadFollower(); err != nil {
			l.closeSegments()
			return nil, fmt.Errorf("storage: open %s read-only: %w", dir, err)
		}
		return l, nil
	}
	if !opts.unlocked {
		// A directory created here is durable in its parent before
		// anything in it is (a Store's partitions are made durable by
		// CreateTopic).
		if err := vfs.MkdirAllDurable(opts.FS, dir, opts.DirMode); err != nil {
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
	// Loading the producer state drops damaged snapshots: the manifest
	// then names a file that is gone. And a Close that leaves it must
	// leave a snapshot at the end too.
	if n := len(l.snapshots); l.manifestCurrent {
		l.manifestCurrent = slices.Equal(l.manifest.Snapshots, l.snapshots) && n > 0 && l.snapshots[n-1] == l.end.Load()
	}
	if opts.Sync == SyncInterval && !opts.externalFlusher {
		l.wg.Add(1)
		go everyTick(&l.wg, l.stop, l.opts.SyncInterval, l.flushIfDirty)
	}
	return l, nil
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// OpenStats reports what Open did (clean or not, what it rescanned).
func (l *Log) OpenStats() OpenStats { return l.openStats }

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

	// Counters since Open.
	AppendedBatches int64         // batches appended (duplicates of idempotent retries not counted)
	AppendedRecords int64         // records appended
	AppendedBytes   int64         // bytes of the batches appended
	Fsyncs          int64         // fsyncs of segment files that succeeded (one serves every append of a group commit)
	FsyncTime       time.Duration // time spent in them
	FailedFsyncs    int64         // fsyncs of segment files that failed (the first fails the log)
	ReadBatchBytes  int64         // bytes of batches returned by reads (Read, ReadInto, Reader; not regions)
	OpenTime        time.Duration // how long Open took, recovery included

	// Failed is the failure after which the log refuses writes until it
	// is reopened (an fsync that failed, a deletion that stopped
	// half-way); nil while the log is healthy. Writes return it wrapped
	// in ErrFailed.
	Failed error
	// Damaged is the damage below the recovery point that the open found
	// (a *DamageError): writes return it wrapped in ErrDamaged until the
	// log is repaired; nil when none.
	Damaged error
}

// counters are the Log's counters since Open.
type counters struct {
	appendedBatches, appendedRecords, appendedBytes atomic.Int64
	fsyncs, fsyncNanos, failedFsyncs, readBytes     atomic.Int64
	openNanos                                       int64
}

// Stats returns a summary of the log.
func (l *Log) Stats() (Stats, error) {
	if l.closed.Load() {
		return Stats{}, ErrClosed
	}
	segs := l.segments()
	c := &l.counters
	st := Stats{StartOffset: l.StartOffset(), EndOffset: l.EndOffset(), FlushedOffset: l.FlushedOffset(), Segments: len(segs),
		AppendedBatches: c.appendedBatches.Load(), AppendedRecords: c.appendedRecords.Load(), AppendedBytes: c.appendedBytes.Load(),
		Fsyncs: c.fsyncs.Load(), FsyncTime: time.Duration(c.fsyncNanos.Load()), FailedFsyncs: c.failedFsyncs.Load(),
		ReadBatchBytes: c.readBytes.Load(), OpenTime: time.Duration(c.openNanos), Failed: l.failure()}
	if d := l.damaged(); d != nil {
		st.Damaged = d
	}
	for _, s := range segs {
		n, err := s.Size()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return st, err
		}
		st.Size += n
	}
	return st, nil
}

// Close makes the whole log durable and marks it cleanly closed, so that
// the next Open reads no data: it fsyncs every record not yet fsynced (the
// bulk of its time after many appends without Sync), the active
// segment's trimmed indexes, and the checkpoints (recovery point, high
// watermark, producer snapshot, leader epochs, the manifest), then writes
// the clean-shutdown marker. It stops the background flusher and closes
// the files. Later calls return ErrClosed; Close itself is idempotent.
// CloseUnflushed is the fast alternative.
func (l *Log) Close() error { return l.close(true) }

// CloseUnflushed closes the log without fsyncing its records and without the
// clean-shutdown marker: what was appended since the last fsync survives a
// process exit (it is in the page cache) but not a power cut, and the
// next Open recovers, rescanning from the recovery point, as after a
// crash (unless nothing changed since a clean Open: the previous clean
// shutdown's marker still holds). For a process that must stop quickly
// after many appends without Sync.
func (l *Log) CloseUnflushed() error { return l.close(false) }

func (l *Log) close(flush bool) error {
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
	if !flush {
		err := l.closeSegmentsWith((*segment.Segment).CloseUnsynced)
		l.lock.unlock()
		if err != nil {
			return fmt.Errorf("storage: close %s: %w", l.dir, err)
		}
		return nil
	}
	var err error
	// Nothing changed since a clean open: the marker and manifest on disk
	// still describe the files (and the producer snapshot at the end is
	// the one the open read), so they are left as they are.
	unchanged := l.markerRemovalPending && l.manifestCurrent
	manifestWritten := unchanged
	// A damaged log writes nothing: no checkpoint, manifest or marker may
	// describe it as whole.
	healthy := l.failure() == nil && l.damaged() == nil
	if healthy {
		// What the background flusher of rolled segments left.
		err = l.syncRolledNow()
		if err == nil {
			err = l.flushLocked()
		}
		if err == nil {
			err = l.checkpointLocked()
		}
		if err == nil {
			err = l.checkpointHighWatermark()
		}
		if err == nil && !unchanged {
			err = l.writeProducerSnapshotLocked()
		}
		if err == nil && l.epochsDirty {
			err = l.writeEpochCacheLocked()
		}
		if err == nil && len(l.pendingDelete) == 0 && !unchanged {
			// With files of half-failed deletions still on disk, the next
			// open must list the directory (and remove them).
			err = l.writeManifestLocked()
			manifestWritten = err == nil
		}
	}
	// Closing a segment trims its index files to their used length.
	err = errors.Join(err, l.closeSegments())
	if err == nil && healthy {
		if !unchanged {
			err = vfs.WriteFileAtomic(l.opts.FS, filepath.Join(l.dir, cleanShutdownFile), nil, l.opts.FileMode)
			l.markerStamped = false
		}
		if err == nil && manifestWritten {
			l.stampPending = l.stampMarkerLocked()
		}
	}
	l.lock.unlock()
	if err != nil {
		return fmt.Errorf("storage: close %s: %w", l.dir, err)
	}
	return nil
}

func (l *Log) closeSegments() error { return l.closeSegmentsWith((*segment.Segment).Close) }

// closeSegmentsWith closes every segment with closeFn (Close, or
// CloseUnsynced for CloseUnflushed).
func (l *Log) closeSegmentsWith(closeFn func(*segment.Segment) error) error {
	p := l.segs.Load()
	if p == nil {
		return nil
	}
	var errs []error
	for _, s := range *p {
		errs = append(errs, closeFn(s))
	}
	return errors.Join(errs...)
}

// segmentIndex returns the index of the last segment whose base is at or
// below offset (0 when offset is below them all).
func segmentIndex(segs []*segment.Segment, offset int64) int {
	lo, hi := 0, len(segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if segs[m].Base() <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return max(lo-1, 0)
}
