package storage

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// A Store keeps the start offsets its deletions moved in one file at its
// root, as Kafka keeps one log-start-offset checkpoint per data directory:
// AdvanceStartOffsets moves the start of any number of partitions with one
// durable write (a temporary file, its fsync, a rename and the root's
// fsync) instead of one per partition. A partition opened by the Store
// starts at the higher of this file's entry and its own log-start-offset
// file, which the store's deleter then writes without fsync, before it
// removes the segments' files (for followers and standalone opens).
// DeleteTopic drops the topic's entries, durably, before its directories
// go, so a topic created again under the same name starts from nothing.

// storeStartOffsetsFile is the store's start-offset checkpoint, at its
// root. Its format is in codec.go.
const storeStartOffsetsFile = "log-start-offset-checkpoint"

// PartitionOffset names an offset of one partition.
type PartitionOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// loadStartOffsets reads the store's start-offset checkpoint. A missing
// file is an empty one; a damaged file is an error wrapping ErrCorrupt
// (without it, segments a deletion had not yet removed when the power went
// would come back).
func (s *Store) loadStartOffsets() error {
	path := filepath.Join(s.root, storeStartOffsetsFile)
	b, err := vfs.ReadFile(s.opts.Log.FS, path, manifestMaxBytes)
	switch {
	case errors.Is(err, os.ErrNotExist):
		s.starts = map[string]int64{}
		return nil
	case errors.Is(err, vfs.ErrTooLarge):
		return fmt.Errorf("storage: open store: %w: %v", ErrCorrupt, err)
	case err != nil:
		return fmt.Errorf("storage: open store: %w", err)
	}
	m, err := decodeStartOffsets(b)
	if err != nil {
		return fmt.Errorf("storage: open store: %s: %w", path, err)
	}
	s.starts = m
	return nil
}

// writeStartOffsetsLocked replaces the store's start-offset checkpoint
// with m, durably; s.starts becomes m when it succeeds. The caller holds
// startsMu.
func (s *Store) writeStartOffsetsLocked(m map[string]int64) error {
	path := filepath.Join(s.root, storeStartOffsetsFile)
	if err := vfs.WriteFileAtomic(s.opts.Log.FS, path, encodeStartOffsets(m), s.opts.Log.FileMode); err != nil {
		return fmt.Errorf("storage: write %s: %w", path, err)
	}
	s.starts = m
	return nil
}

// startFloor returns a partition's entry in the store's start-offset
// checkpoint (0 when it has none).
func (s *Store) startFloor(name string) int64 {
	s.startsMu.Lock()
	defer s.startsMu.Unlock()
	return s.starts[name]
}

// dropStartOffsets removes a topic's entries from the store's start-offset
// checkpoint, durably, when it has any.
func (s *Store) dropStartOffsets(topic string) error {
	s.startsMu.Lock()
	defer s.startsMu.Unlock()
	next := maps.Clone(s.starts)
	maps.DeleteFunc(next, func(name string, _ int64) bool {
		t, _, ok := ParsePartitionDir(name)
		return ok && t == topic
	})
	if len(next) == len(s.starts) {
		return nil
	}
	return s.writeStartOffsetsLocked(next)
}

// AdvanceStartOffsets moves the start offset of each named partition to
// where DeleteSegmentsBefore(Offset) would move it (the base of the first
// segment that holds a record at or above Offset, never past the active
// segment), with one durable write for all of them: the store's
// log-start-offset-checkpoint, replaced atomically before any start moves.
// The segments below a new start leave the log at once (readers get
// ErrOffsetOutOfRange), and the store removes their files in the
// background (deleter.go; WaitDeleted waits for it), or a later
// DeleteSegmentsBefore on the partition does, without a durable write of
// its own. A partition that cannot move (its log does not open, is
// closed, or has nothing to delete) is left as it was. The error says the checkpoint could not be
// written; then nothing moved.
func (s *Store) AdvanceStartOffsets(targets []PartitionOffset) error {
	if s.opts.Log.ReadOnly {
		return ErrReadOnly
	}
	type move struct {
		name string
		log  *Log
		off  int64
		segs []*segment.Segment
		n    int
	}
	targets = slices.Clone(targets)
	slices.SortFunc(targets, func(a, b PartitionOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(b.Offset, a.Offset))
	})
	var moves []move
	for i, t := range targets {
		if i > 0 && t.Topic == targets[i-1].Topic && t.Partition == targets[i-1].Partition {
			continue // the highest offset of a partition came first
		}
		if l, err := s.Log(t.Topic, t.Partition); err == nil {
			moves = append(moves, move{name: PartitionDir(t.Topic, t.Partition), log: l, off: t.Offset})
		}
	}
	s.startsMu.Lock()
	defer s.startsMu.Unlock()
	// Every log's writeMu, in partition order (startsMu serializes
	// callers), so that no start moves under the plan, then one write.
	for _, m := range moves {
		m.log.writeMu.Lock()
		defer m.log.writeMu.Unlock()
	}
	next := maps.Clone(s.starts)
	kept := moves[:0]
	for _, m := range moves {
		if m.log.checkDeletableLocked() != nil {
			continue
		}
		m.segs, m.n = m.log.deletableBefore(m.off)
		if m.n == 0 || m.segs[m.n].Base() <= m.log.start.Load() {
			continue
		}
		next[m.name] = m.segs[m.n].Base()
		kept = append(kept, m)
	}
	if len(kept) == 0 {
		return nil
	}
	if err := s.writeStartOffsetsLocked(next); err != nil {
		return err
	}
	logs := make([]*Log, 0, len(kept))
	for _, m := range kept {
		m.log.dropFrontLocked(m.segs, m.n)
		logs = append(logs, m.log)
	}
	if !s.deleter.add(logs...) {
		// The store is closing: its Close no longer sees these logs'
		// segments; their files stay for the next open.
		for _, l := range logs {
			_ = l.removeDroppedLocked(false)
		}
	}
	return nil
}
