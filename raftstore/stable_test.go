package raftstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openStableT(t *testing.T, dir string) *StableStore {
	t.Helper()
	s, err := OpenStableStore(dir, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStableStore(t *testing.T) {
	dir := t.TempDir()
	s := openStableT(t, dir)

	// Unset keys: "not found", the message raft compares.
	_, err := s.Get([]byte("CurrentTerm"))
	require.ErrorIs(t, err, ErrKeyNotFound)
	assert.Equal(t, "not found", err.Error())
	v, err := s.GetUint64([]byte("CurrentTerm"))
	require.ErrorIs(t, err, ErrKeyNotFound)
	assert.Zero(t, v)

	require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 7))
	require.NoError(t, s.Set([]byte("LastVoteCand"), []byte("node-2")))
	require.NoError(t, s.Set([]byte("empty"), []byte{}))
	require.NoError(t, s.Set([]byte{}, []byte("empty key")))
	require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 8), "overwrite")

	check := func(s *StableStore) {
		t.Helper()
		v, err := s.GetUint64([]byte("CurrentTerm"))
		require.NoError(t, err)
		assert.Equal(t, uint64(8), v)
		b, err := s.Get([]byte("LastVoteCand"))
		require.NoError(t, err)
		assert.Equal(t, []byte("node-2"), b)
		b, err = s.Get([]byte("empty"))
		require.NoError(t, err, "an empty value is set, not missing")
		assert.Empty(t, b)
		b, err = s.Get([]byte{})
		require.NoError(t, err)
		assert.Equal(t, []byte("empty key"), b)
		// Set and SetUint64 share the key space.
		b, err = s.Get([]byte("CurrentTerm"))
		require.NoError(t, err)
		assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 8}, b)
		_, err = s.GetUint64([]byte("LastVoteCand"))
		assert.Error(t, err, "not 8 bytes")
	}
	check(s)

	// Values are copies both ways.
	val := []byte("abc")
	require.NoError(t, s.Set([]byte("k"), val))
	val[0] = 'x'
	got, err := s.Get([]byte("k"))
	require.NoError(t, err)
	assert.Equal(t, []byte("abc"), got)
	got[1] = 'y'
	got, err = s.Get([]byte("k"))
	require.NoError(t, err)
	assert.Equal(t, []byte("abc"), got)

	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	s = openStableT(t, dir)
	check(s)
}

func TestStableStoreOnDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, StableFile)
	s := openStableT(t, dir)
	require.NoError(t, s.SetUint64([]byte("t"), 1))
	require.NoError(t, s.Set([]byte("v"), []byte("node-1")))

	_, err := OpenStableStore(dir, Options{})
	assert.ErrorIs(t, err, ErrLocked, "one owner at a time")
	require.NoError(t, s.Close())

	// A temporary file that an interrupted compaction left is removed.
	leftover := filepath.Join(dir, StableFile+".123-4.tmp")
	require.NoError(t, os.WriteFile(leftover, []byte("half"), 0o600))
	s = openStableT(t, dir)
	assert.NoFileExists(t, leftover)
	require.NoError(t, s.SetUint64([]byte("t"), 2))
	require.NoError(t, s.Close())
	good, err := os.ReadFile(path)
	require.NoError(t, err)

	reopen := func(b []byte) (*StableStore, error) {
		t.Helper()
		require.NoError(t, os.WriteFile(path, b, 0o600))
		return OpenStableStore(dir, Options{})
	}
	value := func(s *StableStore, key string) uint64 {
		t.Helper()
		v, err := s.GetUint64([]byte(key))
		require.NoError(t, err)
		return v
	}

	// A last Set cut short by a crash (never acknowledged) is dropped,
	// and the next Set follows the last whole record.
	last := len(appendJournalRecord(nil, []byte("t"), make([]byte, 8)))
	for name, b := range map[string][]byte{
		"record cut":          good[:len(good)-3],
		"only its length":     good[:len(good)-last+2],
		"zeros after the cut": append(append([]byte(nil), good[:len(good)-5]...), make([]byte, 100)...),
		"zeros after the end": append(append([]byte(nil), good[:len(good)-last]...), make([]byte, 100)...),
	} {
		s, err := reopen(b)
		require.NoError(t, err, name)
		assert.Equal(t, uint64(1), value(s, "t"), name)
		require.NoError(t, s.SetUint64([]byte("x"), 5), name)
		require.NoError(t, s.Close())
		s, err = OpenStableStore(dir, Options{})
		require.NoError(t, err, name)
		assert.Equal(t, uint64(5), value(s, "x"), name)
		assert.Equal(t, uint64(1), value(s, "t"), name)
		require.NoError(t, s.Close())
	}

	// Damage elsewhere is refused, never read as empty (which would let
	// the node vote twice in a term).
	flip := func(i int) []byte { b := append([]byte(nil), good...); b[i] ^= 1; return b }
	for name, b := range map[string][]byte{
		"bit flip in the first record": flip(journalHeader + 6),
		"bit flip in the header":       flip(1),
		"empty":                        {},
		"part of the header":           good[:3],
		"another version":              flip(4),
	} {
		_, err := reopen(b)
		assert.ErrorIs(t, err, ErrCorrupt, name)
	}
}

func TestStableStoreCompaction(t *testing.T) {
	dir := t.TempDir()
	s := openStableT(t, dir)
	require.NoError(t, s.Set([]byte("cand"), []byte("node-3")))
	big := make([]byte, 1000) // 200 records of 1 KiB pass the threshold (64 KiB) thrice
	for i := uint64(1); i <= 200; i++ {
		require.NoError(t, s.Set([]byte("big"), big))
		require.NoError(t, s.SetUint64([]byte("CurrentTerm"), i))
	}
	fi, err := os.Stat(filepath.Join(dir, StableFile))
	require.NoError(t, err)
	assert.LessOrEqual(t, fi.Size(), int64(stableCompactBytes), "compacted")
	require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 201), "Sets go to the new journal")
	require.NoError(t, s.Close())

	s = openStableT(t, dir)
	v, err := s.GetUint64([]byte("CurrentTerm"))
	require.NoError(t, err)
	assert.Equal(t, uint64(201), v)
	b, err := s.Get([]byte("cand"))
	require.NoError(t, err)
	assert.Equal(t, []byte("node-3"), b)
}
