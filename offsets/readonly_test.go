package offsets

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileState is what a test compares of a file before and after.
type fileState struct {
	content string
	mode    os.FileMode
	modTime time.Time
}

// treeState maps every entry of dir to its content, mode and time.
func treeState(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]fileState{}
	for _, e := range entries {
		info, err := os.Lstat(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		fs := fileState{mode: info.Mode(), modTime: info.ModTime()}
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			fs.content = string(data)
		}
		out[e.Name()] = fs
	}
	return out
}

// copyDir copies the regular files of src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o640))
	}
	return dst
}

// storeWithHistory writes a store with a snapshot and a journal after it,
// closed; it returns the journal's generation.
func storeWithHistory(t *testing.T, dir string) uint64 {
	t.Helper()
	s := openT(t, dir, Options{})
	require.NoError(t, s.Commit("a", "t", 0, 1, "m"))
	require.NoError(t, s.Subscribe("idle", "u"))
	require.NoError(t, s.Compact())
	require.NoError(t, s.CommitBatch("b", []Commit{{"t", 0, 2, ""}, {"t", 1, 3, ""}}))
	gen := s.Stats().Generation
	require.NoError(t, s.Close())
	return gen
}

// TestOpenReadOnlyChangesNothing: whatever state the directory is in -
// including those Open repairs - OpenReadOnly and every read leave every
// byte, name, mode and time as they were, and answer what a writing Open
// would.
func TestOpenReadOnlyChangesNothing(t *testing.T) {
	appendTo := func(t *testing.T, path string, data []byte) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write(data)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	cases := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		opts    Options
		dropped bool // DroppedBytes > 0
	}{
		{"a closed store", func(t *testing.T, dir string) { storeWithHistory(t, dir) }, Options{}, false},
		{"an empty directory", func(t *testing.T, dir string) {}, Options{}, false},
		{"a torn tail", func(t *testing.T, dir string) {
			gen := storeWithHistory(t, dir)
			appendTo(t, filepath.Join(dir, journalName(gen)), []byte("torn record"))
		}, Options{}, true},
		{"a temporary snapshot", func(t *testing.T, dir string) {
			storeWithHistory(t, dir)
			require.NoError(t, os.WriteFile(filepath.Join(dir, snapshotName+".tmp"), []byte("half"), 0o640))
		}, Options{}, false},
		{"an obsolete journal", func(t *testing.T, dir string) {
			storeWithHistory(t, dir)
			require.NoError(t, os.WriteFile(filepath.Join(dir, journalName(1)), appendJournalHeader(nil, 1), 0o640))
		}, Options{}, false},
		{"a lost journal header", func(t *testing.T, dir string) {
			gen := storeWithHistory(t, dir)
			require.NoError(t, os.Truncate(filepath.Join(dir, journalName(gen)), 0))
		}, Options{}, false},
		{"a compaction interrupted before its rename", func(t *testing.T, dir string) {
			gen := storeWithHistory(t, dir)
			require.NoError(t, os.WriteFile(filepath.Join(dir, journalName(gen+1)), appendJournalHeader(nil, gen+1), 0o640))
		}, Options{}, false},
		{"a corruption in the middle, RecoverCorrupt", func(t *testing.T, dir string) {
			gen := storeWithHistory(t, dir)
			path := filepath.Join(dir, journalName(gen))
			s := openT(t, dir, Options{})
			require.NoError(t, s.Commit("c", "t", 0, 4, ""))
			require.NoError(t, s.Close())
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte{'X'}, journalHeaderSize+20)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, Options{RecoverCorrupt: true}, true},
		{"a store open beside", func(t *testing.T, dir string) {
			storeWithHistory(t, dir)
			s := openT(t, dir, Options{})
			t.Cleanup(func() { _ = s.Close() })
		}, Options{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			before := treeState(t, dir)

			ro, err := OpenReadOnly(dir, c.opts)
			require.NoError(t, err)
			got := snapshotOf(ro)
			readers := readersOf(ro, "t", "u")
			for _, topic := range []string{"t", "u"} {
				ro.MinCommitted(topic, 0)
			}
			_, _ = ro.Fetch("a", "t", 0)
			require.NoError(t, ro.Refresh())
			st := ro.Stats()
			assert.True(t, st.ReadOnly)
			assert.Equal(t, c.dropped, st.DroppedBytes > 0, "DroppedBytes %d", st.DroppedBytes)
			for name, err := range map[string]error{
				"Commit":      ro.Commit("a", "t", 0, 9, ""),
				"CommitBatch": ro.CommitBatch("a", []Commit{{"t", 0, 9, ""}}),
				"Subscribe":   ro.Subscribe("a", "v"),
				"Unsubscribe": ro.Unsubscribe("a", "t"),
				"DeleteGroup": ro.DeleteGroup("a"),
				"DeleteTopic": ro.DeleteTopic("t"),
				"Sync":        ro.Sync(),
				"Compact":     ro.Compact(),
			} {
				assert.ErrorIs(t, err, ErrReadOnly, name)
			}
			require.NoError(t, ro.Close())
			assert.ErrorIs(t, ro.Close(), ErrClosed)
			assert.Equal(t, before, treeState(t, dir), "not a byte, name, mode or time changed")

			// A writing Open (on a copy) answers the same.
			s := openT(t, copyDir(t, dir), c.opts)
			assert.Equal(t, snapshotOf(s), got)
			assert.Equal(t, readersOf(s, "t", "u"), readers)
			require.NoError(t, s.Close())
		})
	}
}

// TestReadOnlyFollowsWriters: every read of a read-only store follows the
// journal: it sees each commit, deletion and subscription that a writing
// store acknowledged before the read, across compactions and from several
// writers, also when the directory had no store yet when it opened.
func TestReadOnlyFollowsWriters(t *testing.T) {
	dir := t.TempDir()
	ro, err := OpenReadOnly(dir, Options{})
	require.NoError(t, err)
	defer ro.Close()
	assert.Empty(t, snapshotOf(ro))

	w := openT(t, dir, Options{})
	require.NoError(t, w.Commit("g", "t", 0, 1, ""))
	want := map[key]val{{"g", "t", 0}: {1, ""}}
	assert.Equal(t, want, snapshotOf(ro), "a store created after the read-only open")

	steps := []struct {
		name string
		op   func(w, w2 *Store) error
		edit func(want map[key]val)
	}{
		{"commit", func(w, _ *Store) error { return w.Commit("g", "t", 1, 5, "x") },
			func(m map[key]val) { m[key{"g", "t", 1}] = val{5, "x"} }},
		{"compaction, then a commit", func(w, _ *Store) error {
			if err := w.Compact(); err != nil {
				return err
			}
			return w.Commit("g", "t", 0, 2, "")
		}, func(m map[key]val) { m[key{"g", "t", 0}] = val{2, ""} }},
		{"two compactions in a row", func(w, _ *Store) error {
			if err := w.Compact(); err != nil {
				return err
			}
			if err := w.Commit("h", "u", 0, 3, ""); err != nil {
				return err
			}
			return w.Compact()
		}, func(m map[key]val) { m[key{"h", "u", 0}] = val{3, ""} }},
		{"a second writer", func(_, w2 *Store) error { return w2.Commit("h", "u", 1, 4, "") },
			func(m map[key]val) { m[key{"h", "u", 1}] = val{4, ""} }},
		{"delete a group", func(w, _ *Store) error { return w.DeleteGroup("h") },
			func(m map[key]val) { delete(m, key{"h", "u", 0}); delete(m, key{"h", "u", 1}) }},
		{"delete a topic", func(_, w2 *Store) error { return w2.DeleteTopic("t") },
			func(m map[key]val) { clear(m) }},
	}
	w2 := openT(t, dir, Options{})
	for _, step := range steps {
		require.NoError(t, step.op(w, w2), step.name)
		step.edit(want)
		assert.Equal(t, want, snapshotOf(ro), step.name)
	}
	assert.Equal(t, w.Stats().Generation, ro.Stats().Generation)
	assert.Positive(t, ro.Stats().Reloads)

	// SyncNever: a commit shows once durable.
	n := openT(t, dir, Options{Sync: SyncNever})
	require.NoError(t, n.Commit("n", "t", 0, 7, ""))
	require.NoError(t, n.Sync())
	want[key{"n", "t", 0}] = val{7, ""}
	assert.Equal(t, want, snapshotOf(ro))
	for _, s := range []*Store{w, w2, n} {
		require.NoError(t, s.Close())
	}
	assert.Equal(t, want, snapshotOf(ro), "after the writers closed")
}

// TestOpenReadOnlyErrors: a missing directory, a corrupt journal and a
// closed read-only store.
func TestOpenReadOnlyErrors(t *testing.T) {
	_, err := OpenReadOnly(filepath.Join(t.TempDir(), "nothing"), Options{})
	assert.ErrorIs(t, err, fs.ErrNotExist)

	dir, journal, starts := threeCommits(t)
	f, err := os.OpenFile(journal, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{'X'}, starts[1]+1)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = OpenReadOnly(dir, Options{})
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, journal, ce.File)
	assert.Equal(t, starts[1], ce.Pos)
	ro, err := OpenReadOnly(dir, Options{RecoverCorrupt: true})
	require.NoError(t, err)
	assert.Equal(t, map[key]val{{"g", "t", 0}: {10, "m"}}, snapshotOf(ro), "what precedes the corruption")
	require.NoError(t, ro.Close())
	_, err = ro.Fetch("g", "t", 0)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, ro.Refresh(), ErrClosed)
	assert.Nil(t, ro.Groups())
}

// TestFiles: Files tells a tool what each entry of the directory is to the
// store, without changing anything.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	gen := storeWithHistory(t, dir)
	extra := map[string]string{
		journalName(gen - 1):      string(appendJournalHeader(nil, gen-1)),
		snapshotName + ".tmp":     "half",
		"snapshot.1234-5.tmp":     "older half",
		"notes.txt":               "an operator's",
		"journal-12":              "not a journal name",
		journalName(gen) + ".bak": "a copy",
	}
	for name, data := range extra {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o640))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, journalName(gen+5)), 0o750))
	before := treeState(t, dir)

	files, err := Files(dir)
	require.NoError(t, err)
	type row struct {
		kind FileKind
		gen  uint64
		bad  bool
	}
	got := map[string]row{}
	for _, f := range files {
		got[f.Name] = row{f.Kind, f.Generation, f.Err != nil}
		if f.Kind == FileJournal && f.Err == nil {
			info, err := os.Stat(filepath.Join(dir, f.Name))
			require.NoError(t, err)
			assert.Equal(t, info.Size(), f.Size)
		}
	}
	assert.Equal(t, map[string]row{
		lockName:                  {FileLock, 0, false},
		appendLockName:            {FileLock, 0, false},
		snapshotName:              {FileSnapshot, gen, false},
		journalName(gen):          {FileJournal, gen, false},
		journalName(gen - 1):      {FileObsolete, gen - 1, false},
		journalName(gen + 5):      {FileJournal, gen + 5, true},
		snapshotName + ".tmp":     {FileTemp, 0, false},
		"snapshot.1234-5.tmp":     {FileTemp, 0, false},
		"notes.txt":               {FileOther, 0, false},
		"journal-12":              {FileOther, 0, false},
		journalName(gen) + ".bak": {FileOther, 0, false},
	}, got)
	assert.Equal(t, before, treeState(t, dir))

	_, err = Files(filepath.Join(dir, "nothing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, filepath.Join("data", "offsets"), Dir("data"))
	assert.Equal(t, "obsolete journal", FileObsolete.String())

	require.NoError(t, os.WriteFile(filepath.Join(dir, snapshotName), []byte("SGOX"), 0o640))
	files, err = Files(dir)
	require.NoError(t, err)
	for _, f := range files {
		if f.Kind == FileSnapshot {
			assert.ErrorIs(t, f.Err, ErrCorrupt)
		}
	}
}

// TestOpensStoreOfEarlierVersion: a directory written by the seglog before
// the shared journal (testdata/before-shared-journal: a snapshot and a
// journal after it; it locked LOCK exclusively and had no append.lock)
// opens, read-only and to write, with its state.
func TestOpensStoreOfEarlierVersion(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "before-shared-journal"))
	want := map[key]val{
		{"audit", "events", 0}:   {150, "b"},
		{"audit", "events", 1}:   {200, ""},
		{"billing", "orders", 2}: {30, ""},
	}
	wantReaders := map[string][]string{"events": {"audit", "idle"}, "orders": {"billing"}}
	ro, err := OpenReadOnly(dir, Options{})
	require.NoError(t, err)
	assert.Equal(t, want, snapshotOf(ro))
	assert.Equal(t, wantReaders, readersOf(ro, "events", "orders"))
	s := openT(t, dir, Options{})
	assert.Equal(t, want, snapshotOf(s))
	assert.Equal(t, wantReaders, readersOf(s, "events", "orders"))
	require.NoError(t, s.Commit("audit", "events", 0, 160, ""))
	want[key{"audit", "events", 0}] = val{160, ""}
	assert.Equal(t, want, snapshotOf(ro))
	require.NoError(t, s.Close())
	require.NoError(t, ro.Close())
}

// TestReadOnlyReadsEveryAcknowledgedCommitWhileWritersCompact: two writers
// commit and compact (on demand and past CompactBytes) while a read-only
// store and a writer read: every read sees, for each key, at least the
// last commit acknowledged before it began (never nothing, never an
// older one).
func TestReadOnlyReadsEveryAcknowledgedCommitWhileWritersCompact(t *testing.T) {
	dir := t.TempDir()
	opts := Options{CompactBytes: 2 << 10}
	writers := []*Store{openT(t, dir, opts), openT(t, dir, opts)}
	ro, err := OpenReadOnly(dir, Options{})
	require.NoError(t, err)
	var acked [2]atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Go(func() {
			for off := int64(1); off <= 400; off++ {
				if !assert.NoError(t, w.Commit(fmt.Sprintf("g%d", i), "t", 0, off, "")) {
					return
				}
				acked[i].Store(off)
				if off%25 == 0 {
					assert.NoError(t, w.Compact())
				}
			}
		})
	}
	var readers sync.WaitGroup
	for _, r := range []*Store{ro, writers[0]} {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				for i := range acked {
					before := acked[i].Load()
					p, err := r.Fetch(fmt.Sprintf("g%d", i), "t", 0)
					if before == 0 {
						continue
					}
					if !assert.NoError(t, err, "g%d acknowledged %d", i, before) ||
						!assert.GreaterOrEqual(t, p.Offset, before, "g%d", i) {
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	assert.Positive(t, ro.Stats().Reloads)
	want := map[key]val{{"g0", "t", 0}: {400, ""}, {"g1", "t", 0}: {400, ""}}
	assert.Equal(t, want, snapshotOf(ro))
	for _, s := range append(writers, ro) {
		require.NoError(t, s.Close())
	}
}
