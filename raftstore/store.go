package raftstore

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// DefaultSegmentBytes is the segment size a LogStore uses unless
// Options.Log.SegmentBytes says otherwise: smaller than storage's 1 GiB
// default, because raft's compaction frees whole segments only.
const DefaultSegmentBytes = 64 << 20

// Options configure a Store, a LogStore or a StableStore. The zero value
// is usable.
type Options struct {
	// Log configures the storage.Log that holds the entries. Its Sync is
	// ignored (StoreLogs syncs each call itself, see NoSync); ReadOnly is
	// refused.
	// SegmentBytes defaults to DefaultSegmentBytes. FS, FileMode and
	// DirMode apply to the StableStore and the redo record too.
	Log storage.Options
	// NoSync makes StoreLogs return without an fsync. Raft requires its
	// log to be durable when StoreLogs returns (a node that acknowledged
	// entries and lost them can make a committed entry disappear), so
	// this is for tests and benchmarks only.
	NoSync bool
	// CacheBatches is how many decoded batches GetLog keeps
	// (DefaultCacheBatches); negative: none. Memory is at most this many
	// times the largest batch (one StoreLogs call, capped by
	// Log.Limits.MaxBatchBytes).
	CacheBatches int
}

func (o Options) withDefaults() (Options, error) {
	if o.Log.ReadOnly {
		return o, fmt.Errorf("%w: a read-only log", ErrInvalidOptions)
	}
	if o.Log.FS == nil {
		o.Log.FS = vfs.Default
	}
	if o.Log.FileMode == 0 {
		o.Log.FileMode = vfs.DefaultFileMode
	}
	if o.Log.DirMode == 0 {
		o.Log.DirMode = vfs.DefaultDirMode
	}
	if o.Log.SegmentBytes == 0 {
		o.Log.SegmentBytes = DefaultSegmentBytes
	}
	if o.Log.Limits.MaxBatchBytes <= 0 {
		o.Log.Limits.MaxBatchBytes = segment.DefaultLimits.MaxBatchBytes
	}
	if o.Log.Limits.MaxRecordsBytes <= 0 {
		o.Log.Limits.MaxRecordsBytes = segment.DefaultLimits.MaxRecordsBytes
	}
	if o.CacheBatches == 0 {
		o.CacheBatches = DefaultCacheBatches
	}
	return o, nil
}

// Store is a LogStore and a StableStore in one directory: what
// raft.NewRaft takes as its logs and stable arguments.
type Store struct {
	*LogStore
	*StableStore
}

// Open opens (creating if needed) a Store in dir:
//
//	<dir>/
//	  stable      the StableStore's journal of keys and values (dir is flock'ed)
//	  tail-cut    the redo record of a cut from the back, while one runs
//	  log/        the storage.Log of the entries (see package storage)
func Open(dir string, opts Options) (*Store, error) {
	ss, err := OpenStableStore(dir, opts)
	if err != nil {
		return nil, err
	}
	ls, err := OpenLogStore(dir, opts)
	if err != nil {
		_ = ss.Close()
		return nil, err
	}
	return &Store{LogStore: ls, StableStore: ss}, nil
}

// Close closes both stores.
func (s *Store) Close() error {
	return errors.Join(s.LogStore.Close(), s.StableStore.Close())
}

var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
	_ raft.StableStore       = (*Store)(nil)
)
