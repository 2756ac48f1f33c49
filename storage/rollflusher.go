package storage

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seglog/seglog/segment"
)

// rollFlusher holds the rolled segments whose .log is not yet fsynced,
// oldest first, and whether a goroutine of the log is fsyncing them
// (Log.startRollFlusherLocked). Guarded by mu, which is taken last:
// nothing is locked while holding it.
type rollFlusher struct {
	mu      sync.Mutex
	pending []rolledSegment
	running bool // the flusher goroutine runs
}

// sealRolled seals s, a segment that a roll left to the background
// flusher (see rollLocked), and makes its .log durable: Seal fsyncs the
// .log when it cuts a preallocated tail, the fdatasync after it covers a
// .log that had none (and finds nothing left to write otherwise).
func sealRolled(s *segment.Segment) error {
	if err := s.Seal(); err != nil {
		return err
	}
	return s.Sync()
}

// rolledSegment is a rolled segment that waits for the background
// flusher: its .log is not yet fsynced and, when unsealed is set, the roll
// left its whole seal to the flusher too (rollLocked).
type rolledSegment struct {
	seg      *segment.Segment
	unsealed bool
}

// maxUnsealedRolls bounds the rolled segments left unsealed to the
// flusher: past it a roll seals the old segment itself (without the
// .log's fsync), so that appenders wait for the journal again rather than
// pile up segments that a Checkpoint or Close must each seal (six fsyncs
// apiece). Eight 128 MiB segments are a gigabyte of burst.
const maxUnsealedRolls = 8

// indexLocked returns where s is among the rolled segments waiting
// for the flusher, or -1. The caller holds r.mu.
func (r *rollFlusher) indexLocked(s *segment.Segment) int {
	return slices.IndexFunc(r.pending, func(p rolledSegment) bool { return p.seg == s })
}

// isPending reports whether s waits for the background flusher.
func (r *rollFlusher) isPending(s *segment.Segment) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.indexLocked(s) >= 0
}

// add records that old is to be fsynced after its roll; the
// recovery point stays at or below its base until then. It returns how
// many other rolled segments wait unsealed (setUnsealed). A segment is
// recorded once: a roll that failed to create its successor left old
// active and recorded, and the next roll of it finds it there.
func (r *rollFlusher) add(old *segment.Segment) (unsealed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := false
	for _, r := range r.pending {
		switch {
		case r.seg == old:
			found = true
		case r.unsealed:
			unsealed++
		}
	}
	if !found {
		r.pending = append(r.pending, rolledSegment{seg: old})
	}
	return unsealed
}

// setUnsealed records whether the roll left old's seal to the flusher too.
func (r *rollFlusher) setUnsealed(old *segment.Segment, unsealed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.indexLocked(old); i >= 0 {
		r.pending[i].unsealed = unsealed
	}
}

// last returns the newest rolled segment waiting for the
// flusher, or nil.
func (r *rollFlusher) last() *segment.Segment {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		return nil
	}
	return r.pending[len(r.pending)-1].seg
}

// drop removes the entry of s from the rolled segments
// to fsync.
func (r *rollFlusher) drop(s *segment.Segment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.indexLocked(s); i >= 0 {
		r.pending = slices.Delete(r.pending, i, i+1)
	}
}

// floor returns the base of the oldest rolled segment whose .log is
// not yet fsynced: the recovery point must not pass it.
func (r *rollFlusher) floor() (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		return 0, false
	}
	// The lowest base, not the first entry's: a truncation can leave a
	// re-rolled segment behind entries of higher bases.
	floor := r.pending[0].seg.Base()
	for _, r := range r.pending[1:] {
		floor = min(floor, r.seg.Base())
	}
	return floor, true
}

// startRollFlusherLocked starts the goroutine that fsyncs rolled
// segments, unless one runs. The caller holds writeMu and has checked
// that the log is open (so Close waits for the goroutine), and has
// published the segment that follows the one it rolled.
func (l *Log) startRollFlusherLocked() {
	l.roll.mu.Lock()
	defer l.roll.mu.Unlock()
	if l.roll.running {
		return
	}
	l.roll.running = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			_ = l.syncRolled(l.stop) // a failure is recorded in the log
			// Decided under roll.mu: a roll that publishes a new segment
			// after this finds the flag down and starts another.
			l.roll.mu.Lock()
			if !l.roll.dueLocked(l.active()) || l.failure() != nil || isClosed(l.stop) {
				l.roll.running = false
				l.roll.mu.Unlock()
				return
			}
			l.roll.mu.Unlock()
		}
	}()
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// dueLocked reports whether the oldest rolled segment not yet
// fsynced can be dealt with now: it is no longer the active segment (a
// roll in progress has not published its successor; a failed roll or a
// truncation left it active, and the next roll queues it again). While
// it is active the recovery point stays at or below its base, where a
// crash rescans from anyway. The caller holds r.mu.
func (r *rollFlusher) dueLocked(active *segment.Segment) bool {
	return len(r.pending) > 0 && r.pending[0].seg != active
}

// syncRolledNow is syncRolled for a caller that waits (Checkpoint, Close):
// it stops once the segments pending when it was called are done, so that
// appenders rolling meanwhile cannot keep it going forever.
func (l *Log) syncRolledNow() error {
	last := l.roll.last()
	if last == nil {
		return nil
	}
	return l.syncRolledUntil(nil, last)
}

// syncRolled seals and fsyncs each segment that a roll left to it, oldest
// first, while one is due (rollFlusher.dueLocked), the log has not failed and
// stop is not closed (nil: never), fsyncs the directory for the segments
// the rolls created, and checkpoints the recovery point after each. It
// holds the group-commit flag, so that it never runs beside a Truncate
// (nor beside another fsync of the log). Once a rolled segment is
// fsynced, every offset below its end is: those before it are in
// segments fsynced before (by their rolls, in order, or by recovery).
func (l *Log) syncRolled(stop <-chan struct{}) error { return l.syncRolledUntil(stop, nil) }

// syncRolledUntil is syncRolled, stopping too once last (unless nil) is
// no longer pending.
func (l *Log) syncRolledUntil(stop <-chan struct{}, last *segment.Segment) error {
	for !isClosed(stop) {
		if err := l.failure(); err != nil {
			return fmt.Errorf("%w: %w", ErrFailed, err)
		}
		l.commit.mu.Lock()
		for l.commit.syncing {
			l.commit.cond.Wait()
		}
		l.roll.mu.Lock()
		if !l.roll.dueLocked(l.active()) || last != nil && l.roll.indexLocked(last) < 0 {
			l.roll.mu.Unlock()
			l.commit.mu.Unlock()
			return nil
		}
		s := l.roll.pending[0].seg
		l.roll.mu.Unlock()
		l.commit.syncing = true
		l.commit.mu.Unlock()
		err := l.syncRolledSegment(s)
		l.commit.release()
		if err != nil {
			return err
		}
		// Best effort, as the interval flusher's: a recovery point that
		// lags only means a longer rescan. None once Close began (
		// CloseUnflushed writes no checkpoint; Close writes its own).
		if !isClosed(stop) {
			_ = l.checkpointLazy()
		}
	}
	return nil
}

// syncRolledSegment seals s, a rolled segment that is not the active one,
// and fsyncs it (sealRolled) and the directory (syncDirIfDue), and raises
// the flushed offset to its end. Only the goroutine that set
// l.commit.syncing calls it: no truncation changes s meanwhile. A segment
// deleted since has nothing left to make durable.
func (l *Log) syncRolledSegment(s *segment.Segment) error {
	t0 := time.Now()
	err := sealRolled(s)
	if !slices.Contains(l.segments(), s) || errors.Is(err, segment.ErrDeleted) {
		l.roll.drop(s)
		return nil
	}
	l.noteFsync(time.Since(t0), err)
	if err != nil {
		// It stays pending: the recovery point never passes it.
		return l.fail(err)
	}
	l.roll.drop(s)
	if err := l.syncDirIfDue(); err != nil {
		return err
	}
	l.commit.raise(s.NextOffset())
	return nil
}
