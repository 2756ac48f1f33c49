package raftstore

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// GetLog reads the entry at index into out. An index outside [FirstIndex,
// LastIndex] returns raft.ErrLogNotFound itself (raft compares with ==).
// Entries of the last few batches stored or read in index order come from
// a cache of decoded batches; any other read fetches the entry's batch and
// verifies its checksum (into a pooled buffer, unless the read follows
// the one before it, when the batch is kept in the cache). out never
// aliases the store's memory. Safe to call from any goroutine, beside
// writers.
func (s *LogStore) GetLog(index uint64, out *raft.Log) error {
	s.shapeMu.RLock()
	defer s.shapeMu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	off, ok := s.offsetOf(index)
	if !ok || off >= s.log.EndOffset() || off < s.log.StartOffset() {
		return raft.ErrLogNotFound
	}
	v := s.cache.get(off)
	if v == nil {
		if !s.misses.sequential(off) {
			// A read with no neighbour: decode it from a pooled buffer,
			// without copying or caching its batch.
			err := s.readEntry(off, out)
			if errors.Is(err, storage.ErrOffsetOutOfRange) {
				return raft.ErrLogNotFound // deleted from the front meanwhile
			}
			if err != nil {
				return fmt.Errorf("raftstore: get log %d (offset %d): %w", index, off, err)
			}
			return checkIndex(index, off, out)
		}
		b, err := s.readBatch(off)
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			return raft.ErrLogNotFound
		}
		if err != nil {
			return fmt.Errorf("raftstore: get log %d (offset %d): %w", index, off, err)
		}
		s.cache.put(b)
		v = b.values[off-b.base]
	}
	if err := decodeEntry(v, out); err != nil {
		return fmt.Errorf("raftstore: get log %d (offset %d): %w", index, off, err)
	}
	return checkIndex(index, off, out)
}

func checkIndex(index uint64, off int64, out *raft.Log) error {
	if out.Index != index {
		return fmt.Errorf("raftstore: get log %d (offset %d): %w: the entry there has index %d", index, off, ErrCorrupt, out.Index)
	}
	return nil
}

// batchReader is a reusable buffer and record iterator for reads that
// decode one entry of a batch.
type batchReader struct {
	buf []byte
	it  segment.RecordIter
}

var batchReaders = sync.Pool{New: func() any { return new(batchReader) }}

// maxPooledRead is the largest buffer returned to the pool.
const maxPooledRead = 1 << 20

// readEntry reads and verifies the batch holding offset off into a pooled
// buffer and decodes the entry at off into out (a copy).
func (s *LogStore) readEntry(off int64, out *raft.Log) error {
	r := batchReaders.Get().(*batchReader)
	defer func() {
		if cap(r.buf) <= maxPooledRead {
			batchReaders.Put(r)
		}
	}()
	data, err := s.log.ReadInto(r.buf, off, 1)
	if err != nil {
		return err
	}
	r.buf = data[:0]
	if len(data) == 0 {
		return fmt.Errorf("%w: offset %d", storage.ErrOffsetOutOfRange, off)
	}
	h, err := segment.ParseHeader(data, s.lim)
	if err != nil {
		return err
	}
	if h.Size() > len(data) {
		return fmt.Errorf("%w: batch of %d bytes, read %d", ErrCorrupt, h.Size(), len(data))
	}
	if err := r.it.Reset(data[:h.Size()], s.lim); err != nil {
		return err
	}
	for r.it.Next() {
		if rec := r.it.Record(); rec.Offset == off {
			return decodeEntry(rec.Value, out)
		}
	}
	if err := r.it.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: offset %d not in the batch read, [%d, %d)", ErrCorrupt, off, h.BaseOffset, h.NextOffset())
}

// readBatch reads and verifies the batch that holds offset off and splits
// it into its records' values, which alias memory of its own.
func (s *LogStore) readBatch(off int64) (*cachedBatch, error) {
	data, err := s.log.ReadInto(nil, off, 1)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: offset %d", storage.ErrOffsetOutOfRange, off)
	}
	h, err := segment.ParseHeader(data, s.lim)
	if err != nil {
		return nil, err
	}
	if h.Size() > len(data) {
		return nil, fmt.Errorf("%w: batch of %d bytes, read %d", ErrCorrupt, h.Size(), len(data))
	}
	// A fresh iterator: the values alias data or the iterator's own
	// decompression buffer, which nothing reuses.
	var it segment.RecordIter
	if err := it.Reset(data[:h.Size()], s.lim); err != nil {
		return nil, err
	}
	values := make([][]byte, 0, h.RecordCount)
	for it.Next() {
		r := it.Record()
		if r.Offset != h.BaseOffset+int64(len(values)) {
			return nil, fmt.Errorf("%w: record offset %d in the batch at %d", ErrCorrupt, r.Offset, h.BaseOffset)
		}
		values = append(values, r.Value)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	b := &cachedBatch{base: h.BaseOffset, values: values}
	if off < b.base || off-b.base >= int64(len(values)) {
		return nil, fmt.Errorf("%w: offset %d not in the batch read, [%d, %d)", ErrCorrupt, off, b.base, b.base+int64(len(values)))
	}
	return b, nil
}
