package offsets

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Stats describe a Store.
type Stats struct {
	Groups       int    // durable groups with interest in at least one topic
	Positions    int    // durable committed (group, topic, partition) entries
	Generation   uint64 // of the journal the store appends to or follows
	JournalBytes int64  // size of that journal as the store knows it, its own unwritten records included
	Records      uint64 // journal records this store appended since Open
	Tailed       uint64 // journal records of other stores this store read since Open
	Reloads      uint64 // times the store reread the directory since Open (another store compacted)
	Syncs        uint64 // fsyncs of the journal by this store since Open
	Compactions  uint64 // by this store, since Open
	// CompactErr is the last compaction failure, nil after a success.
	CompactErr error
	// DroppedBytes is, for a store opened to write, what it cut from
	// journal tails (torn, or corrupt with RecoverCorrupt) since Open.
	// For a read-only store it is what it found past the last valid
	// record of the journals it read (what a writing store would cut, or
	// an append in progress), and cut nothing.
	DroppedBytes int64
	// RefreshErr is the last failure to follow the journal from a read
	// (reads then answer from what was read before), nil after a success.
	RefreshErr error
	ReadOnly   bool // opened by OpenReadOnly
}

// Fetch returns the group's durable position on the partition, or
// ErrNoCommit: a commit shows once it is durable (see Commit), so what
// Fetch returns survives a crash. Like every read, it first follows the
// journal (see Refresh).
func (s *Store) Fetch(group, topic string, partition int32) (Position, error) {
	defer s.readLock()()
	if s.closed {
		return Position{}, ErrClosed
	}
	if g := s.st.groups[group]; g != nil {
		if t := g.topics[topic]; t != nil {
			if p, ok := t.parts[partition]; ok {
				return p.public(topic, partition), nil
			}
		}
	}
	return Position{}, ErrNoCommit
}

func (p position) public(topic string, partition int32) Position {
	return Position{Topic: topic, Partition: partition, Offset: p.offset,
		Metadata: p.metadata, Time: time.Unix(0, p.time)}
}

// readLock follows the journal, as every read does first (a failure shows
// in Stats.RefreshErr; the read answers from what was read before), then
// read-locks the state and returns the unlock: defer s.readLock()().
func (s *Store) readLock() (unlock func()) {
	_ = s.refresh()
	s.mu.RLock()
	return s.mu.RUnlock
}

// Groups returns the groups of the durable state, sorted. It is nil after
// Close.
func (s *Store) Groups() []string {
	defer s.readLock()()
	if s.closed {
		return nil
	}
	return sortedKeys(s.st.groups)
}

// Positions returns the group's durable positions sorted by topic and
// partition.
func (s *Store) Positions(group string) []Position {
	defer s.readLock()()
	g := s.st.groups[group]
	if s.closed || g == nil {
		return nil
	}
	var out []Position
	for tname, t := range g.topics {
		for p, pos := range t.parts {
			out = append(out, pos.public(tname, p))
		}
	}
	slices.SortFunc(out, func(a, b Position) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// Readers returns the groups with durable interest in the topic, sorted.
func (s *Store) Readers(topic string) []string {
	defer s.readLock()()
	r := s.st.readers[topic]
	if s.closed || len(r) == 0 {
		return nil
	}
	return sortedKeys(r)
}

// MinCommitted is what the retention cleaner asks: the smallest committed
// offset on the partition over the groups that read the topic. ok is false
// when no group reads the topic (or the store is closed). A reader that has
// not committed on this partition holds all of it: the answer is then 0.
//
// It answers from durable writes only: a commit (or an Unsubscribe,
// DeleteGroup or DeleteTopic that would raise the minimum) counts once an
// fsync covering it has succeeded (Sync, the group commit of SyncAlways,
// the interval of SyncInterval, a compaction, Close, or this store's own
// fsync of another Store's records before it reads them), never when that
// fsync failed. So after a power cut, the commits that survive are never
// below what MinCommitted said, and no segment the cleaner deleted on its
// word was still needed.
func (s *Store) MinCommitted(topic string, partition int32) (offset int64, ok bool) {
	defer s.readLock()()
	r := s.st.readers[topic]
	if s.closed || len(r) == 0 {
		return 0, false
	}
	first := true
	for gname := range r {
		p, has := s.st.groups[gname].topics[topic].parts[partition]
		if !has {
			return 0, true
		}
		if first || p.offset < offset {
			offset, first = p.offset, false
		}
	}
	return offset, true
}

// Stats returns counters and sizes; Groups and Positions count the
// durable state, like the reads (it follows the journal first, as they
// do).
func (s *Store) Stats() Stats {
	_ = s.refresh()
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.stats
	st.Groups, st.Positions = len(s.st.groups), s.st.entries
	st.JournalBytes = s.end + int64(len(s.buf))
	if s.j != nil {
		st.Generation = s.j.gen
	}
	st.CompactErr, st.RefreshErr = s.compactErr, s.refreshErr
	st.Syncs = s.syncs.Load()
	st.Tailed, st.Reloads = s.tailed, s.reloads
	st.ReadOnly = s.readOnly
	if s.readOnly {
		st.DroppedBytes = s.roDropped + s.stuckBytes
	}
	return st
}
