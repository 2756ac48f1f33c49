package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/seglog/seglog/segment"
)

// Follower is a read-only view of a partition log that another process
// (or a Log in this one) writes: it takes no lock, recovers nothing and
// changes no file. It reads what the files held at open, and Refresh (or
// Wait, which polls) catches up with what the writer did since: appends
// up to the last complete batch, rolls, deletions from the front and
// truncations. Its read API is the Log's (the two share the code).
type Follower struct {
	view
	mu sync.Mutex // serializes Refresh and Close
}

// OpenFollower opens the partition log in dir as a follower. The
// directory must exist; a partition no writer has opened yet is empty,
// at the start offset its writer will begin at. Options' write settings
// are ignored.
func OpenFollower(dir string, opts Options) (*Follower, error) {
	opts.ReadOnly = true
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	began := time.Now()
	f := &Follower{view: view{dir: dir, opts: opts}}
	f.tail.init()
	f.refresh = func() error { _, err := f.Refresh(); return err }
	if err := f.load(); err != nil {
		_ = f.closeSegments()
		return nil, fmt.Errorf("storage: open %s as a follower: %w", dir, err)
	}
	f.counters.openNanos = int64(time.Since(began))
	return f, nil
}

// Stats returns a summary of the log as the follower sees it; the
// flushed offset is the end (what the follower reads is on disk).
func (f *Follower) Stats() (Stats, error) {
	st, err := f.stats()
	st.FlushedOffset = st.EndOffset
	return st, err
}

// Close closes the follower's files and wakes its waiters (ErrClosed).
// Later calls return nil.
func (f *Follower) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Swap(true) {
		return nil
	}
	f.wakeWaiters()
	return f.closeSegments()
}

// load opens the segments without changing anything: sealed ones
// lazily, the last one followed (segment.OpenFollow).
func (f *Follower) load() error {
	fi, err := f.opts.FS.Lstat(f.dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (symbolic links are not followed)", f.dir)
	}
	ls, err := listPartitionDir(f.opts.FS, f.dir, nil)
	if err != nil {
		return err
	}
	bases := ls.bases
	if len(bases) == 0 {
		// A partition no writer has opened yet (a topic's directories
		// are created before its logs): empty, at the start offset the
		// writer will create its first segment at. Refresh looks again.
		start, ok, err := readCheckpoint(f.opts.FS, f.dir, logStartOffsetFile)
		if err != nil || !ok {
			start = 0
		}
		f.publish(nil)
		f.start.Store(start)
		f.end.Store(start)
		f.loadHighWatermark()
		return nil
	}
	// Segments wholly below the writer's start offset are being deleted
	// (it advances the start before it removes files): not part of the
	// log. A store's follower also knows the start offsets from the
	// store's checkpoint, which the writer makes durable before the
	// partition's own file (written by its background deleter).
	start, ok, err := readCheckpoint(f.opts.FS, f.dir, logStartOffsetFile)
	if err != nil || !ok {
		start = 0
	}
	start = max(start, f.opts.startFloor)
	for len(bases) > 1 && bases[1] <= start {
		bases = bases[1:]
	}
	// A rolled segment is sealed (its .log cut to its data, its indexes
	// trimmed: what segment.Open trusts) only once the writer's recovery
	// point has passed it: the writer's background flusher seals it after
	// the roll, under this view's feet. Until then it is followed as the
	// tail is (its end scanned, its index copied, its .log read with
	// pread), never mapped at a size about to shrink.
	rp, ok, err := readCheckpoint(f.opts.FS, f.dir, recoveryPointFile)
	if err != nil || !ok {
		rp = 0
	}
	segs := make([]*segment.Segment, len(bases))
	for i := range bases {
		if i+1 < len(bases) && bases[i+1] <= rp {
			segs[i] = segment.Open(f.dir, bases[i], bases[i+1], f.opts.segmentOptions())
			continue
		}
		s, err := segment.OpenFollow(f.dir, bases[i], f.opts.segmentOptions())
		if err != nil {
			for _, s := range segs[:i] {
				_ = s.Close()
			}
			return err
		}
		segs[i] = s
	}
	tail := segs[len(segs)-1]
	f.publish(segs)
	if start < bases[0] || start > tail.NextOffset() {
		start = bases[0]
	}
	f.start.Store(start)
	f.end.Store(tail.NextOffset())
	f.loadHighWatermark()
	return nil
}

// Refresh makes the follower see what the writing process did since:
// complete batches appended to the tail segment, the segments it rolled
// to, its deletions from the front and its truncations, and the high
// watermark it checkpointed. It returns whether the end offset moved.
func (f *Follower) Refresh() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return false, ErrClosed
	}
	before := f.end.Load()
	if ok, err := f.refreshSegmentsLocked(); !ok || err != nil {
		return false, err
	}
	if err := f.followTailLocked(); err != nil {
		return false, err
	}
	f.end.Store(f.active().NextOffset())
	hw := f.hw.Load()
	f.loadHighWatermark()
	moved := f.end.Load() != before
	if moved || f.hw.Load() != hw {
		f.wakeWaiters()
	}
	return moved, nil
}

// refreshSegmentsLocked follows the writer's deletions from the front and
// its truncations below the tail segment; ok is false while the log has
// no segment. The caller holds f.mu.
func (f *Follower) refreshSegmentsLocked() (ok bool, err error) {
	// The writer's deletions from the front: the start moves, and the
	// segments below it go from the list.
	if v, ok, err := readCheckpoint(f.opts.FS, f.dir, logStartOffsetFile); err == nil && ok && v > f.start.Load() && v <= f.end.Load() {
		f.start.Store(v)
		segs := f.segments()
		n := 0
		for n < len(segs)-1 && segs[n+1].Base() <= v {
			n++
		}
		if n > 0 {
			f.publish(segs[n:])
			for _, s := range segs[:n] {
				_ = s.Close()
			}
		}
	}
	if len(f.segments()) == 0 {
		// Empty so far: has the writer created the first segment?
		if err := f.load(); err != nil {
			return false, err
		}
		return len(f.segments()) > 0, nil
	} else if _, err := f.opts.FS.Lstat(f.active().LogPath()); errors.Is(err, os.ErrNotExist) {
		// The writer truncated below our tail segment and deleted it:
		// look at the directory again.
		old := f.segments()
		if err := f.load(); err != nil {
			return false, err
		}
		for _, s := range old {
			_ = s.Close()
		}
	}
	return true, nil
}

// followTailLocked extends the tail segment over what the writer appended,
// and follows it into the segments it rolled to. The caller holds f.mu.
func (f *Follower) followTailLocked() error {
	for {
		segs := f.segments()
		tail := segs[len(segs)-1]
		truncated, err := tail.Shrunk()
		if err != nil {
			return err
		}
		if truncated {
			// The writer truncated (a replica following a new leader):
			// look at the tail again from scratch.
			nt, err := segment.OpenFollow(f.dir, tail.Base(), f.opts.segmentOptions())
			if err != nil {
				return err
			}
			_ = tail.Close()
			segs = append(segs[:len(segs)-1:len(segs)-1], nt)
			f.publish(segs)
			tail = nt
			f.end.Store(min(f.end.Load(), nt.NextOffset()))
		}
		if _, err := tail.Refresh(); err != nil {
			return err
		}
		// A segment at the tail's end means the writer rolled: the tail
		// is complete; follow into the next one.
		next := tail.NextOffset()
		if _, err := f.opts.FS.Lstat(filepath.Join(f.dir, segment.FileName(next, segment.LogSuffix))); err != nil || next == tail.Base() {
			break
		}
		nt, err := segment.OpenFollow(f.dir, next, f.opts.segmentOptions())
		if err != nil {
			return err
		}
		f.publish(append(segs, nt))
	}
	return nil
}
