package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

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
		l.clean.manifest = known
	}
	l.clean.current = clean && known != nil && !changed && slices.Equal(known.Snapshots, l.repl.snapshots) && slices.Equal(known.bases(), bases)
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
// stamps, Close checks that with a listing: cleanShutdown.stamp). It
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
	l.clean.removalPending = true
	l.clean.marker, l.clean.stamped = stamp, true
	l.clean.manifestSum = sum
	l.repl.snapshots = append(l.repl.snapshots[:0], m.Snapshots...)
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
	l.clean.removalPending = true
	mismatch := false
	if m, sum, ok := readManifest(l.opts.FS, l.dir); ok {
		ok, err := l.checkManifest(m.bases(), bases)
		if err != nil {
			return false, nil, err
		}
		// Files the manifest does not know: trust nothing, recover.
		mismatch = !ok
		if ok {
			known, l.clean.manifestSum = m, sum
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
	l.ckpt.startFile = -1
	if ck.haveStart {
		l.ckpt.startFile = ck.start
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
		l.repl.truncationPending = end
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
	if l.repl.truncationPending >= 0 {
		if err := l.finishTruncationLocked(); err != nil {
			return err
		}
		l.repl.truncationPending = -1
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
	l.commit.flushed.Store(base)
	l.ckpt.recoveryPoint = -1
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
		if l.repl.truncationPending >= 0 && l.damaged() == nil {
			var err error
			if segs, err = l.resumeTruncation(segs, l.repl.truncationPending); err != nil {
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
		l.commit.flushed.Store(end)
		l.ckpt.recoveryPoint = -1
		return nil
	}
	if clean {
		l.commit.flushed.Store(min(max(recoveryPoint, start), end))
		l.ckpt.recoveryPoint = recoveryPoint
	} else {
		l.commit.flushed.Store(end)
		l.ckpt.recoveryPoint = -1
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
	if l.repl.truncationPending >= 0 {
		if err := l.finishTruncationLocked(); err != nil {
			return err
		}
		l.repl.truncationPending = -1
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
