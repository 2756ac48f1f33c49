package offsets

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs"
)

// threeCommits writes three commit records to a fresh store and returns the
// directory, the journal path and the offset where each record starts (and
// the journal's end).
func threeCommits(t *testing.T) (dir, journal string, starts []int64) {
	dir = t.TempDir()
	s := openT(t, dir, Options{})
	journal = filepath.Join(dir, journalName(1))
	for i := range 3 {
		info, err := os.Stat(journal)
		require.NoError(t, err)
		starts = append(starts, info.Size())
		require.NoError(t, s.Commit("g", "t", int32(i), int64(10+i), "m"))
	}
	require.NoError(t, s.Close())
	info, err := os.Stat(journal)
	require.NoError(t, err)
	return dir, journal, append(starts, info.Size())
}

func TestTornTail(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, f *os.File, starts []int64)
		keep   int // records that survive
	}{
		{"record cut in its body", func(t *testing.T, f *os.File, s []int64) {
			require.NoError(t, f.Truncate(s[3]-3))
		}, 2},
		{"record cut in its header", func(t *testing.T, f *os.File, s []int64) {
			require.NoError(t, f.Truncate(s[2]+5))
		}, 2},
		{"zeros appended", func(t *testing.T, f *os.File, s []int64) {
			_, err := f.WriteAt(make([]byte, 100), s[3])
			require.NoError(t, err)
		}, 3},
		{"last record's checksum wrong", func(t *testing.T, f *os.File, s []int64) {
			_, err := f.WriteAt([]byte{0xff}, s[2]+20)
			require.NoError(t, err)
		}, 2},
		{"last record's length too long", func(t *testing.T, f *os.File, s []int64) {
			_, err := f.WriteAt(binary.LittleEndian.AppendUint32(nil, 1000), s[2]+8)
			require.NoError(t, err)
		}, 2},
		{"two records torn, garbage after", func(t *testing.T, f *os.File, s []int64) {
			_, err := f.WriteAt([]byte("garbage garbage garbage garbage garbage garbage"), s[1]+4)
			require.NoError(t, err)
		}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, journal, starts := threeCommits(t)
			f, err := os.OpenFile(journal, os.O_RDWR, 0)
			require.NoError(t, err)
			c.damage(t, f, starts)
			require.NoError(t, f.Close())

			s := openT(t, dir, Options{})
			want := map[key]val{}
			for i := range c.keep {
				want[key{"g", "t", int32(i)}] = val{int64(10 + i), "m"}
			}
			assert.Equal(t, want, snapshotOf(s))
			info, err := os.Stat(journal)
			require.NoError(t, err)
			assert.Equal(t, starts[c.keep], info.Size(), "truncated to the last good record")
			assert.Positive(t, s.Stats().DroppedBytes)

			require.NoError(t, s.Commit("g", "t", 9, 99, ""))
			want[key{"g", "t", 9}] = val{99, ""}
			require.NoError(t, s.Close())
			reopenHas(t, dir, want)
		})
	}
}

func TestCorruptInTheMiddle(t *testing.T) {
	cases := []struct {
		name   string
		at     func(starts []int64) int64 // where to damage
		badPos func(starts []int64) int64 // where the error points
		keep   int                        // with RecoverCorrupt
	}{
		{"first record's checksum", func(s []int64) int64 { return s[0] + 1 }, func(s []int64) int64 { return s[0] }, 0},
		{"second record's body", func(s []int64) int64 { return s[1] + 15 }, func(s []int64) int64 { return s[1] }, 1},
		{"journal magic", func(s []int64) int64 { return 0 }, func(s []int64) int64 { return 0 }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, journal, starts := threeCommits(t)
			f, err := os.OpenFile(journal, os.O_RDWR, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte{'X'}, c.at(starts))
			require.NoError(t, err)
			require.NoError(t, f.Close())

			_, err = Open(dir, Options{})
			require.ErrorIs(t, err, ErrCorrupt)
			var ce *CorruptError
			require.True(t, errors.As(err, &ce))
			assert.Equal(t, journal, ce.File)
			assert.Equal(t, c.badPos(starts), ce.Pos)
			assert.Contains(t, err.Error(), journal)

			s := openT(t, dir, Options{RecoverCorrupt: true})
			want := map[key]val{}
			for i := range c.keep {
				want[key{"g", "t", int32(i)}] = val{int64(10 + i), "m"}
			}
			assert.Equal(t, want, snapshotOf(s))
			require.NoError(t, s.Commit("g", "t", 9, 99, ""))
			require.NoError(t, s.Close())
			s = openT(t, dir, Options{})
			want[key{"g", "t", 9}] = val{99, ""}
			assert.Equal(t, want, snapshotOf(s))
			require.NoError(t, s.Close())
		})
	}
}

func TestCorruptSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	require.NoError(t, s.Commit("g", "t", 0, 1, ""))
	require.NoError(t, s.Compact())
	require.NoError(t, s.Close())
	path := filepath.Join(dir, snapshotName)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)-1] ^= 1
	require.NoError(t, os.WriteFile(path, data, 0o640))
	_, err = Open(dir, Options{RecoverCorrupt: true})
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, path, ce.File)
	assert.Equal(t, "checksum mismatch", ce.Reason)
}

func TestClosed(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	require.NoError(t, s.Commit("g", "t", 0, 1, ""))
	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.Close(), ErrClosed)
	assert.ErrorIs(t, s.Commit("g", "t", 0, 1, ""), ErrClosed)
	assert.ErrorIs(t, s.CommitBatch("g", []Commit{{"t", 0, 1, ""}}), ErrClosed)
	_, err := s.Fetch("g", "t", 0)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, s.DeleteGroup("g"), ErrClosed)
	assert.ErrorIs(t, s.Subscribe("g", "t"), ErrClosed)
	assert.ErrorIs(t, s.Unsubscribe("g", "t"), ErrClosed)
	assert.ErrorIs(t, s.Sync(), ErrClosed)
	assert.ErrorIs(t, s.Compact(), ErrClosed)
	assert.Nil(t, s.Groups())
	assert.Nil(t, s.Positions("g"))
	assert.Nil(t, s.Readers("t"))
	_, ok := s.MinCommitted("t", 0)
	assert.False(t, ok)
}

// TestLocked: Stores of this version share a directory (each holds LOCK
// shared for its life). A seglog from before the shared journal held LOCK
// exclusively while its store was open: the two exclude each other, with
// ErrLocked on this side. Reading needs no lock at all.
func TestLocked(t *testing.T) {
	dir, s1, s2 := twoStores(t)
	require.NoError(t, s1.Commit("g", "t", 0, 1, ""))
	require.NoError(t, s2.Commit("h", "t", 0, 2, ""))

	older, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	require.NoError(t, err)
	defer older.Close()
	lockOlder := func() error { return syscall.Flock(int(older.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }
	assert.ErrorIs(t, lockOlder(), syscall.EWOULDBLOCK, "an older seglog cannot open the directory beside this version's stores")
	require.NoError(t, s1.Close())
	assert.ErrorIs(t, lockOlder(), syscall.EWOULDBLOCK, "one store is still open")
	require.NoError(t, s2.Close())

	require.NoError(t, lockOlder(), "no store open")
	_, err = Open(dir, Options{})
	assert.ErrorIs(t, err, ErrLocked, "an older seglog holds the directory")
	ro, err := OpenReadOnly(dir, Options{})
	require.NoError(t, err, "reading takes no lock")
	assert.Equal(t, map[key]val{{"g", "t", 0}: {1, ""}, {"h", "t", 0}: {2, ""}}, snapshotOf(ro))
	require.NoError(t, ro.Close())
	require.NoError(t, syscall.Flock(int(older.Fd()), syscall.LOCK_UN))
	s1 = openT(t, dir, Options{})
	require.NoError(t, s1.Close())
}

// failFS fails the fsync of journal files once armed.
type failFS struct {
	vfs.FS
	failSync bool
}

type failFile struct {
	vfs.File
	fs *failFS
}

func (f *failFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return failFile{file, f}, nil
}

func (f failFile) Sync() error {
	if f.fs.failSync {
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

func TestSyncFailureIsSticky(t *testing.T) {
	dir := t.TempDir()
	fs := &failFS{FS: vfs.Default}
	s := openT(t, dir, Options{FS: fs})
	require.NoError(t, s.Commit("g", "t", 0, 1, ""))
	fs.failSync = true
	err := s.Commit("g", "t", 0, 2, "")
	require.ErrorIs(t, err, syscall.EIO)
	fs.failSync = false
	assert.ErrorIs(t, s.Commit("g", "t", 0, 3, ""), syscall.EIO, "the store is fail-stop")
	assert.ErrorIs(t, s.Sync(), syscall.EIO)
	assert.ErrorIs(t, s.Close(), syscall.EIO)

	s = openT(t, dir, Options{})
	p, err := s.Fetch("g", "t", 0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, p.Offset, int64(1), "the acknowledged commit is there")
	require.NoError(t, s.Close())
}

// TestNewerJournalVersionRefused: a journal written by a later seglog (a
// higher version byte behind the magic) holds records this version may not
// read. It is not an interrupted creation: Open and OpenReadOnly refuse it,
// and the file is left as it was.
func TestNewerJournalVersionRefused(t *testing.T) {
	record := func(typ byte, body string) []byte {
		b, start := beginRecord(nil, typ)
		b = append(b, body...)
		finishRecord(b, start)
		return b
	}
	known, _ := appendCommitHead(nil, "g", 1, 1)
	known = appendEntry(known, "t", 0, 7, "")
	finishRecord(known, 0)
	cases := []struct {
		name    string
		records []byte
	}{
		{"no records", nil},
		{"a record of a type this version does not know", record(9, "\x01g\x01t")},
		{"a record this version reads", known},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, openT(t, dir, Options{}).Close())
			data := append(appendJournalHeader(nil, 1), c.records...)
			data[4] = formatVersion + 1
			path := filepath.Join(dir, journalName(1))
			require.NoError(t, os.WriteFile(path, data, 0o640))

			_, err := Open(dir, Options{})
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, path, ce.File)
			assert.Contains(t, ce.Reason, "unsupported journal version")
			_, err = Open(dir, Options{RecoverCorrupt: true})
			assert.ErrorIs(t, err, ErrCorrupt, "not recovered by cutting it")
			_, err = OpenReadOnly(dir, Options{})
			assert.ErrorIs(t, err, ErrCorrupt)
			rep, err := Check(dir)
			require.NoError(t, err)
			if assert.Len(t, rep.Problems, 1) {
				assert.True(t, rep.Problems[0].Err)
				assert.Contains(t, rep.Problems[0].What, "later seglog")
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, data, after, "left as it was")
		})
	}
}
