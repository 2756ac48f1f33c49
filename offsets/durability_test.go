package offsets

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs/faultfs"
)

// TestFailedSyncIsNotVisible: a write whose fsync fails must not show in
// the reads that retention and consumers rely on (MinCommitted, Fetch,
// Readers, Positions): the retention cleaner deletes segments below
// MinCommitted, so answering from a commit that a power cut can lose would
// lose records. The store stays fail-stop.
func TestFailedSyncIsNotVisible(t *testing.T) {
	type fetch struct {
		group     string
		partition int32
		offset    int64 // -1: ErrNoCommit
	}
	cases := []struct {
		name    string
		op      func(s *Store) error // fails: its fsync fails
		readers []string
		min0    int64 // MinCommitted("t", 0)
		fetches []fetch
	}{
		{"commit forward", func(s *Store) error { return s.Commit("a", "t", 0, 20, "") },
			[]string{"a", "b"}, 10, []fetch{{"a", 0, 10}}},
		{"batch", func(s *Store) error {
			return s.CommitBatch("a", []Commit{{"t", 0, 25, ""}, {"t", 1, 5, ""}})
		}, []string{"a", "b"}, 10, []fetch{{"a", 0, 10}, {"a", 1, -1}}},
		{"unsubscribe the slowest group", func(s *Store) error { return s.Unsubscribe("a", "t") },
			[]string{"a", "b"}, 10, []fetch{{"a", 0, 10}}},
		{"delete the slowest group", func(s *Store) error { return s.DeleteGroup("a") },
			[]string{"a", "b"}, 10, []fetch{{"a", 0, 10}}},
		{"subscribe", func(s *Store) error { return s.Subscribe("c", "t") },
			[]string{"a", "b"}, 10, []fetch{{"c", 0, -1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fs := faultfs.New(nil)
			s := openT(t, dir, Options{FS: fs})
			require.NoError(t, s.Commit("a", "t", 0, 10, ""))
			require.NoError(t, s.Commit("b", "t", 0, 30, ""))
			fs.FailAll(faultfs.OpSync, journalPrefix, syscall.EIO)

			require.ErrorIs(t, c.op(s), syscall.EIO)

			check := func(s *Store, when string) {
				off, ok := s.MinCommitted("t", 0)
				assert.True(t, ok, when)
				assert.Equal(t, c.min0, off, "%s: MinCommitted must not count the write whose fsync failed", when)
				assert.Equal(t, c.readers, s.Readers("t"), when)
				for _, f := range c.fetches {
					p, err := s.Fetch(f.group, "t", f.partition)
					if f.offset < 0 {
						assert.ErrorIs(t, err, ErrNoCommit, "%s: Fetch(%s, t, %d)", when, f.group, f.partition)
						continue
					}
					require.NoError(t, err, when)
					assert.Equal(t, f.offset, p.Offset, "%s: Fetch(%s, t, %d)", when, f.group, f.partition)
				}
			}
			check(s, "after the failure")
			assert.ErrorIs(t, s.Commit("a", "t", 0, 40, ""), syscall.EIO, "the store is fail-stop")
			check(s, "after a commit refused by the sticky failure")
			assert.Error(t, s.Close())
		})
	}
}

// TestDeferredSyncVisibility: without per-commit fsync (SyncNever), a commit
// shows in the reads only once an fsync covers it: Sync, a compaction (its
// snapshot holds everything) or Close (then the next Open). A failed Sync
// shows nothing.
func TestDeferredSyncVisibility(t *testing.T) {
	cases := []struct {
		name    string
		durable func(s *Store, fs *faultfs.FS) error
		visible bool
	}{
		{"sync", func(s *Store, _ *faultfs.FS) error { return s.Sync() }, true},
		{"compaction", func(s *Store, _ *faultfs.FS) error { return s.Compact() }, true},
		{"failed sync", func(s *Store, fs *faultfs.FS) error {
			fs.FailAll(faultfs.OpSync, journalPrefix, syscall.EIO)
			return s.Sync()
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := faultfs.New(nil)
			s := openT(t, t.TempDir(), Options{FS: fs, Sync: SyncNever})
			defer s.Close()
			require.NoError(t, s.Commit("a", "t", 0, 10, ""))
			require.NoError(t, s.Sync())
			require.NoError(t, s.Commit("a", "t", 0, 20, ""))
			require.NoError(t, s.Commit("b", "t", 1, 5, ""))

			off, ok := s.MinCommitted("t", 0)
			assert.Equal(t, []any{int64(10), true}, []any{off, ok}, "before the fsync: only the durable commit counts")
			p, err := s.Fetch("a", "t", 0)
			require.NoError(t, err)
			assert.Equal(t, int64(10), p.Offset)
			_, err = s.Fetch("b", "t", 1)
			assert.ErrorIs(t, err, ErrNoCommit)
			assert.Equal(t, []string{"a"}, s.Readers("t"))

			err = c.durable(s, fs)
			want := map[key]val{{"a", "t", 0}: {10, ""}}
			if c.visible {
				require.NoError(t, err)
				want = map[key]val{{"a", "t", 0}: {20, ""}, {"b", "t", 1}: {5, ""}}
			} else {
				require.Error(t, err)
			}
			assert.Equal(t, want, snapshotOf(s))
			off, ok = s.MinCommitted("t", 0)
			assert.True(t, ok)
			if c.visible {
				assert.Equal(t, int64(0), off, "b reads t and has no commit on partition 0")
			} else {
				assert.Equal(t, int64(10), off)
			}
		})
	}
}

// TestNoopWithPendingWrites: Subscribe, Unsubscribe and DeleteGroup skip
// the journal when the state shows they change nothing, but the state is
// the durable one: with a write pending that it does not show yet, they
// must be appended, or the pending write would win.
func TestNoopWithPendingWrites(t *testing.T) {
	cases := []struct {
		name    string
		durable func(s *Store) error // then Sync
		pending func(s *Store) error // not synced
		op      func(s *Store) error
		readers []string
	}{
		{"subscribe after a pending unsubscribe",
			func(s *Store) error { return s.Subscribe("g", "t") },
			func(s *Store) error { return s.Unsubscribe("g", "t") },
			func(s *Store) error { return s.Subscribe("g", "t") },
			[]string{"g"}},
		{"unsubscribe after a pending subscribe",
			func(s *Store) error { return nil },
			func(s *Store) error { return s.Subscribe("g", "t") },
			func(s *Store) error { return s.Unsubscribe("g", "t") },
			nil},
		{"delete a group created by a pending commit",
			func(s *Store) error { return nil },
			func(s *Store) error { return s.Commit("g", "t", 0, 5, "") },
			func(s *Store) error { return s.DeleteGroup("g") },
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, Options{Sync: SyncNever})
			require.NoError(t, c.durable(s))
			require.NoError(t, s.Sync())
			require.NoError(t, c.pending(s))
			require.NoError(t, c.op(s))
			require.NoError(t, s.Sync())
			assert.Equal(t, c.readers, s.Readers("t"))
			require.NoError(t, s.Close())
			s = openT(t, dir, Options{})
			assert.Equal(t, c.readers, s.Readers("t"), "after a reopen")
			require.NoError(t, s.Close())
		})
	}
}
