package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Idempotent appends. A batch with a producer id (segment.Header.HasProducer)
// carries the producer's epoch and the sequence number of its first record.
// The log remembers, per producer, its epoch and its last
// maxProducerBatches accepted batches, and on each append:
//
//   - the same epoch and sequence range as one of them: a duplicate (a
//     producer retrying after a lost acknowledgement). Nothing is written;
//     the original offsets are returned with AppendResult.Duplicate set.
//   - an epoch below the producer's: ErrProducerFenced.
//   - a higher epoch: the producer starts again; its first sequence must be 0.
//   - the same epoch: the first sequence must follow the last batch's last
//     sequence (int32, wrapping to 0), else ErrOutOfOrderSequence.
//   - a producer the log does not know: accepted at any sequence (its state
//     may have expired).
//
// The state is snapshotted to <offset>.snapshot (offset: the log end when
// written) at every roll and at Close, and rebuilt on open from the newest
// valid snapshot plus the batches after it. A snapshot that fails its
// checksum is ignored. Truncation rebuilds the state from a snapshot at or
// below the new end. Producers whose batches all lie below the start offset
// expire after Options.ProducerExpiry. Batches without a producer id skip
// all of this.

// maxProducerBatches is how many recent batches per producer are kept for
// duplicate detection (as Kafka's max.in.flight.requests.per.connection).
const maxProducerBatches = 5

var (
	// ErrOutOfOrderSequence is returned for a producer batch whose first
	// sequence does not follow the producer's last accepted batch.
	ErrOutOfOrderSequence = errors.New("storage: out of order sequence number")
	// ErrProducerFenced is returned for a producer batch with an epoch
	// below the latest seen for that producer id.
	ErrProducerFenced = errors.New("storage: producer fenced by a newer epoch")
)

type producerBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

type producerEntry struct {
	epoch    int16
	lastSeen int64           // ms: wall clock at append, or the batch's max timestamp when rebuilt
	batches  []producerBatch // oldest first, at most maxProducerBatches
}

func (e *producerEntry) lastOffset() int64 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastOffset
}

// producerState is guarded by the log's writeMu.
type producerState struct {
	m map[int64]*producerEntry
}

func newProducerState() *producerState { return &producerState{m: map[int64]*producerEntry{}} }

// check decides what to do with a producer batch: a duplicate (with the
// original offsets), an error, or nil to append.
func (ps *producerState) check(h segment.Header) (dup *producerBatch, err error) {
	e := ps.m[h.ProducerID]
	if e == nil {
		return nil, nil
	}
	switch {
	case h.ProducerEpoch < e.epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d, latest is %d", ErrProducerFenced, h.ProducerID, h.ProducerEpoch, e.epoch)
	case h.ProducerEpoch > e.epoch:
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d starts epoch %d at sequence %d, not 0", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil, nil
	}
	for i := range e.batches {
		b := &e.batches[i]
		if b.firstSeq == h.BaseSequence && b.lastSeq == h.LastSequence() {
			return b, nil
		}
	}
	if n := len(e.batches); n > 0 {
		want := nextSeq(e.batches[n-1].lastSeq)
		if h.BaseSequence != want {
			return nil, fmt.Errorf("%w: producer %d epoch %d sent sequence %d, expected %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, want)
		}
	}
	return nil, nil
}

func nextSeq(s int32) int32 {
	if s == 1<<31-1 {
		return 0
	}
	return s + 1
}

// update records an appended (or replayed) producer batch.
func (ps *producerState) update(h segment.Header, seen int64) {
	e := ps.m[h.ProducerID]
	if e == nil {
		e = &producerEntry{}
		ps.m[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.epoch {
		e.epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	if len(e.batches) == maxProducerBatches {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:maxProducerBatches-1]
	}
	e.batches = append(e.batches, producerBatch{firstSeq: h.BaseSequence, lastSeq: h.LastSequence(), firstOffset: h.BaseOffset, lastOffset: h.LastOffset()})
	e.lastSeen = max(e.lastSeen, seen)
}

// expire removes producers whose batches all lie below start and that were
// last seen before cutoff (ms).
func (ps *producerState) expire(start, cutoff int64) {
	for id, e := range ps.m {
		if e.lastOffset() < start && e.lastSeen < cutoff {
			delete(ps.m, id)
		}
	}
}

// Producer snapshots (<offset>.snapshot; the format in codec.go).
const (
	snapshotSuffix   = ".snapshot"
	snapshotMagic    = "SGPS"
	snapshotVersion  = 1
	snapshotMaxBytes = 64 << 20
	snapshotsKept    = 2
)

// snapshotOffsets lists the offsets of the snapshot files in dir, sorted.
func snapshotOffsets(fsys vfs.FS, dir string) ([]int64, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), snapshotSuffix) {
			continue
		}
		if off, ok := segment.ParseFileName(e.Name(), snapshotSuffix); ok {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out, nil
}

// writeProducerSnapshotLocked writes the state at the current end and keeps
// the newest snapshotsKept snapshots. The caller holds writeMu.
func (l *Log) writeProducerSnapshotLocked() error {
	end := l.end.Load()
	path := filepath.Join(l.dir, segment.FileName(end, snapshotSuffix))
	// No fsync: a snapshot only saves a rescan. One that a crash leaves
	// empty or torn fails its checksum and an older one is used instead.
	tmp := path + ".tmp"
	f, err := l.opts.FS.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, l.opts.FileMode)
	if err != nil {
		return fmt.Errorf("storage: write producer snapshot: %w", err)
	}
	_, err = f.Write(l.repl.producers.encode())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.opts.FS.Rename(tmp, path)
	}
	if err != nil {
		_ = l.opts.FS.Remove(tmp)
		return fmt.Errorf("storage: write producer snapshot: %w", err)
	}
	if n := len(l.repl.snapshots); n == 0 || l.repl.snapshots[n-1] != end {
		l.repl.snapshots = append(l.repl.snapshots, end)
	}
	for len(l.repl.snapshots) > snapshotsKept {
		_ = l.opts.FS.Remove(filepath.Join(l.dir, segment.FileName(l.repl.snapshots[0], snapshotSuffix)))
		l.repl.snapshots = l.repl.snapshots[1:]
	}
	return nil
}

// rebuildProducersLocked loads the newest valid snapshot at or below the end
// offset (removing those above it) and replays the producer batches after
// it. The caller holds writeMu (or is loading the log).
func (l *Log) rebuildProducersLocked() error {
	end := l.end.Load()
	ps, from := newProducerState(), l.start.Load()
	// The newest snapshot at or below the end wins; those above the end
	// (truncated away) and damaged ones go.
	for len(l.repl.snapshots) > 0 {
		off := l.repl.snapshots[len(l.repl.snapshots)-1]
		path := filepath.Join(l.dir, segment.FileName(off, snapshotSuffix))
		if off <= end {
			b, err := vfs.ReadFile(l.opts.FS, path, snapshotMaxBytes)
			if err == nil {
				var snap *producerState
				if snap, err = decodeProducerSnapshot(b); err == nil {
					ps, from = snap, max(off, l.start.Load())
					break
				}
			}
			if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, vfs.ErrTooLarge) {
				return fmt.Errorf("storage: %s: read producer snapshot: %w", l.dir, err)
			}
		}
		_ = l.opts.FS.Remove(path)
		l.repl.snapshots = l.repl.snapshots[:len(l.repl.snapshots)-1]
	}
	// Entries past the end are from batches that are gone.
	for id, e := range ps.m {
		k := 0
		for _, b := range e.batches {
			if b.lastOffset < end {
				e.batches[k] = b
				k++
			}
		}
		e.batches = e.batches[:k]
		if k == 0 && from > l.start.Load() {
			delete(ps.m, id)
		}
	}
	err := l.scanHeaders(from, end, func(h segment.Header) {
		if h.HasProducer() {
			ps.update(h, h.MaxTimestamp)
		}
	})
	if err != nil {
		return fmt.Errorf("storage: rebuild producer state: %w", err)
	}
	l.repl.producers = ps
	return nil
}

// scanHeaders calls fn with the header of every batch holding offsets in
// [from, end).
func (l *Log) scanHeaders(from, end int64, fn func(segment.Header)) error {
	var buf []byte
	for off := from; off < end; {
		data, err := l.readBounded(buf, off, 1<<20, end)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		sc := segment.ScanBuffer(data, segment.ScanOptions{File: l.dir, Limits: l.opts.Limits})
		for sc.Next() {
			if h := sc.Header(); h.LastOffset() >= off {
				fn(h)
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
		off = sc.NextOffset()
		buf = data
	}
	return nil
}
