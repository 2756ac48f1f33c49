package offsets

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/faultfs"
)

// recFS records, in order, the calls that order matters for in a durability
// argument ("syncdir <dir>", "remove <path>", "sync <path>", "rename <old>
// <new>"), and can fail the SyncDir of one exact directory.
type recFS struct {
	vfs.FS
	mu          sync.Mutex
	ops         []string
	failSyncDir string
}

type recFile struct {
	vfs.File
	fs *recFS
}

func (r *recFS) log(op string) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// calls returns the recorded calls.
func (r *recFS) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

func (r *recFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := r.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return recFile{f, r}, nil
}

func (r *recFS) SyncDir(dir string) error {
	r.log("syncdir " + dir)
	if dir == r.failSyncDir {
		return &os.PathError{Op: "fsync", Path: dir, Err: syscall.EIO}
	}
	return r.FS.SyncDir(dir)
}

func (r *recFS) Remove(name string) error {
	r.log("remove " + name)
	return r.FS.Remove(name)
}

func (r *recFS) Rename(oldpath, newpath string) error {
	r.log("rename " + oldpath + " " + newpath)
	return r.FS.Rename(oldpath, newpath)
}

func (f recFile) Sync() error {
	f.fs.log("sync " + f.Name())
	return f.File.Sync()
}

// indexOf returns the position of op in ops, or -1.
func indexOf(ops []string, op string) int { return slices.Index(ops, op) }

// TestOpenSyncsParents: creating the store's directory fsyncs the parent of
// every directory created, so that a power cut cannot lose the directory
// (and the journal in it) after commits were acknowledged.
func TestOpenSyncsParents(t *testing.T) {
	cases := []struct {
		name    string
		sub     []string // path under the temp dir
		created int      // how many of its components are new
	}{
		{"one new directory", []string{"offsets"}, 1},
		{"nested new directories", []string{"data", "offsets"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(append([]string{root}, c.sub...)...)
			fs := &recFS{FS: vfs.Default}
			s := openT(t, dir, Options{FS: fs})
			require.NoError(t, s.Close())
			ops := fs.calls()
			for p, i := filepath.Dir(dir), 0; i < c.created; p, i = filepath.Dir(p), i+1 {
				assert.Contains(t, ops, "syncdir "+p, "the parent of a created directory is fsynced")
			}

			// A failure to fsync the parent fails the Open.
			dir2 := filepath.Join(append([]string{t.TempDir()}, c.sub...)...)
			fs2 := &recFS{FS: vfs.Default, failSyncDir: filepath.Dir(dir2)}
			_, err := Open(dir2, Options{FS: fs2})
			assert.ErrorIs(t, err, syscall.EIO)
		})
	}
}

// TestEmptyJournal: a journal file that was created but whose header never
// reached the disk (zero length, a torn header, or a header-sized block of
// zeros: the file's size was persisted, its data not) holds no record,
// because records are appended only after the header is fsynced. Open
// writes its header, so that the commits that follow survive a reopen.
func TestEmptyJournal(t *testing.T) {
	cases := []struct {
		name    string
		content []byte
	}{
		{"zero length", nil},
		{"torn header", []byte("SGOJ\x01")},
		{"header-sized zeros", make([]byte, journalHeaderSize)},
		{"first byte written, zeros after", append([]byte("S"), make([]byte, journalHeaderSize-1)...)},
		{"first byte written, zeros after, longer", append([]byte("S"), make([]byte, 4*journalHeaderSize)...)},
		{"garbage header", []byte("XXXXXXXXXXXXXXXX")},
		{"garbage header and garbage after", []byte("XXXXXXXXXXXXXXXXYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYYY")},
	}
	for _, c := range cases {
		for _, withSnapshot := range []bool{false, true} {
			name := c.name
			if withSnapshot {
				name += ", after a snapshot"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				gen := uint64(1)
				want := map[key]val{}
				if withSnapshot {
					// A compaction to generation 2 created journal 2 and
					// renamed the snapshot; the journal's header is lost.
					s := openT(t, dir, Options{})
					require.NoError(t, s.Commit("old", "t", 0, 7, ""))
					require.NoError(t, s.Compact())
					require.NoError(t, s.Close())
					gen = 2
					want[key{"old", "t", 0}] = val{7, ""}
				}
				path := filepath.Join(dir, journalName(gen))
				require.NoError(t, os.WriteFile(path, c.content, 0o640))

				s := openT(t, dir, Options{})
				require.NoError(t, s.Commit("g", "t", 0, 42, "m"))
				want[key{"g", "t", 0}] = val{42, "m"}
				require.NoError(t, s.Close())

				s, err := Open(dir, Options{})
				require.NoError(t, err, "the journal has its header")
				assert.Equal(t, want, snapshotOf(s))
				require.NoError(t, s.Close())
			})
		}
	}
}

// TestBadHeaderBeforeRecordsIsCorrupt: a journal whose header is damaged
// but which holds valid records after it holds acknowledged commits: Open
// refuses it, naming the file and the position, rather than dropping them.
func TestBadHeaderBeforeRecordsIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	require.NoError(t, s.Commit("g", "t", 0, 42, "m"))
	require.NoError(t, s.Close())
	path := filepath.Join(dir, journalName(1))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), journalHeaderSize, "the commit is in the journal")
	copy(b, "XXXX")
	require.NoError(t, os.WriteFile(path, b, 0o640))

	_, err = Open(dir, Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, path, ce.File)
	assert.Equal(t, int64(0), ce.Pos)
}

// TestSymlinksRefused: the store never follows a symbolic link, whether it
// is the directory itself or one of the files in it, so that nothing
// outside the directory is created or written.
func TestSymlinksRefused(t *testing.T) {
	cases := []struct {
		name string
		link string // relative to <tmp>: becomes a link to <tmp>/target(/x)
		open string // the path given to Open, relative to <tmp>
	}{
		{"the directory", "offsets", "offsets"},
		{"the directory, named with a trailing slash", "offsets", "offsets/"},
		{"the journal", filepath.Join("offsets", journalName(2)), "offsets"},
		{"the snapshot", filepath.Join("offsets", snapshotName), "offsets"},
		{"the lock file", filepath.Join("offsets", lockName), "offsets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "offsets")
			target := filepath.Join(root, "target")
			require.NoError(t, os.Mkdir(target, 0o750))
			if c.link != "offsets" {
				// A real directory with a real store in it.
				s := openT(t, dir, Options{})
				require.NoError(t, s.Commit("g", "t", 0, 1, ""))
				require.NoError(t, s.Compact())
				require.NoError(t, s.Close())
				link := filepath.Join(root, c.link)
				data, err := os.ReadFile(link)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(target, "x"), data, 0o640))
				require.NoError(t, os.Remove(link))
				require.NoError(t, os.Symlink(filepath.Join(target, "x"), link))
			} else {
				require.NoError(t, os.Symlink(target, dir))
			}
			before := treeState(t, target)

			_, err := Open(root+"/"+c.open, Options{})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), "symbolic link")
			assert.Equal(t, before, treeState(t, target), "nothing is created or changed in the link's target")
		})
	}
}

// TestOpenMakesReplayDurable: what Open replays may be in the page cache
// only (the previous process died before its fsync). Before Open serves it
// (and retention acts on it), the journal is fsynced, and the directory
// too (a snapshot rename or journal creation may not be durable). When
// that fsync fails, Open fails.
func TestOpenMakesReplayDurable(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New(nil)
	s := openT(t, dir, Options{FS: fs, Sync: SyncNever})
	require.NoError(t, s.Commit("g", "t", 0, 1, ""))
	require.NoError(t, s.Compact())
	require.NoError(t, s.Commit("g", "t", 0, 2, ""))
	// The process dies: the journal was written, never fsynced.
	fs.Add(faultfs.Rule{Ops: faultfs.OpSync, Every: true, Noop: true})
	require.NoError(t, s.Close())
	fs.Clear()

	rec := &recFS{FS: vfs.Default}
	s = openT(t, dir, Options{FS: rec})
	ops := rec.calls()
	assert.Contains(t, ops, "sync "+filepath.Join(dir, journalName(2)), "the replayed journal is fsynced")
	assert.Contains(t, ops, "syncdir "+dir, "the directory is fsynced")
	require.NoError(t, s.Close())

	fs.FailAll(faultfs.OpSync, journalPrefix, syscall.EIO)
	_, err := Open(dir, Options{FS: fs})
	assert.ErrorIs(t, err, syscall.EIO, "Open does not serve a state it could not make durable")
}

// TestOpenRemovalOrder: Open deletes a journal only once the directory
// state that makes it obsolete is durable, and makes its own removals
// durable before it returns.
func TestOpenRemovalOrder(t *testing.T) {
	t.Run("obsolete journal after the snapshot rename", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir, Options{})
		require.NoError(t, s.Commit("g", "t", 0, 1, ""))
		require.NoError(t, s.Sync())
		old, err := os.ReadFile(filepath.Join(dir, journalName(1)))
		require.NoError(t, err)
		require.NoError(t, s.Compact())
		require.NoError(t, s.Close())
		// A crash after the snapshot's rename, before its directory fsync
		// and the old journal's removal.
		require.NoError(t, os.WriteFile(filepath.Join(dir, journalName(1)), old, 0o640))

		fs := &recFS{FS: vfs.Default}
		s = openT(t, dir, Options{FS: fs})
		require.NoError(t, s.Close())
		ops := fs.calls()
		rm := indexOf(ops, "remove "+filepath.Join(dir, journalName(1)))
		require.GreaterOrEqual(t, rm, 0, "the obsolete journal is removed")
		assert.Contains(t, ops[:rm], "syncdir "+dir, "the snapshot rename is durable before the journal it replaces goes")
	})
	t.Run("later journals dropped by RecoverCorrupt", func(t *testing.T) {
		dir, journal, starts := threeCommits(t)
		later := filepath.Join(dir, journalName(2))
		require.NoError(t, os.WriteFile(later, appendJournalHeader(nil, 2), 0o640))
		f, err := os.OpenFile(journal, os.O_RDWR, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte{'X'}, starts[1]+1)
		require.NoError(t, err)
		require.NoError(t, f.Close())

		fs := &recFS{FS: vfs.Default}
		s := openT(t, dir, Options{FS: fs, RecoverCorrupt: true})
		ops := fs.calls()
		rm := indexOf(ops, "remove "+later)
		require.GreaterOrEqual(t, rm, 0, "the later journal is removed")
		assert.Contains(t, ops[rm:], "syncdir "+dir, "the removal is durable before commits go to the cut journal")
		require.NoError(t, s.Close())
	})
}

// TestTempSnapshotsRemoved: Open removes the temporary files of a snapshot
// write that a crash interrupted, whatever their name.
func TestTempSnapshotsRemoved(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	require.NoError(t, s.Close())
	for _, name := range []string{snapshotName + ".tmp", snapshotName + ".1234-5.tmp"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("half a snapshot"), 0o640))
	}
	s = openT(t, dir, Options{})
	require.NoError(t, s.Close())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, filepath.Ext(e.Name()) == vfs.TempSuffix, "leftover %s", e.Name())
	}
}
