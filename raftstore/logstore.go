package raftstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// Names inside a LogStore's directory.
const (
	// LogDir is the storage.Log that holds the entries.
	LogDir = "log"
	// CutFile is the redo record of a DeleteRange from the back that cuts
	// inside a batch; it exists only while such a cut is in progress.
	CutFile = "tail-cut"
)

// MaxIndex is the largest raft index a LogStore accepts (2^62): far
// beyond any log, and small enough that index arithmetic on int64
// offsets cannot overflow.
const MaxIndex = 1 << 62

// batchOverhead over-estimates what the batch header and one record's
// framing add to the values, to split a StoreLogs call that would pass
// the log's batch limit.
const (
	batchOverhead  = segment.HeaderSize + 64
	recordOverhead = 32
)

// LogStore is a raft.LogStore and raft.MonotonicLogStore over one
// storage.Log. See the package doc for the mapping of indexes to offsets,
// the durability and the concurrency rules.
type LogStore struct {
	dir    string
	fs     vfs.FS
	mode   os.FileMode
	log    *storage.Log
	lim    segment.Limits
	codec  segment.Codec
	noSync bool

	// wmu serializes writers: StoreLogs, DeleteRange and Close. Helpers
	// that need it end in Locked.
	wmu sync.Mutex
	// failed is set when a cut from the back stopped half-way: writes
	// refuse until a reopen finishes the cut. Guarded by wmu.
	failed error
	// recs is StoreLogs' reused record slice. Guarded by wmu.
	recs []storage.Record

	// shapeMu guards base and closed. Writers hold it exclusively (with
	// wmu) to change the offset-to-index mapping (base) or to replace
	// entries at the back; readers (GetLog, FirstIndex, LastIndex) hold it
	// shared, so that they never map an index with a stale base or read a
	// batch while it is cut. Appends at the end and deletions from the
	// front do not take it: storage publishes both atomically.
	shapeMu sync.RWMutex
	// base maps offsets to indexes: index = offset + 1 + base. It is 0
	// unless the log was emptied and raft then stored an entry that does
	// not follow the old end (see the package doc).
	base   int64
	closed bool

	cache  *batchCache
	misses recentMisses
}

// OpenLogStore opens (creating if needed) the log store in dir: the
// storage.Log in dir/log, and the redo record of a cut from the back
// (dir/tail-cut) while one is in progress. It finishes a cut that a crash
// interrupted, then reads the first and last entries to learn (and check)
// the mapping of offsets to raft indexes. A second process opening the
// same directory gets storage.ErrLocked.
func OpenLogStore(dir string, opts Options) (*LogStore, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := vfs.MkdirAllDurable(opts.Log.FS, dir, opts.Log.DirMode); err != nil {
		return nil, fmt.Errorf("raftstore: open %s: %w", dir, err)
	}
	// StoreLogs syncs itself, once per call (Log.Sync: one fdatasync,
	// shared by concurrent callers), after the call's batches.
	lopts := opts.Log
	lopts.Sync = storage.SyncNever
	l, err := storage.Open(filepath.Join(dir, LogDir), lopts)
	if err != nil {
		return nil, fmt.Errorf("raftstore: open %s: %w", dir, err)
	}
	s := &LogStore{
		dir:    dir,
		fs:     opts.Log.FS,
		mode:   opts.Log.FileMode,
		log:    l,
		lim:    opts.Log.Limits,
		codec:  opts.Log.Compression,
		noSync: opts.NoSync,
		cache:  newBatchCache(opts.CacheBatches),
	}
	if err := s.resumeCut(); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("raftstore: open %s: %w", dir, err)
	}
	if err := s.loadBase(); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("raftstore: open %s: %w", dir, err)
	}
	return s, nil
}

// loadBase learns the offset-to-index mapping from the first entry and
// checks it against the last one.
func (s *LogStore) loadBase() error {
	end := s.log.EndOffset()
	start := s.log.StartOffset()
	if start >= end {
		s.base = 0
		return nil
	}
	first, err := s.valueIndex(start)
	if err != nil {
		return err
	}
	s.base = int64(first) - 1 - start
	last, err := s.valueIndex(end - 1)
	if err != nil {
		return err
	}
	if want := uint64(end + s.base); last != want {
		return fmt.Errorf("%w: the entry at offset %d has index %d, the entry at offset %d has index %d, want %d", ErrCorrupt, start, first, end-1, last, want)
	}
	return nil
}

func (s *LogStore) valueIndex(off int64) (uint64, error) {
	b, err := s.readBatch(off)
	if err != nil {
		return 0, err
	}
	idx, err := entryIndex(b.values[off-b.base])
	if err != nil {
		return 0, fmt.Errorf("offset %d: %w", off, err)
	}
	return idx, nil
}

// FirstIndex returns the index of the first entry, 0 when the store is
// empty. Deleting a prefix frees whole segments only, so FirstIndex may
// stay below the max of the last DeleteRange (see the package doc).
func (s *LogStore) FirstIndex() (uint64, error) {
	first, _, err := s.bounds()
	return first, err
}

// LastIndex returns the index of the last entry, 0 when the store is
// empty.
func (s *LogStore) LastIndex() (uint64, error) {
	_, last, err := s.bounds()
	return last, err
}

// bounds returns the indexes of the first and last entries, both 0 when
// the store is empty.
func (s *LogStore) bounds() (first, last uint64, err error) {
	s.shapeMu.RLock()
	defer s.shapeMu.RUnlock()
	if s.closed {
		return 0, 0, ErrClosed
	}
	end := s.log.EndOffset()
	start := s.log.StartOffset()
	if start >= end {
		return 0, 0, nil
	}
	return uint64(start + 1 + s.base), uint64(end + s.base), nil
}

// offsetOf maps an index to its offset; ok is false for an index that
// no offset can hold. The caller holds shapeMu or wmu.
func (s *LogStore) offsetOf(index uint64) (off int64, ok bool) {
	if index == 0 || index > MaxIndex {
		return 0, false
	}
	a := int64(index) - 1
	off = a - s.base
	if (s.base < 0 && off < a) || (s.base > 0 && off > a) || off < 0 {
		return 0, false
	}
	return off, true
}

func (s *LogStore) writableLocked() error {
	if s.closed {
		return ErrClosed
	}
	if s.failed != nil {
		return fmt.Errorf("%w: %w", ErrFailed, s.failed)
	}
	return nil
}

// Close closes the log (cleanly: the next open reads no data). Later
// calls of any method return ErrClosed; Close itself may be called again.
func (s *LogStore) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.shapeMu.Lock()
	defer s.shapeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.cache.clear()
	if err := s.log.Close(); err != nil {
		return fmt.Errorf("raftstore: close %s: %w", s.dir, err)
	}
	return nil
}

// IsMonotonic reports true: the store keeps indexes dense, so raft removes
// every entry after restoring a snapshot instead of leaving a gap
// (raft.MonotonicLogStore).
func (s *LogStore) IsMonotonic() bool { return true }

var (
	_ raft.LogStore          = (*LogStore)(nil)
	_ raft.MonotonicLogStore = (*LogStore)(nil)
)
