package crashfs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edsrzf/mmap-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/crashfs"
)

func newFS(t *testing.T, opts crashfs.Options) (*crashfs.FS, string) {
	t.Helper()
	root := t.TempDir()
	fsys, err := crashfs.New(root, opts)
	require.NoError(t, err)
	return fsys, root
}

// create creates name under root with data, fsyncs it if sync, and fsyncs
// the directory if syncDir.
func create(t *testing.T, fsys *crashfs.FS, name string, data string, sync, syncDir bool) vfs.File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	if syncDir {
		require.NoError(t, fsys.SyncDir(filepath.Dir(name)))
	}
	return f
}

// crash crashes fsys and returns what is under root afterwards: path ->
// content, directories with a trailing slash and no content.
func crash(t *testing.T, fsys *crashfs.FS) map[string]string {
	t.Helper()
	_, err := fsys.Crash()
	require.NoError(t, err)
	return tree(t, fsys.Root())
}

func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		out[rel] = string(b)
		return nil
	}))
	return out
}

func TestStrictKeepsOnlySyncedData(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	f := create(t, fsys, filepath.Join(root, "a"), "hello", true, true)
	_, err := f.Write([]byte(" world"))
	require.NoError(t, err)
	g := create(t, fsys, filepath.Join(root, "b"), "synced", true, true)
	_, err = g.WriteAt([]byte("SY"), 0)
	require.NoError(t, err)
	require.NoError(t, g.Sync())
	require.NoError(t, g.Truncate(4))
	assert.Equal(t, map[string]string{"a": "hello", "b": "SYnced"}, crash(t, fsys), "unsynced writes and truncation vanish, synced ones stay")
	_ = f.Close()
	_ = g.Close()
}

func TestFileWithoutDirSyncVanishes(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	f := create(t, fsys, filepath.Join(root, "kept"), "k", true, true)
	g := create(t, fsys, filepath.Join(root, "lost"), "l", true, false) // fsynced, but not its name
	require.NoError(t, f.Close())
	require.NoError(t, g.Close())
	assert.Equal(t, map[string]string{"kept": "k"}, crash(t, fsys))
}

func TestNeverSyncedFileIsEmpty(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	f := create(t, fsys, filepath.Join(root, "a"), "data", false, true)
	require.NoError(t, f.Close())
	assert.Equal(t, map[string]string{"a": ""}, crash(t, fsys), "the name is durable, the data is not")
}

func TestRenameWithoutDirSyncReverts(t *testing.T) {
	for _, syncAfter := range []bool{false, true} {
		t.Run(map[bool]string{false: "no dir fsync", true: "dir fsync"}[syncAfter], func(t *testing.T) {
			fsys, root := newFS(t, crashfs.Options{})
			require.NoError(t, create(t, fsys, filepath.Join(root, "a"), "old", true, true).Close())
			require.NoError(t, create(t, fsys, filepath.Join(root, "tmp"), "new", true, true).Close())
			require.NoError(t, fsys.Rename(filepath.Join(root, "tmp"), filepath.Join(root, "a")))
			if syncAfter {
				require.NoError(t, fsys.SyncDir(root))
				assert.Equal(t, map[string]string{"a": "new"}, crash(t, fsys))
				return
			}
			assert.Equal(t, map[string]string{"a": "old", "tmp": "new"}, crash(t, fsys))
		})
	}
}

func TestWriteFileAtomicIsDurable(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	require.NoError(t, vfs.WriteFileAtomic(fsys, filepath.Join(root, "ckpt"), []byte("v1"), 0o640))
	require.NoError(t, vfs.WriteFileAtomic(fsys, filepath.Join(root, "ckpt"), []byte("v2"), 0o640))
	assert.Equal(t, map[string]string{"ckpt": "v2"}, crash(t, fsys), "the write-only temporary file's content is read at Sync")
}

func TestRemovalWithoutDirSyncComesBack(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	f := create(t, fsys, filepath.Join(root, "a"), "durable", true, true)
	require.NoError(t, create(t, fsys, filepath.Join(root, "b"), "b", true, true).Close())
	_, err := f.Write([]byte("+more"))
	require.NoError(t, err)
	require.NoError(t, fsys.Remove(filepath.Join(root, "a")))
	require.NoError(t, fsys.Remove(filepath.Join(root, "b")))
	require.NoError(t, fsys.SyncDir(root))
	require.NoError(t, create(t, fsys, filepath.Join(root, "c"), "c", true, true).Close())
	require.NoError(t, fsys.Remove(filepath.Join(root, "c")))
	// a is unlinked but open: an fsync still reaches its content.
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	assert.Equal(t, map[string]string{"c": "c"}, crash(t, fsys), "a and b removed durably; c's removal comes back")
}

func TestUnlinkedFileComesBackWithLaterSync(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	f := create(t, fsys, filepath.Join(root, "a"), "v1", true, true)
	require.NoError(t, fsys.Remove(filepath.Join(root, "a")))
	_, err := f.WriteAt([]byte("v2"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync(), "identity follows the open file, not the name")
	require.NoError(t, f.Close())
	assert.Equal(t, map[string]string{"a": "v2"}, crash(t, fsys))
}

func TestDirectories(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	require.NoError(t, fsys.MkdirAll(filepath.Join(root, "x", "y"), 0o750))
	require.NoError(t, create(t, fsys, filepath.Join(root, "x", "y", "f"), "f", true, true).Close())
	// y's entry is in x, which was never fsynced; x's in root, likewise.
	assert.Equal(t, map[string]string{}, crash(t, fsys))

	fsys, root = newFS(t, crashfs.Options{})
	require.NoError(t, vfs.MkdirAllDurable(fsys, filepath.Join(root, "x", "y"), 0o750))
	require.NoError(t, create(t, fsys, filepath.Join(root, "x", "y", "f"), "f", true, true).Close())
	require.NoError(t, fsys.MkdirAll(filepath.Join(root, "x", "z"), 0o750))
	assert.Equal(t, map[string]string{"x/": "", "x/y/": "", "x/y/f": "f"}, crash(t, fsys))
}

func TestDirectoryRenameAndRemoveAll(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	require.NoError(t, vfs.MkdirAllDurable(fsys, filepath.Join(root, "d"), 0o750))
	f := create(t, fsys, filepath.Join(root, "d", "f"), "f", true, true)
	require.NoError(t, fsys.Rename(filepath.Join(root, "d"), filepath.Join(root, "d.deleted")))
	require.NoError(t, fsys.SyncDir(root))
	_, err := f.WriteAt([]byte("F"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	require.NoError(t, fsys.RemoveAll(filepath.Join(root, "d.deleted")))
	assert.Equal(t, map[string]string{"d.deleted/": "", "d.deleted/f": "F"}, crash(t, fsys), "the removal was not fsynced")
}

func TestMmapWritesReachTheModelAtSync(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	name := filepath.Join(root, "idx")
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o640)
	require.NoError(t, err)
	require.NoError(t, fsys.SyncDir(root))
	require.NoError(t, f.Truncate(16))
	m, err := mmap.MapRegion(f.OSFile(), 16, mmap.RDWR, 0, 0)
	require.NoError(t, err)
	copy(m, "entry-1")
	require.NoError(t, m.Flush())
	require.NoError(t, f.Sync())
	copy(m[8:], "entry-2")
	require.NoError(t, m.Unmap())
	require.NoError(t, f.Close())
	want := "entry-1" + strings.Repeat("\x00", 9)
	assert.Equal(t, map[string]string{"idx": want}, crash(t, fsys), "the first entry was fsynced, the second was not")
}

func TestCrashPoint(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{CrashAt: 3})
	f, err := fsys.OpenFile(filepath.Join(root, "a"), os.O_RDWR|os.O_CREATE, 0o640) // op 1
	require.NoError(t, err)
	_, err = f.Write([]byte("x")) // op 2
	require.NoError(t, err)
	assert.False(t, fsys.Crashed())
	err = f.Sync() // op 3: the crash point
	require.ErrorIs(t, err, crashfs.ErrCrashed)
	var pe *os.PathError
	require.True(t, errors.As(err, &pe), "errors are *os.PathError like the os package's")
	assert.True(t, fsys.Crashed())
	_, err = f.ReadAt(make([]byte, 1), 0)
	assert.ErrorIs(t, err, crashfs.ErrCrashed, "every later call fails, reads too")
	_, err = fsys.Lstat(filepath.Join(root, "a"))
	assert.ErrorIs(t, err, crashfs.ErrCrashed)
	assert.ErrorIs(t, fsys.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")), crashfs.ErrCrashed)
	assert.ErrorIs(t, f.Close(), crashfs.ErrCrashed)
	assert.Equal(t, int64(4), fsys.Ops())
	h := fsys.History()
	require.Len(t, h, 2)
	assert.Equal(t, "#1 create a", h[0])
	assert.Equal(t, "#2 write a", h[1])
	assert.Equal(t, map[string]string{}, crash(t, fsys))
}

// CrashAfter sets the crash point relative to the operations so far: the
// durable state before it survives, the operation it names fails.
func TestCrashAfter(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	require.NoError(t, create(t, fsys, filepath.Join(root, "a"), "a", true, true).Close()) // ops 1-4
	fsys.CrashAfter(2)
	f, err := fsys.OpenFile(filepath.Join(root, "b"), os.O_RDWR|os.O_CREATE, 0o640) // op 5
	require.NoError(t, err)
	_, err = f.Write([]byte("b")) // op 6: the crash point
	require.ErrorIs(t, err, crashfs.ErrCrashed)
	assert.True(t, fsys.Crashed())
	assert.ErrorIs(t, f.Close(), crashfs.ErrCrashed)
	assert.Equal(t, map[string]string{"a": "a"}, crash(t, fsys))
}

func TestCrashNowAndRestart(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	require.NoError(t, create(t, fsys, filepath.Join(root, "a"), "a", true, true).Close())
	fsys.CrashNow()
	_, err := fsys.OpenFile(filepath.Join(root, "a"), os.O_RDONLY, 0)
	require.ErrorIs(t, err, crashfs.ErrCrashed)
	next, rep, err := fsys.Restart(crashfs.Options{})
	require.NoError(t, err)
	require.Len(t, rep.Files, 1)
	assert.Contains(t, rep.String(), "a 1 bytes")
	b, err := vfs.ReadFile(next, filepath.Join(root, "a"), 10)
	require.NoError(t, err)
	assert.Equal(t, "a", string(b), "after a restart everything found is durable")
	require.NoError(t, next.Remove(filepath.Join(root, "a")))
	assert.Equal(t, map[string]string{"a": "a"}, crash(t, next))
	_, err = fsys.Crash()
	assert.Error(t, err, "Crash runs once")
}

func TestOutsideRoot(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{})
	_, err := fsys.OpenFile(filepath.Join(filepath.Dir(root), "elsewhere"), os.O_RDWR|os.O_CREATE, 0o640)
	assert.ErrorIs(t, err, crashfs.ErrOutsideRoot)
	assert.ErrorIs(t, fsys.SyncDir(filepath.Dir(root)), crashfs.ErrOutsideRoot)
}

// lazyRun appends unsynced data to a synced file, renames a file without
// a directory fsync, crashes in lazy mode with seed, and returns the tree.
func lazyRun(t *testing.T, seed uint64) (map[string]string, crashfs.Report) {
	fsys, root := newFS(t, crashfs.Options{Mode: crashfs.Lazy, Seed: seed})
	f := create(t, fsys, filepath.Join(root, "log"), "synced|", true, true)
	_, err := f.Write([]byte("unsynced-appended-bytes"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, create(t, fsys, filepath.Join(root, "tmp"), "new", true, true).Close())
	require.NoError(t, fsys.Rename(filepath.Join(root, "tmp"), filepath.Join(root, "ckpt")))
	rep, err := fsys.Crash()
	require.NoError(t, err)
	return tree(t, root), rep
}

func TestLazyKeepsPrefixesAndWholeOperations(t *testing.T) {
	const full = "synced|unsynced-appended-bytes"
	kinds := map[string]int{}
	renamed := 0
	for seed := uint64(0); seed < 64; seed++ {
		got, rep := lazyRun(t, seed)
		log := got["log"]
		// A prefix of the appended bytes, or (a torn page: the size
		// reached the disk, the data did not) zeros after the synced part.
		torn := strings.HasPrefix(log, "synced|") && strings.Trim(log[len("synced|"):], "\x00") == "" && len(log) <= len(full)
		assert.True(t, torn || strings.HasPrefix(full, log) && len(log) >= len("synced|"), "seed %d: %q keeps the synced part and a prefix of the rest", seed, log)
		require.Len(t, rep.Files, 2, "seed %d: %s", seed, rep)
		for _, f := range rep.Files {
			if f.Path == "log" {
				kinds[f.Kept]++
			}
		}
		// The rename is one operation: old name or new, never both or none.
		_, hasTmp := got["tmp"]
		_, hasCkpt := got["ckpt"]
		assert.True(t, hasTmp != hasCkpt, "seed %d: %v", seed, got)
		if hasCkpt {
			renamed++
			assert.Equal(t, "new", got["ckpt"])
		}
	}
	assert.Positive(t, kinds["synced"], "some crashes keep nothing unsynced")
	assert.Positive(t, kinds["all"], "some keep everything")
	assert.Positive(t, kinds["prefix"], "some keep a prefix")
	assert.Positive(t, kinds["pages"], "some tear pages")
	assert.Positive(t, renamed, "some keep the rename")
	assert.Less(t, renamed, 64, "some undo it")
}

func TestLazyTearsPages(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(0); seed < 64; seed++ {
		fsys, root := newFS(t, crashfs.Options{Mode: crashfs.Lazy, Seed: seed})
		f := create(t, fsys, filepath.Join(root, "f"), strings.Repeat("a", 3*4096), true, true)
		_, err := f.WriteAt(bytes.Repeat([]byte("b"), 3*4096), 0) // overwrite: not an append
		require.NoError(t, err)
		require.NoError(t, f.Close())
		got := crash(t, fsys)["f"]
		require.Len(t, got, 3*4096)
		var pages []byte
		for p := 0; p < 3; p++ {
			page := got[p*4096 : (p+1)*4096]
			require.True(t, page == strings.Repeat("a", 4096) || page == strings.Repeat("b", 4096), "seed %d: whole pages of one version", seed)
			pages = append(pages, page[0])
		}
		seen[string(pages)] = true
	}
	assert.Greater(t, len(seen), 3, "pages are torn in several ways: %v", seen)
}

func TestLazyIsDeterministic(t *testing.T) {
	for seed := uint64(0); seed < 8; seed++ {
		a, ra := lazyRun(t, seed)
		b, rb := lazyRun(t, seed)
		assert.Equal(t, a, b, "seed %d", seed)
		assert.Equal(t, ra, rb, "seed %d", seed)
	}
}

func TestStrictIgnoresSeed(t *testing.T) {
	for seed := uint64(0); seed < 4; seed++ {
		fsys, root := newFS(t, crashfs.Options{Seed: seed})
		f := create(t, fsys, filepath.Join(root, "log"), "synced", true, true)
		_, err := f.Write([]byte("+unsynced"))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		assert.Equal(t, map[string]string{"log": "synced"}, crash(t, fsys))
	}
}

func TestKillKeepsThePageCache(t *testing.T) {
	fsys, root := newFS(t, crashfs.Options{Mode: crashfs.Kill})
	require.NoError(t, create(t, fsys, filepath.Join(root, "a"), "durable", true, true).Close())
	f := create(t, fsys, filepath.Join(root, "b"), "never synced", false, false)
	require.NoError(t, f.Close())
	require.NoError(t, fsys.Rename(filepath.Join(root, "a"), filepath.Join(root, "c")))
	require.NoError(t, fsys.MkdirAll(filepath.Join(root, "d"), 0o750))
	assert.Equal(t, map[string]string{"b": "never synced", "c": "durable", "d/": ""}, crash(t, fsys))
}
