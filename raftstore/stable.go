package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/vfs"
)

// StableFile is the StableStore's journal inside its directory.
const StableFile = "stable"

// stableCompactBytes is the journal size past which a Set rewrites it
// with one record per key. raft sets a key per election and vote, so this
// is reached after thousands of them.
const stableCompactBytes = 64 << 10

// StableStore is a crash-safe raft.StableStore: a small map of keys to
// values (raft keeps its current term, last vote term and last vote
// candidate there), held in memory and journaled to dir/stable. Each Set
// appends one checksummed record and fsyncs it before it returns (format.go
// draws the record); Open replays the journal, dropping a last record that
// a crash cut short (it was never acknowledged) and refusing damage
// anywhere else (ErrCorrupt), so a damaged file is never read as empty.
// When the journal passes 64 KiB, a Set rewrites it with one record per
// key, atomically (vfs.WriteFileAtomic).
//
// Set and SetUint64 share one key space; SetUint64 stores 8 bytes,
// big-endian, as raft-boltdb does. Get and GetUint64 of a key never set
// return ErrKeyNotFound ("not found", which raft recognizes).
//
// All methods are safe for concurrent use. Sets are serialized; Gets do
// not wait for a Set's fsync.
type StableStore struct {
	dir  string
	path string
	fs   vfs.FS
	mode os.FileMode
	lock *os.File // flock on dir: one owner at a time

	// wmu serializes Set and Close, and guards the journal below.
	wmu    sync.Mutex
	f      vfs.File // the journal, open for appending
	size   int64    // bytes of the journal; the next record goes here
	failed error    // an fsync or a compaction failed: Sets refuse until reopened

	// mu guards kv and closed: Set holds it only to publish a durable value.
	mu     sync.RWMutex
	kv     map[string][]byte
	closed bool
}

// OpenStableStore opens (creating if needed) the stable store in dir. It
// takes an exclusive lock on dir (a second owner gets ErrLocked), removes
// temporary files that an interrupted compaction left, replays
// dir/stable and truncates a last record that a crash cut short.
func OpenStableStore(dir string, opts Options) (*StableStore, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	fsys := opts.Log.FS
	if err := vfs.MkdirAllDurable(fsys, dir, opts.Log.DirMode); err != nil {
		return nil, fmt.Errorf("raftstore: open stable store %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &StableStore{dir: dir, path: filepath.Join(dir, StableFile), fs: fsys, mode: opts.Log.FileMode, lock: lock}
	if err := s.load(); err != nil {
		if s.f != nil {
			_ = s.f.Close()
		}
		_ = lock.Close()
		return nil, fmt.Errorf("raftstore: open stable store %s: %w", dir, err)
	}
	return s, nil
}

func (s *StableStore) load() error {
	entries, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, StableFile+".") && strings.HasSuffix(n, vfs.TempSuffix) {
			if err := s.fs.Remove(filepath.Join(s.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	data, err := vfs.ReadFile(s.fs, s.path, maxStableBytes)
	if errors.Is(err, os.ErrNotExist) {
		// A new journal: its header and its directory entry durable
		// before any Set is acknowledged.
		if err := vfs.WriteFileAtomic(s.fs, s.path, appendJournalHeader(nil), s.mode); err != nil {
			return err
		}
		data = appendJournalHeader(nil)
	} else if err != nil {
		return err
	}
	kv, good, err := replayJournal(data)
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	s.kv = kv
	if s.f, err = s.fs.OpenFile(s.path, os.O_RDWR, 0); err != nil {
		return err
	}
	if good < len(data) {
		// A Set cut short: never acknowledged, gone for good before the
		// next record goes there.
		if err := s.f.Truncate(int64(good)); err != nil {
			return err
		}
		if err := s.f.Sync(); err != nil {
			return err
		}
	}
	s.size = int64(good)
	return nil
}

// Set stores val under key, durably before it returns: one journal record
// and an fsync (and, past 64 KiB of journal, a compaction).
func (s *StableStore) Set(key []byte, val []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.f == nil {
		return ErrClosed
	}
	if s.failed != nil {
		return fmt.Errorf("raftstore: set %q: %w", key, s.failed)
	}
	rec := appendJournalRecord(nil, key, val)
	if s.size+int64(len(rec)) > maxStableBytes {
		return fmt.Errorf("raftstore: set %q: the stable store would pass its %d-byte limit", key, maxStableBytes)
	}
	if _, err := s.f.WriteAt(rec, s.size); err != nil {
		// Cut what part of rec was written, so that the next record
		// follows the last good one with nothing after it. (A crash
		// before that leaves a cut record, which Open drops.)
		if terr := s.f.Truncate(s.size); terr != nil {
			s.failed = fmt.Errorf("write %s: %w; then truncate: %w", s.path, err, terr)
		}
		return fmt.Errorf("raftstore: set %q: %w", key, err)
	}
	if err := s.f.Sync(); err != nil {
		// The kernel may have dropped the page: nothing written since the
		// last good fsync can be called durable until a reopen reads it.
		s.failed = fmt.Errorf("fsync %s: %w", s.path, err)
		return fmt.Errorf("raftstore: set %q: %w", key, s.failed)
	}
	s.size += int64(len(rec))
	s.mu.Lock()
	s.kv[string(key)] = append([]byte{}, val...)
	s.mu.Unlock()
	if s.size > stableCompactBytes {
		if err := s.compactLocked(); err != nil {
			// The Set is durable; the journal may no longer be the file
			// at path (a rename whose directory fsync failed), so no
			// further Set may go to it.
			s.failed = fmt.Errorf("compact %s: %w", s.path, err)
		}
	}
	return nil
}

// compactLocked rewrites the journal with one record per key and switches
// appends to the new file. The caller holds wmu.
func (s *StableStore) compactLocked() error {
	s.mu.RLock()
	keys := make([]string, 0, len(s.kv))
	for k := range s.kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := appendJournalHeader(nil)
	for _, k := range keys {
		b = appendJournalRecord(b, []byte(k), s.kv[k])
	}
	s.mu.RUnlock()
	if err := vfs.WriteFileAtomic(s.fs, s.path, b, s.mode); err != nil {
		return err
	}
	f, err := s.fs.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	_ = s.f.Close()
	s.f, s.size = f, int64(len(b))
	return nil
}

// Get returns a copy of the value of key, or ErrKeyNotFound.
func (s *StableStore) Get(key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	v, ok := s.kv[string(key)]
	if !ok {
		return nil, ErrKeyNotFound
	}
	return append([]byte{}, v...), nil
}

// SetUint64 stores val under key as 8 bytes, big-endian.
func (s *StableStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the value SetUint64 stored under key, or 0 and
// ErrKeyNotFound. A value that is not 8 bytes long is an error.
func (s *StableStore) GetUint64(key []byte) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	v, ok := s.kv[string(key)]
	if !ok {
		return 0, ErrKeyNotFound
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftstore: get %q as uint64: the value has %d bytes, not 8", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Close closes the journal and releases the directory lock. Later calls
// return ErrClosed; Close itself may be called again.
func (s *StableStore) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.f.Close()
	s.f = nil
	return errors.Join(err, s.lock.Close())
}

var _ raft.StableStore = (*StableStore)(nil)

// lockDir takes an exclusive advisory lock (flock) on dir itself, so that
// no lock file is added; the kernel drops it when the process dies.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("raftstore: lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("raftstore: lock %s: %w", dir, err)
	}
	return f, nil
}
