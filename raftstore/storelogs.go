package raftstore

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/storage"
)

// StoreLog stores one entry (StoreLogs of one).
func (s *LogStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs appends the entries as one batch and returns once it is
// durable: one Log.Sync (an fdatasync, shared with concurrent callers)
// after the append, unless Options.NoSync. The first entry must follow
// LastIndex, or the store must be empty (then any first index is
// accepted, which is what raft needs after removing all entries when it
// installs a snapshot); the entries must follow each other. Otherwise it
// returns an error wrapping ErrNonContiguous and stores nothing, as
// raft-wal does.
// A call whose entries would pass the log's batch limit
// (Options.Log.Limits.MaxBatchBytes, 16 MiB by default) is split into
// several batches, synced together; a crash may then keep a prefix of the
// call, which raft tolerates since the call did not return.
func (s *LogStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	if err := checkEntries(logs); err != nil {
		return err
	}
	if err := s.placeLocked(logs[0].Index); err != nil {
		return err
	}
	if err := s.appendEntriesLocked(logs, encodeEntries(logs)); err != nil {
		return err
	}
	if s.noSync {
		return nil
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("raftstore: store logs %d to %d: %w", logs[0].Index, logs[len(logs)-1].Index, err)
	}
	return nil
}

// checkEntries checks that a StoreLogs call's entries can be stored:
// none nil, indexes in [1, MaxIndex] and following each other, and
// AppendedAt zero or within what the entry format holds.
func checkEntries(logs []*raft.Log) error {
	for i, l := range logs {
		if l == nil {
			return fmt.Errorf("%w: entry %d of the call is nil", ErrInvalidEntry, i)
		}
	}
	first := logs[0].Index
	for i, l := range logs {
		if l.Index == 0 || l.Index > MaxIndex {
			return fmt.Errorf("%w: index %d", ErrInvalidEntry, l.Index)
		}
		if l.Index != first+uint64(i) {
			return fmt.Errorf("%w: entry %d of the call has index %d after %d", ErrNonContiguous, i, l.Index, logs[i-1].Index)
		}
		if !l.AppendedAt.IsZero() {
			if sec := l.AppendedAt.Unix(); sec < minUnixSeconds || sec > maxUnixSeconds {
				return fmt.Errorf("%w: index %d: AppendedAt %v", ErrInvalidEntry, l.Index, l.AppendedAt)
			}
		}
	}
	if first+uint64(len(logs))-1 > MaxIndex {
		return fmt.Errorf("%w: indexes up to %d", ErrInvalidEntry, first+uint64(len(logs))-1)
	}
	return nil
}

// placeLocked checks that an entry with index first can go next: it must
// follow the last index, unless the log is empty, when the offset-to-index
// mapping moves so that the next offset holds it. The caller holds wmu.
func (s *LogStore) placeLocked(first uint64) error {
	start, end := s.log.StartOffset(), s.log.EndOffset()
	if start < end {
		if last := uint64(end + s.base); first != last+1 {
			return fmt.Errorf("%w: StoreLogs from index %d, but the last index is %d", ErrNonContiguous, first, last)
		}
		return nil
	}
	if base := int64(first) - 1 - end; base != s.base {
		s.shapeMu.Lock()
		s.base = base
		s.shapeMu.Unlock()
	}
	return nil
}

// encodeEntries encodes every entry into one new buffer, which the cache
// then keeps, and returns each entry's slice of it. entrySize sizes the
// buffer exactly, so the only allocations are the buffer and the slice
// of values.
func encodeEntries(logs []*raft.Log) [][]byte {
	size := 0
	for _, l := range logs {
		size += entrySize(l)
	}
	buf := make([]byte, 0, size)
	values := make([][]byte, len(logs))
	for i, l := range logs {
		start := len(buf)
		buf = appendEntry(buf, l)
		values[i] = buf[start:len(buf):len(buf)]
	}
	return values
}

// appendEntriesLocked appends the encoded entries of logs, as one batch
// unless that would pass the log's batch limit, and caches each batch.
// The caller holds wmu.
func (s *LogStore) appendEntriesLocked(logs []*raft.Log, values [][]byte) error {
	limit := min(s.lim.MaxBatchBytes, s.lim.MaxRecordsBytes)
	for i := 0; i < len(values); {
		j := batchEnd(values, i, limit)
		if err := s.appendBatchLocked(logs[i:j], values[i:j:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// batchEnd returns the end of the batch that starts at values[i]: as many
// values as fit in limit with their framing, and at least one.
func batchEnd(values [][]byte, i, limit int) int {
	j, n := i, batchOverhead
	for j < len(values) && (j == i || n+len(values[j])+recordOverhead <= limit) {
		n += len(values[j]) + recordOverhead
		j++
	}
	return j
}

// appendBatchLocked appends the encoded entries of logs as one batch at
// the end of the log, checks the offsets it got, and caches it. The
// caller holds wmu.
func (s *LogStore) appendBatchLocked(logs []*raft.Log, values [][]byte) error {
	s.recs = s.recs[:0]
	for _, v := range values {
		s.recs = append(s.recs, storage.Record{Value: v})
	}
	want := s.log.EndOffset()
	res, err := s.log.Append(s.recs...)
	clear(s.recs)
	first, last := logs[0].Index, logs[len(logs)-1].Index
	if err != nil {
		return fmt.Errorf("raftstore: store logs %d to %d: %w", first, last, err)
	}
	if res.FirstOffset != want || res.LastOffset != want+int64(len(values))-1 {
		return fmt.Errorf("raftstore: store logs %d to %d: appended at offsets [%d, %d], want [%d, %d]", first, last, res.FirstOffset, res.LastOffset, want, want+int64(len(values))-1)
	}
	s.cache.put(&cachedBatch{base: res.FirstOffset, values: values})
	return nil
}
