package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// stampedLog builds a log of several segments in dir and opens and closes
// it, unchanged, until an open finds the directory unchanged (a Close
// records the stamp only once the kernel's clock has passed the
// directory's change time). It returns the segments.
func stampedLog(t *testing.T, dir string) []SegmentInfo {
	t.Helper()
	segs := buildLog(t, dir, 600)
	require.Greater(t, len(segs), 3)
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := Open(dir, small())
		require.NoError(t, err)
		unchanged := l.OpenStats().DirUnchanged
		require.NoError(t, l.Close())
		if unchanged {
			return segs
		}
		require.True(t, time.Now().Before(deadline), "no open found the directory unchanged in 5 s")
		time.Sleep(5 * time.Millisecond)
	}
}

// TestUnchangedDirectoryNotListed: after a clean close, an open of the
// unchanged directory takes the segments from the manifest without
// listing, reads everything, and its Close changes no entry (the stamp
// stays valid for the next open); after a change the next Close writes
// the marker and manifest anew.
func TestUnchangedDirectoryNotListed(t *testing.T) {
	dir := t.TempDir()
	segs := stampedLog(t, dir)

	before, _, err := vfs.StatDirStamp(vfs.Default, dir)
	require.NoError(t, err)
	for range 2 {
		l, err := Open(dir, small())
		require.NoError(t, err)
		st := l.OpenStats()
		assert.True(t, st.DirUnchanged)
		assert.True(t, st.Clean)
		assert.Equal(t, len(segs), st.Segments)
		assert.Equal(t, int64(600), readAll(t, l, 0))
		require.NoError(t, l.Close())
		after, _, err := vfs.StatDirStamp(vfs.Default, dir)
		require.NoError(t, err)
		assert.Equal(t, before, after, "an unchanged open and close created, removed or renamed an entry")
	}
	// A read-only open (a follower's view, which lists) changes nothing
	// either.
	f, err := OpenFollower(dir, small())
	require.NoError(t, err)
	assert.Equal(t, int64(600), readAll(t, f, 0))
	require.NoError(t, f.Close())
	l, err := Open(dir, small())
	require.NoError(t, err)
	assert.True(t, l.OpenStats().DirUnchanged)
	require.NoError(t, l.Close())

	// A change: the marker goes (durably) before it, and the next Close
	// writes it anew.
	l = openLog(t, dir, small())
	fill(t, l, 10, 5)
	_, err = os.Lstat(filepath.Join(dir, cleanShutdownFile))
	assert.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, l.Close())
	marker, err := os.ReadFile(filepath.Join(dir, cleanShutdownFile))
	require.NoError(t, err)
	if len(marker) > 0 { // stamped if the clock had moved on
		_, err := decodeCleanStamp(marker)
		require.NoError(t, err)
	}
	l = openLog(t, dir, small())
	assert.Equal(t, int64(610), readAll(t, l, 0))
}

// TestStampedDirectoryChanges: any change of a stamped directory's entries
// (or of its times) since the clean close makes the open list it, and the
// listing's checks apply as they do without a stamp.
func TestStampedDirectoryChanges(t *testing.T) {
	orig := filepath.Join(t.TempDir(), "orig")
	segs := stampedLog(t, orig)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
		check  func(t *testing.T, dir string, l *Log, err error)
	}{
		{"segment gone from the front", func(t *testing.T, dir string) {
			removeSegmentFiles(t, dir, segs[0].BaseOffset)
		}, func(t *testing.T, dir string, l *Log, err error) {
			require.NoError(t, err)
			assert.Equal(t, segs[1].BaseOffset, l.StartOffset())
			assert.Equal(t, int64(600), readAll(t, l, l.StartOffset()))
		}},
		{"segment gone from the middle", func(t *testing.T, dir string) {
			removeSegmentFiles(t, dir, segs[2].BaseOffset)
		}, func(t *testing.T, dir string, l *Log, err error) {
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), segment.FileName(segs[2].BaseOffset, segment.LogSuffix))
		}},
		{"a segment the manifest does not name", func(t *testing.T, dir string) {
			last := segs[len(segs)-1]
			require.NoError(t, os.WriteFile(filepath.Join(dir, segment.FileName(last.NextOffset+100, segment.LogSuffix)), nil, 0o640))
		}, func(t *testing.T, dir string, l *Log, err error) {
			require.NoError(t, err)
			assert.False(t, l.OpenStats().Clean, "files the manifest does not name: recovered")
			assert.Equal(t, int64(600), readAll(t, l, 0))
		}},
		{"a leftover temporary file", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.tmp"), []byte("x"), 0o640))
		}, func(t *testing.T, dir string, l *Log, err error) {
			require.NoError(t, err)
			assert.Equal(t, 1, l.OpenStats().RemovedLeftovers)
			assert.NoFileExists(t, filepath.Join(dir, "manifest.tmp"))
		}},
		{"the directory's times set back", func(t *testing.T, dir string) {
			old := time.Now().Add(-time.Hour)
			require.NoError(t, os.Chtimes(dir, old, old))
		}, func(t *testing.T, dir string, l *Log, err error) {
			require.NoError(t, err)
			assert.True(t, l.OpenStats().Clean)
			assert.Equal(t, int64(600), readAll(t, l, 0))
		}},
		{"a damaged stamp", func(t *testing.T, dir string) {
			marker := filepath.Join(dir, cleanShutdownFile)
			b, err := os.ReadFile(marker)
			require.NoError(t, err)
			b[len(b)-3] ^= 1
			f, err := os.OpenFile(marker, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(b, 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, func(t *testing.T, dir string, l *Log, err error) {
			require.NoError(t, err)
			assert.True(t, l.OpenStats().Clean, "the marker is there: a clean open, with a listing")
			assert.Equal(t, int64(600), readAll(t, l, 0))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			require.NoError(t, os.Rename(orig, dir)) // the same directory (inode), stamp intact
			defer func() { require.NoError(t, os.Rename(dir, orig)) }()
			// The rename moved the directory's change time: restamp it as
			// a clean close of it would.
			restamp(t, dir)
			tc.change(t, dir)
			l, err := Open(dir, small())
			if err == nil {
				assert.False(t, l.OpenStats().DirUnchanged)
			}
			tc.check(t, dir, l, err)
			if err == nil {
				require.NoError(t, l.Close())
			}
		})
		if t.Failed() {
			return
		}
		// The next case starts from the original log again.
		require.NoError(t, os.RemoveAll(orig))
		segs = stampedLog(t, orig)
	}
}

// restamp opens and closes the unchanged log in dir until its marker
// holds the directory's stamp, and checks that it does.
func restamp(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := Open(dir, small())
		require.NoError(t, err)
		require.NoError(t, l.Close())
		b, err := os.ReadFile(filepath.Join(dir, cleanShutdownFile))
		require.NoError(t, err)
		now, _, err := vfs.StatDirStamp(vfs.Default, dir)
		require.NoError(t, err)
		if s, err := decodeCleanStamp(b); err == nil && s.Dir == now {
			return
		}
		require.True(t, time.Now().Before(deadline), "the marker of %s holds no current stamp after 5 s", dir)
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCopiedDirectoryListed: a copy of a stamped directory (marker
// included) is another directory: its open lists it.
func TestCopiedDirectoryListed(t *testing.T) {
	orig := filepath.Join(t.TempDir(), "orig")
	stampedLog(t, orig)
	dir := filepath.Join(t.TempDir(), "copy")
	copyDir(t, orig, dir)
	l := openLog(t, dir, small())
	assert.False(t, l.OpenStats().DirUnchanged)
	assert.True(t, l.OpenStats().Clean)
	assert.Equal(t, int64(600), readAll(t, l, 0))
}

// TestStoreCloseStampsEveryPartition: a Store's Close leaves every
// partition it wrote to stamped (waiting for the clock once for all of
// them), so that the next open of each skips the listing.
func TestStoreCloseStampsEveryPartition(t *testing.T) {
	root := t.TempDir()
	const parts = 8
	for round := 0; round < 3; round++ {
		s, err := OpenStore(root, StoreOptions{Log: small()})
		require.NoError(t, err)
		if round == 0 {
			require.NoError(t, s.CreateTopic("t", parts, TopicConfig{}))
		}
		for p := int32(0); p < parts; p++ {
			l, err := s.Log("t", p)
			require.NoError(t, err)
			if round > 0 {
				assert.True(t, l.OpenStats().DirUnchanged, "round %d partition %d", round, p)
			}
			fill(t, l, 50, 5)
		}
		require.NoError(t, s.Close())
	}
}

// TestStampDoesNotCoverLaterChanges: a damaged snapshot, files created
// while the log was open and a manifest replaced in place are not vouched
// for by the stamp: the next open lists the directory.
func TestStampDoesNotCoverLaterChanges(t *testing.T) {
	// A producer snapshot damaged in place (a torn write after a power
	// cut: the inode and the directory's stamp are kept): the open drops
	// it, so its Close must write the manifest, a snapshot at the end and
	// the marker anew, not keep a manifest naming a file that is gone.
	t.Run("damaged snapshot", func(t *testing.T) {
		dir := t.TempDir()
		stampedLog(t, dir)
		snap := filepath.Join(dir, segment.FileName(600, snapshotSuffix))
		f, err := os.OpenFile(snap, os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte("torn"), 8)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		l, err := Open(dir, small())
		require.NoError(t, err)
		require.NoError(t, l.Close())
		for range 2 {
			l, err := Open(dir, small())
			require.NoError(t, err)
			assert.FileExists(t, snap, "a snapshot at the end offset")
			for _, off := range l.repl.snapshots {
				assert.FileExists(t, filepath.Join(dir, segment.FileName(off, snapshotSuffix)))
			}
			assert.Equal(t, int64(600), readAll(t, l, 0))
			require.NoError(t, l.Close())
		}
	})
	// Files another process created while the log was open are not
	// covered by the stamp of its Close, unchanged or not: the next open
	// lists and removes them.
	for _, write := range []bool{false, true} {
		t.Run(fmt.Sprintf("leftover created while open, write=%v", write), func(t *testing.T) {
			dir := t.TempDir()
			stampedLog(t, dir)
			l, err := Open(dir, small())
			require.NoError(t, err)
			require.True(t, l.OpenStats().DirUnchanged)
			if write {
				fill(t, l, 10, 5)
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.tmp"), []byte("x"), 0o640))
			// The stamp settles, so that Close records it.
			require.Eventually(t, func() bool {
				_, settled, err := vfs.StatDirStamp(vfs.Default, dir)
				return err == nil && settled
			}, 5*time.Second, time.Millisecond, "the directory's stamp settles")
			require.NoError(t, l.Close())
			l, err = Open(dir, small())
			require.NoError(t, err)
			assert.False(t, l.OpenStats().DirUnchanged)
			assert.Equal(t, 1, l.OpenStats().RemovedLeftovers)
			assert.NoFileExists(t, filepath.Join(dir, "manifest.tmp"))
			require.NoError(t, l.Close())
		})
	}
	// A manifest copied back in place (same inode: the directory's stamp
	// does not move) is not the one the stamp vouches for: the open lists,
	// finds segments the old manifest does not name, and recovers them.
	t.Run("manifest replaced in place", func(t *testing.T) {
		dir := t.TempDir()
		stampedLog(t, dir)
		old, err := os.ReadFile(filepath.Join(dir, manifestFile))
		require.NoError(t, err)
		l := openLog(t, dir, small())
		fill(t, l, 300, 5)
		require.NoError(t, l.Close())
		restamp(t, dir)
		f, err := os.OpenFile(filepath.Join(dir, manifestFile), os.O_WRONLY|os.O_TRUNC, 0)
		require.NoError(t, err)
		_, err = f.Write(old)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		l, err = Open(dir, small())
		require.NoError(t, err)
		assert.False(t, l.OpenStats().DirUnchanged)
		assert.Equal(t, int64(900), l.EndOffset())
		assert.Equal(t, int64(900), readAll(t, l, 0))
		require.NoError(t, l.Close())
	})
}
