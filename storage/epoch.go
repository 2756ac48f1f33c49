package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Leader epochs (Kafka's KIP-101). Every batch carries the epoch of the
// leader that wrote it. The log keeps a small cache of (epoch, start
// offset): the first offset written in each epoch, checkpointed to
// leader-epoch-checkpoint and truncated along with the log. A follower that
// restarts asks the leader for the end offset of its own latest epoch
// (EndOffsetForEpoch) and truncates exactly the suffix that diverged.

// ErrStaleEpoch is returned when a batch or SetLeaderEpoch names an epoch
// below the log's latest.
var ErrStaleEpoch = errors.New("storage: leader epoch below the latest")

const (
	leaderEpochFile     = "leader-epoch-checkpoint"
	maxEpochCacheLength = 1 << 16
)

// EpochEntry is one entry of the leader epoch cache.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is guarded by the log's writeMu for writes; readers take
// epochMu.
type epochCache struct {
	entries []EpochEntry // strictly increasing in both fields
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{Epoch: -1}, false
	}
	return c.entries[len(c.entries)-1], true
}

// truncateFrom drops entries starting at or after offset.
func (c *epochCache) truncateFrom(offset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= offset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateBefore moves the start of the cache to offset: entries wholly
// before it go, and the one that covers it starts at offset.
func (c *epochCache) truncateBefore(offset int64) bool {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= offset {
		i++
	}
	changed := i > 0
	c.entries = c.entries[i:]
	if len(c.entries) > 0 && c.entries[0].StartOffset < offset {
		c.entries[0].StartOffset = offset
		changed = true
	}
	return changed
}

func (l *Log) writeEpochCacheLocked() error {
	path := filepath.Join(l.dir, leaderEpochFile)
	if err := vfs.WriteFileAtomic(l.opts.FS, path, l.repl.epochs.encode(), l.opts.FileMode); err != nil {
		return fmt.Errorf("storage: write %s: %w", leaderEpochFile, err)
	}
	l.repl.epochsDirty = false
	return nil
}

// loadEpochCacheLocked reads the checkpoint; a missing or damaged one is
// rebuilt from the batch headers of the log.
func (l *Log) loadEpochCacheLocked() error {
	b, err := vfs.ReadFile(l.opts.FS, filepath.Join(l.dir, leaderEpochFile), 1<<20)
	if err == nil {
		var c *epochCache
		if c, err = decodeEpochCache(b); err == nil {
			l.repl.epochs = c
			l.repl.epochsDirty = c.truncateBefore(l.start.Load()) // written with the next change
			if c.truncateFrom(l.end.Load() + 1) {
				return l.writeEpochCacheLocked()
			}
			return nil
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, vfs.ErrTooLarge) {
		return err
	}
	missing := errors.Is(err, os.ErrNotExist)
	c := &epochCache{}
	err = l.scanHeaders(l.start.Load(), l.end.Load(), func(h segment.Header) {
		if last, ok := c.latest(); h.LeaderEpoch >= 0 && (!ok || h.LeaderEpoch > last.Epoch) {
			c.entries = append(c.entries, EpochEntry{Epoch: h.LeaderEpoch, StartOffset: max(h.BaseOffset, l.start.Load())})
		}
	})
	if err != nil {
		return fmt.Errorf("storage: rebuild leader epochs: %w", err)
	}
	l.repl.epochs = c
	if missing && len(c.entries) == 0 {
		return nil
	}
	return l.writeEpochCacheLocked()
}

// noteEpochLocked records the epoch of a batch about to be appended at
// offset; the checkpoint is written before the batch, so that a crash can
// only leave an entry without data, never data without its entry.
func (l *Log) noteEpochLocked(epoch int32, offset int64) error {
	last, ok := l.repl.epochs.latest()
	if ok && epoch == last.Epoch {
		return nil
	}
	if ok && epoch < last.Epoch {
		return fmt.Errorf("%w: batch epoch %d, latest %d", ErrStaleEpoch, epoch, last.Epoch)
	}
	if epoch < 0 {
		return nil
	}
	l.repl.addEpoch(epoch, offset)
	return l.writeEpochCacheLocked()
}

// SetLeaderEpoch makes this log the leader's in epoch: every batch appended
// from now on is stamped with it (patched in place, outside the checksum),
// and the epoch starts at the current end offset. A follower does not call
// it: its batches keep the epoch the leader stamped. Epochs only grow.
func (l *Log) SetLeaderEpoch(epoch int32) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	if epoch < 0 {
		return fmt.Errorf("%w: epoch %d", ErrStaleEpoch, epoch)
	}
	if err := l.noteEpochLocked(epoch, l.end.Load()); err != nil {
		return err
	}
	l.repl.stampEpoch = epoch
	return nil
}

// SetFollower makes this log a follower's: appended batches keep the
// epoch the leader stamped on them (SetLeaderEpoch stops applying).
func (l *Log) SetFollower() {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.repl.stampEpoch = -1
}

// LeaderEpochs returns the leader epoch cache: each epoch and its first
// offset, oldest first.
func (l *Log) LeaderEpochs() []EpochEntry {
	return l.repl.leaderEpochs()
}

// EndOffsetForEpoch answers a follower's question: for the largest epoch at
// or below epoch that this log has, the offset where it ends (the start of
// the next epoch, or EndOffset for the latest). A follower whose latest
// epoch is E truncates its log to the answer for E. When the log has no
// epoch at or below epoch it returns (-1, -1).
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64, err error) {
	if l.closed.Load() {
		return 0, 0, ErrClosed
	}
	foundEpoch, endOffset = l.repl.endOffsetForEpoch(epoch, l.end.Load())
	return foundEpoch, endOffset, nil
}
