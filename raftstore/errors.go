package raftstore

import (
	"errors"

	"github.com/seglog/seglog/storage"
)

var (
	// ErrKeyNotFound is returned by StableStore.Get and GetUint64 for a
	// key that was never set. Its message is exactly "not found": raft
	// compares err.Error() with that string (as raft-boltdb's error of
	// the same name, and raft's InmemStore, answer), so that an unset
	// term or vote is told apart from a failed read.
	ErrKeyNotFound = errors.New("not found")

	// ErrNonContiguous is returned by StoreLogs when the entries of the
	// call do not follow each other, or the first does not follow
	// LastIndex (LastIndex + 1 is required unless the store is empty, as
	// in raft-wal). Nothing is stored.
	ErrNonContiguous = errors.New("raftstore: log indexes not contiguous")

	// ErrInvalidEntry is returned by StoreLogs for an entry it cannot
	// store: index 0 (raft's indexes start at 1) or beyond MaxIndex, or
	// an AppendedAt outside the years 1 to 292,277,026,596.
	ErrInvalidEntry = errors.New("raftstore: invalid log entry")

	// ErrUnsupportedRange is returned by DeleteRange for a range that is
	// neither a prefix nor a suffix of the log (raft only deletes those).
	ErrUnsupportedRange = errors.New("raftstore: only a prefix or a suffix of the log can be deleted")

	// ErrCorrupt is wrapped by errors about data on disk that cannot be
	// what this package wrote. It wraps storage.ErrCorrupt, so either
	// sentinel matches.
	ErrCorrupt = corruptError{}

	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("raftstore: closed")

	// ErrFailed is returned by writes after a DeleteRange from the back
	// stopped half-way (between cutting a batch and re-appending the
	// part of it that is kept): the store refuses writes until it is
	// reopened, and Open finishes the cut from its redo record.
	ErrFailed = errors.New("raftstore: a tail cut stopped half-way, reopen the store")

	// ErrLocked is returned by OpenStableStore (and Open) when another
	// StableStore, in this process or another, has the directory open.
	// (The LogStore's storage.Log has its own lock: storage.ErrLocked.)
	ErrLocked = errors.New("raftstore: directory in use by another stable store")

	// ErrInvalidOptions reports Options that cannot be used.
	ErrInvalidOptions = errors.New("raftstore: invalid options")
)

// corruptError is ErrCorrupt: its own message, and Is storage.ErrCorrupt.
type corruptError struct{}

func (corruptError) Error() string { return "raftstore: corrupt data" }

func (corruptError) Is(target error) bool { return target == storage.ErrCorrupt }
