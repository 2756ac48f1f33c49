package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

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
	// A directory unchanged since a clean close needs no listing: its
	// manifest names every file.
	clean, known, bases, marker := l.takeUnchangedDir()
	if known == nil {
		// The listing comes first: a directory it refuses (a stray or
		// symlinked segment file) fails the open with nothing changed.
		var err error
		if bases, err = l.listDir(); err != nil {
			return err
		}
		if len(bases) > 0 {
			l.prefetch(bases[len(bases)-1])
		}
		if clean, known, err = l.takeCleanMarker(bases, marker); err != nil {
			return err
		}
	} else {
		l.prefetch(bases[len(bases)-1])
	}
	ck, err := l.readLoadCheckpoints(&clean)
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		return l.createFirstSegment(ck)
	}
	// Segments wholly below the start offset are left from a deletion
	// that a crash interrupted after the start offset was advanced.
	changed := l.openStats.RemovedLeftovers > 0
	if ck.haveStart {
		for len(bases) > 1 && bases[1] <= ck.start {
			if err := segment.Open(l.dir, bases[0], bases[1], l.opts.segmentOptions()).Delete(); err != nil {
				return err
			}
			bases, changed = bases[1:], true
		}
	}
	// The marker and manifest stay until the first change; if none
	// comes, Close leaves them as they are.
	if known != nil {
		l.manifest = known
	}
	l.manifestCurrent = clean && known != nil && !changed && slices.Equal(known.Snapshots, l.snapshots) && slices.Equal(known.bases(), bases)
	l.openStats.Segments = len(bases)
	segs := l.sealedSegments(bases, known)
	if clean {
		last := len(bases) - 1
		active, err := segment.OpenActive(l.dir, bases[last], l.opts.segmentOptions())
		switch {
		case err == nil && active.NextOffset() >= ck.recoveryPoint:
			segs[last] = active
		case active == nil:
			return err
		default:
			// A clean marker over a damaged tail (or one that ends below
			// the recovery point: bytes the clean close fsynced are
			// gone): recover it, which reports damage below the recovery
			// point. What the manifest said of the files is not trusted
			// either. Closed without a trim: nothing of the file is cut
			// here.
			_ = active.CloseUnsynced()
			clean, l.openStats.Clean = false, false
			if l.openStats.FromManifest {
				l.openStats.FromManifest = false
				segs, ck.recoveryPoint = l.sealedSegments(bases, nil), 0
			}
		}
	}
	return l.finishLoad(segs, bases, ck.recoveryPoint, clean, ck.start, ck.haveStart)
}

// takeUnchangedDir trusts the manifest without listing the directory when
// the clean-shutdown marker holds the directory's stamp (vfs.DirStamp) and
// the manifest's checksum, and both are unchanged: no entry was created,
// removed or renamed since the clean close that stamped the marker, and
// the manifest is the one it vouched for, so the manifest still names
// every segment and snapshot, and no leftover lies beside them (before it
// stamps, Close checks that with a listing: stampMarkerLocked). It
// returns known nil when the directory must be listed instead, and
// whether the marker is there (for takeCleanMarker).
func (l *Log) takeUnchangedDir() (clean bool, known *manifest, bases []int64, marker bool) {
	fsys := l.opts.FS
	path := filepath.Join(l.dir, cleanShutdownFile)
	fi, err := fsys.Lstat(path)
	if err != nil {
		return false, nil, nil, false
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 || fi.Size() > maxMarkerBytes {
		return false, nil, nil, true
	}
	b, err := vfs.ReadFile(fsys, path, maxMarkerBytes)
	if err != nil {
		return false, nil, nil, true
	}
	stamp, err := decodeCleanStamp(b)
	if err != nil {
		return false, nil, nil, true
	}
	// Settled too: a clock set back behind the stamp could give a later
	// change the stamp's time.
	now, settled, err := vfs.StatDirStamp(fsys, l.dir)
	if err != nil || !settled || now != stamp.Dir {
		return false, nil, nil, true
	}
	// A manifest replaced in place (its inode kept: the directory's stamp
	// does not move) is not the one the stamp vouches for.
	m, sum, ok := readManifest(fsys, l.dir)
	if !ok || sum != stamp.Manifest {
		return false, nil, nil, true
	}
	l.markerRemovalPending = true
	l.marker, l.markerStamped = stamp, true
	l.manifestSum = sum
	l.snapshots = append(l.snapshots[:0], m.Snapshots...)
	l.openStats.Clean, l.openStats.FromManifest, l.openStats.DirUnchanged = true, true, true
	return true, m, m.bases(), true
}

// takeCleanMarker takes the clean-shutdown marker (marker: it is there,
// as takeUnchangedDir found) and reads the manifest: a clean open trusts
// them. After a clean close the manifest describes the
// segments (sizes, timestamps), so no file is opened per sealed segment;
// it is checked against the listing, so that files gone since are
// noticed: a hole is refused before anything changes, so every later open
// refuses it too. Both files stay until the log first changes, when
// durableMarkerRemovalLocked removes them durably: until then they
// describe the files truly, whatever crash comes, and an open that
// changes nothing (a restart, a tool) removes and fsyncs nothing.
func (l *Log) takeCleanMarker(bases []int64, marker bool) (clean bool, known *manifest, err error) {
	if !marker {
		return false, nil, nil
	}
	l.markerRemovalPending = true
	mismatch := false
	if m, sum, ok := readManifest(l.opts.FS, l.dir); ok {
		ok, err := l.checkManifest(m.bases(), bases)
		if err != nil {
			return false, nil, err
		}
		// Files the manifest does not know: trust nothing, recover.
		mismatch = !ok
		if ok {
			known, l.manifestSum = m, sum
			l.openStats.FromManifest = true
		}
	}
	l.openStats.Clean = !mismatch
	return !mismatch, known, nil
}

// loadCheckpoints is what an open reads of the checkpoint files.
type loadCheckpoints struct {
	start         int64 // log-start-offset, when haveStart
	haveStart     bool
	recoveryPoint int64 // 0 when unknown: recovery rescans everything
}

// readLoadCheckpoints reads log-start-offset, recovery-point and a pending
// truncation; a missing recovery point, or a truncation that a crash
// interrupted, makes the open unclean (*clean = false).
func (l *Log) readLoadCheckpoints(clean *bool) (loadCheckpoints, error) {
	fsys := l.opts.FS
	var ck loadCheckpoints
	var err error
	if ck.start, ck.haveStart, err = readCheckpoint(fsys, l.dir, logStartOffsetFile); err != nil {
		ck.haveStart = false // derived from the segments instead
	}
	l.startFile = -1
	if ck.haveStart {
		l.startFile = ck.start
	}
	// A Store makes its deletions durable in one file for all its logs
	// (AdvanceStartOffsets) and writes this partition's own file without
	// fsync: after a power cut the store's is the later one.
	if f := l.opts.startFloor; f > 0 && (!ck.haveStart || f > ck.start) {
		ck.start, ck.haveStart = f, true
	}
	rp, haveRP, err := readCheckpoint(fsys, l.dir, recoveryPointFile)
	if err != nil || !haveRP {
		rp, *clean = 0, false
	}
	ck.recoveryPoint = rp
	// Below the recovery point every byte was fsynced: damage found there
	// is reported, never cut (recover).
	l.durablePoint = rp
	// A truncation that a crash interrupted: recover from the segment
	// that holds its end, then finish it (finishLoad).
	if end, ok, err := readCheckpoint(fsys, l.dir, truncationFile); err != nil {
		return ck, fmt.Errorf("%w: cannot finish an interrupted truncation: %w", ErrCorrupt, err)
	} else if ok {
		l.truncationPending = end
		ck.recoveryPoint, *clean = min(ck.recoveryPoint, end), false
		l.durablePoint = min(l.durablePoint, end)
	}
	l.openStats.Clean = l.openStats.Clean && *clean
	return ck, nil
}

// createFirstSegment starts a log that has no segment, at the start offset.
func (l *Log) createFirstSegment(ck loadCheckpoints) error {
	base := int64(0)
	if ck.haveStart {
		base = ck.start
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
	// Nothing to make durable yet: without a recovery-point file a reopen
	// after a crash rescans from the start, which is empty. The new
	// file's directory entry is fsynced before the first write (the
	// directory's own entry was, when Open created it).
	l.flushed.Store(base)
	l.checkpointed = -1
	l.dirSyncPending = true
	return nil
}

// sealedSegments returns the segments of bases, all but the last opened
// lazily as sealed (with what the manifest knows of them); the last is
// left nil for the caller.
func (l *Log) sealedSegments(bases []int64, known *manifest) []*segment.Segment {
	segs := make([]*segment.Segment, len(bases))
	opts := l.opts.segmentOptions()
	for i := 0; i < len(bases)-1; i++ {
		segs[i] = segment.Open(l.dir, bases[i], bases[i+1], opts)
		if known == nil {
			continue
		}
		if in, ok := known.info(bases[i]); ok {
			segs[i].SetKnown(in.Size, in.MaxTimestamp, in.MaxTimestampOffset)
		}
	}
	return segs
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
		if l.truncationPending >= 0 && l.damaged() == nil {
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
	if l.damaged() != nil {
		// Nothing is written: the recovery point, the truncation marker
		// and the files stay as they are until a repair.
		l.flushed.Store(end)
		l.checkpointed = -1
		return nil
	}
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
	// The segments below are not rescanned; each must still reach the
	// next one's base: a hole (a segment gone) is refused, damage is kept
	// and reported.
	for i := 0; i < first; i++ {
		err := l.checkSealedEnd(segs[i], bases[i+1])
		var d *DamageError
		if errors.As(err, &d) {
			l.enterDamaged(segs, i, bases[i], d)
			return nil
		}
		if err != nil {
			closeUnsynced(segs)
			return err
		}
	}
	for i := first; i < len(bases); i++ {
		seg := segment.Open(l.dir, bases[i], bases[i], l.opts.segmentOptions())
		// Fsynced and checkpointed below durablePoint: damage there is
		// not a torn write, and not cut away.
		cut, err := seg.RecoverKeeping(l.durablePoint)
		var ce *segment.CorruptError
		if errors.As(err, &ce) {
			d := &DamageError{File: ce.File, Pos: ce.Pos, Offset: seg.NextOffset(), Err: ce.Err}
			_ = seg.CloseUnsynced() // Close would cut the file at its end
			l.enterDamaged(segs, i, bases[i], d)
			return nil
		}
		if err != nil {
			return err
		}
		if i == len(bases)-1 && seg.NextOffset() < l.durablePoint {
			// The data ends below the recovery point: fsynced bytes are
			// gone (a file cut short).
			size, _ := seg.Size()
			d := &DamageError{File: seg.LogPath(), Pos: size, Offset: seg.NextOffset(),
				Err: fmt.Errorf("%w: the data ends at offset %d, below the recovery point %d", ErrCorrupt, seg.NextOffset(), l.durablePoint)}
			_ = seg.CloseUnsynced() // Close would cut the file at its end
			l.enterDamaged(segs, i, bases[i], d)
			return nil
		}
		size, _ := seg.Size()
		l.openStats.RecoveredSegs++
		l.openStats.RecoveredBytes += size + cut
		l.openStats.TruncatedBytes += cut
		segs[i] = seg
		lastSeg := i == len(bases)-1
		if !lastSeg && seg.NextOffset() < bases[i+1] && bases[i+1] <= l.durablePoint {
			// The next segment begins below the recovery point: this one
			// was whole and fsynced (no damage below it, see above), so
			// the offsets between are missing, not torn.
			err := &HoleError{Dir: l.dir, From: seg.NextOffset(), Upto: bases[i+1], After: seg.LogPath()}
			closeUnsynced(segs)
			return err
		}
		if !lastSeg && seg.NextOffset() != bases[i+1] {
			// The log is cut here: later segments do not follow on. They
			// are moved aside, not deleted.
			for j := i + 1; j < len(bases); j++ {
				why := fmt.Sprintf("does not follow on from the log, which ends at offset %d after recovery", seg.NextOffset())
				if err := l.quarantineSegment(bases[j], why); err != nil {
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

// durableMarkerRemovalLocked removes the clean-shutdown marker and the
// manifest, and makes their removal (and a new segment's directory entry)
// durable, before the log's files first change: a crash after the change
// is never taken for a clean shutdown, and no later clean shutdown that
// did not write a manifest can pair its marker with a stale one.
func (l *Log) durableMarkerRemovalLocked() error {
	if !l.markerRemovalPending && !l.dirSyncPending {
		return nil
	}
	if l.markerRemovalPending {
		for _, name := range []string{cleanShutdownFile, manifestFile} {
			if err := l.opts.FS.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return l.fail(err)
			}
		}
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.markerRemovalPending, l.dirSyncPending, l.manifestCurrent = false, false, false
	return nil
}

// stampMarkerLocked records in the clean-shutdown marker the directory's
// stamp, once it is settled (vfs.StatDirStamp), and the manifest's
// checksum, so that the next open can skip the listing. Close calls it
// when l.manifest, on disk, names the log's files. Before it writes, it
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
func (l *Log) stampMarkerLocked() (unsettled bool) {
	fsys := l.opts.FS
	s, settled, err := vfs.StatDirStamp(fsys, l.dir)
	if err != nil || l.manifest == nil {
		return false
	}
	if !settled {
		return true
	}
	want := cleanStamp{Dir: s, Manifest: l.manifestSum}
	if l.markerStamped && l.marker == want {
		return false
	}
	ls, err := listPartitionDir(fsys, l.dir, nil)
	if err != nil || len(ls.orphans) > 0 || !slices.Equal(ls.bases, l.manifest.bases()) || !slices.Equal(ls.snapshots, l.manifest.Snapshots) {
		return false
	}
	if again, _, err := vfs.StatDirStamp(fsys, l.dir); err != nil || again != s {
		return false
	}
	f, err := fsys.OpenFile(filepath.Join(l.dir, cleanShutdownFile), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return false // gone: the log changed since (another process's)
	}
	_, err = f.Write(encodeCleanStamp(want))
	if cerr := f.Close(); err == nil && cerr == nil {
		l.marker, l.markerStamped = want, true
	}
	return false
}

// stampAfterClose tries again to stamp the marker of a closed log whose
// Close found the stamp unsettled, and reports whether it still is.
func (l *Log) stampAfterClose() (unsettled bool) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.stampPending {
		l.stampPending = l.stampMarkerLocked()
	}
	return l.stampPending
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

// listDir lists the directory (listPartitionDir): the segments' base
// offsets (sorted), the producer snapshots (into l.snapshots); it removes
// the leftovers of interrupted writes and deletions.
func (l *Log) listDir() ([]int64, error) {
	ls, err := listPartitionDir(l.opts.FS, l.dir, l.snapshots[:0])
	if err != nil {
		return nil, err
	}
	l.snapshots = ls.snapshots
	for _, o := range ls.orphans {
		if l.opts.ReadOnly {
			break // not ours to clean up
		}
		if o.why != "" {
			if err := l.quarantine(o.name, o.why); err != nil {
				return nil, err
			}
			continue
		}
		if err := l.opts.FS.Remove(filepath.Join(l.dir, o.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		l.openStats.RemovedLeftovers++
	}
	return ls.bases, nil
}

// dirListing is what a listing of a partition directory found.
type dirListing struct {
	bases     []int64  // of .log files, sorted
	snapshots []int64  // of producer snapshots, sorted
	orphans   []orphan // leftovers: temporary files, index files without their .log
}

// orphan is a leftover file of a partition directory: the engine's own
// (why empty: removed) or one it cannot use (quarantined, for why).
type orphan struct {
	name string
	why  string
}

// listPartitionDir lists a partition directory, appending the snapshots'
// offsets to snapshots. It refuses names and file types that are not
// ours (a stray or symlinked segment file).
func listPartitionDir(fsys vfs.FS, dir string, snapshots []int64) (dirListing, error) {
	ls := dirListing{snapshots: snapshots}
	var indexes []indexFile // index files, checked against bases below
	err := vfs.ScanDir(fsys, dir, func(name string, typ fs.FileMode) error {
		base, suffix, digits := segment.SplitFileName(name)
		if digits && suffix == snapshotSuffix {
			ls.snapshots = append(ls.snapshots, base)
			return nil
		}
		if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted") {
			o := orphan{name: strings.Clone(name)}
			if !ownLeftover(name) {
				o.why = "a temporary file that is not one of the engine's own"
			}
			ls.orphans = append(ls.orphans, o)
			return nil
		}
		kind := segmentSuffix(name)
		if kind == "" {
			return nil // not ours (checkpoints, marker, an operator's notes)
		}
		if !digits || suffix != kind {
			return fmt.Errorf("%w: unexpected file %s: segment files are named by 20 decimal digits", ErrCorrupt, filepath.Join(dir, name))
		}
		if base > MaxOffset {
			return fmt.Errorf("%w: %s: base offset %d leaves no offset for a record (the largest is %d)", ErrCorrupt, filepath.Join(dir, name), base, int64(MaxOffset))
		}
		if typ&fs.ModeSymlink != 0 || !typ.IsRegular() {
			return fmt.Errorf("%w: %s is not a regular file (symbolic links are refused)", ErrCorrupt, filepath.Join(dir, name))
		}
		if kind == segment.LogSuffix {
			ls.bases = append(ls.bases, base)
		} else {
			indexes = append(indexes, indexFile{base, kind})
		}
		return nil
	})
	if err != nil {
		return dirListing{}, err
	}
	slices.Sort(ls.bases)
	slices.Sort(ls.snapshots)
	// Index files without their .log are left from a deletion that a
	// crash interrupted.
	for _, x := range indexes {
		if _, found := slices.BinarySearch(ls.bases, x.base); !found {
			ls.orphans = append(ls.orphans, orphan{segment.FileName(x.base, x.suffix), "an index file without its .log"})
		}
	}
	return ls, nil
}

// indexFile is an index file found by listDir.
type indexFile struct {
	base   int64
	suffix string
}

// segmentSuffix returns the suffix of a segment file that name ends with,
// or "".
func segmentSuffix(name string) string {
	for _, s := range [...]string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		if strings.HasSuffix(name, s) {
			return s
		}
	}
	return ""
}

// ownLeftover reports whether name is a leftover of the engine's own
// writes: a checkpoint's or snapshot's temporary file (vfs.WriteFileAtomic
// names it <file>.<pid>-<n>.tmp, a snapshot <offset>.snapshot.tmp) or a
// segment file renamed for deletion (<segment file>.deleted).
func ownLeftover(name string) bool {
	if rest, ok := strings.CutSuffix(name, ".deleted"); ok {
		_, suffix, digits := segment.SplitFileName(rest)
		return digits && suffix == segmentSuffix(rest) && suffix != ""
	}
	rest, _ := strings.CutSuffix(name, ".tmp")
	if _, suffix, digits := segment.SplitFileName(rest); digits && suffix == snapshotSuffix {
		return true
	}
	if i := strings.LastIndexByte(rest, '.'); i > 0 {
		rest = rest[:i] // the <pid>-<n> part
	}
	switch rest {
	case recoveryPointFile, logStartOffsetFile, truncationFile, manifestFile, cleanShutdownFile, highWatermarkFile, leaderEpochFile:
		return true
	}
	return false
}

// enterDamaged publishes the log as it can be read despite the damage d
// found in segs[i]: the segments before it, and segs[i] up to the damage,
// read-only (its indexes are used as they are, not rebuilt: a rebuild
// would stop at the damage). Later segments stay on disk untouched. Writes
// refuse from then on (ErrDamaged).
func (l *Log) enterDamaged(segs []*segment.Segment, i int, base int64, d *DamageError) {
	opts := l.opts.segmentOptions()
	opts.ReadOnly = true
	seg := segment.Open(l.dir, base, d.Offset, opts)
	seg.SetKnown(d.Pos, 0, -1)
	for _, s := range segs[i:] {
		if s != nil {
			_ = s.Close()
		}
	}
	segs[i] = seg
	l.damage.Store(d)
	l.openStats.Damage = d
	logger := l.opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Error("seglog: damage below the recovery point: writes refused until repaired", "dir", l.dir, "file", d.File, "pos", d.Pos, "offset", d.Offset, "err", d.Err)
	l.publish(segs[:i+1])
}

// closeUnsynced closes the segments opened so far (nil entries are not
// opened) for an open that fails: nothing is trimmed or made durable.
func closeUnsynced(segs []*segment.Segment) {
	for _, s := range segs {
		if s != nil {
			_ = s.CloseUnsynced()
		}
	}
}
