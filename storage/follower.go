package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seglog/seglog/segment"
)

// loadFollower opens the segments without changing anything: sealed ones
// lazily, the last one followed (segment.OpenFollow).
func (l *Log) loadFollower() error {
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
		l.commit.flushed.Store(start)
		l.loadHighWatermark()
		return nil
	}
	// Segments wholly below the writer's start offset are being deleted
	// (it advances the start before it removes files): not part of the
	// log. A store's follower also knows the start offsets from the
	// store's checkpoint, which the writer makes durable before the
	// partition's own file (written by its background deleter).
	start, ok, err := readCheckpoint(l.opts.FS, l.dir, logStartOffsetFile)
	if err != nil || !ok {
		start = 0
	}
	start = max(start, l.opts.startFloor)
	for len(bases) > 1 && bases[1] <= start {
		bases = bases[1:]
	}
	// A rolled segment is sealed (its .log cut to its data, its indexes
	// trimmed: what segment.Open trusts) only once the writer's recovery
	// point has passed it: the writer's background flusher seals it after
	// the roll, under this view's feet. Until then it is followed as the
	// tail is (its end scanned, its index copied, its .log read with
	// pread), never mapped at a size about to shrink.
	rp, ok, err := readCheckpoint(l.opts.FS, l.dir, recoveryPointFile)
	if err != nil || !ok {
		rp = 0
	}
	segs := make([]*segment.Segment, len(bases))
	for i := range bases {
		if i+1 < len(bases) && bases[i+1] <= rp {
			segs[i] = segment.Open(l.dir, bases[i], bases[i+1], l.opts.segmentOptions())
			continue
		}
		s, err := segment.OpenFollow(l.dir, bases[i], l.opts.segmentOptions())
		if err != nil {
			for _, s := range segs[:i] {
				_ = s.Close()
			}
			return err
		}
		segs[i] = s
	}
	tail := segs[len(segs)-1]
	l.publish(segs)
	if start < bases[0] || start > tail.NextOffset() {
		start = bases[0]
	}
	l.start.Store(start)
	l.end.Store(tail.NextOffset())
	l.commit.flushed.Store(l.end.Load())
	l.loadHighWatermark()
	return nil
}

// Refresh makes a follower (Options.ReadOnly) see what the writing
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
	if ok, err := l.refreshSegmentsLocked(); !ok || err != nil {
		return false, err
	}
	if err := l.followTailLocked(); err != nil {
		return false, err
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

// refreshSegmentsLocked follows the writer's deletions from the front and
// its truncations below the tail segment; ok is false while the log has
// no segment. The caller holds writeMu.
func (l *Log) refreshSegmentsLocked() (ok bool, err error) {
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
		if err := l.loadFollower(); err != nil {
			return false, err
		}
		return len(l.segments()) > 0, nil
	} else if _, err := l.opts.FS.Lstat(l.active().LogPath()); errors.Is(err, os.ErrNotExist) {
		// The writer truncated below our tail segment and deleted it:
		// look at the directory again.
		old := l.segments()
		if err := l.loadFollower(); err != nil {
			return false, err
		}
		for _, s := range old {
			_ = s.Close()
		}
	}
	return true, nil
}

// followTailLocked extends the tail segment over what the writer appended,
// and follows it into the segments it rolled to. The caller holds writeMu.
func (l *Log) followTailLocked() error {
	for {
		segs := l.segments()
		tail := segs[len(segs)-1]
		truncated, err := tail.Shrunk()
		if err != nil {
			return err
		}
		if truncated {
			// The writer truncated (a replica following a new leader):
			// look at the tail again from scratch.
			nt, err := segment.OpenFollow(l.dir, tail.Base(), l.opts.segmentOptions())
			if err != nil {
				return err
			}
			_ = tail.Close()
			segs = append(segs[:len(segs)-1:len(segs)-1], nt)
			l.publish(segs)
			tail = nt
			l.end.Store(min(l.end.Load(), nt.NextOffset()))
		}
		if _, err := tail.Refresh(); err != nil {
			return err
		}
		// A segment at the tail's end means the writer rolled: the tail
		// is complete; follow into the next one.
		next := tail.NextOffset()
		if _, err := l.opts.FS.Lstat(filepath.Join(l.dir, segment.FileName(next, segment.LogSuffix))); err != nil || next == tail.Base() {
			break
		}
		nt, err := segment.OpenFollow(l.dir, next, l.opts.segmentOptions())
		if err != nil {
			return err
		}
		l.publish(append(segs, nt))
	}
	return nil
}
