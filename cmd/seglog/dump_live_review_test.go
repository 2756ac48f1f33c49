package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// A batch with a bad checksum at the end of the newest .log, with nothing
// after it, is read again after a pause; the writer appends the next
// batch meanwhile, so the reread finds it followed, reads it once more,
// finds it still damaged and reports it. No note says a batch was read
// again whole.
func TestDumpBesideWriterNoNoteForDamageThatStayed(t *testing.T) {
	p := newHeldPartition(t)
	bad := bytes.Clone(p.batch)
	bad[len(bad)-1] ^= 0xff // real damage: a flipped byte in the last batch
	writeAt(t, p.logPath, bad, p.size)

	next, err := segment.AppendBatch(nil, []segment.Record{{Timestamp: fixedTS, Value: []byte("e")}}, segment.EncodeOptions{})
	require.NoError(t, err)
	segment.SetBaseOffset(next, 4)
	pauses := 0
	d, _, errOut := testDumper(dumpOptions{}, func() {
		if pauses++; pauses == 1 { // the writer appends after the damaged batch
			writeAt(t, p.logPath, next, p.size+int64(len(bad)))
		}
	})
	d.file(p.logPath)
	require.NoError(t, d.w.Flush())
	require.Equal(t, 1, d.problems, errOut.String())
	assert.NotContains(t, errOut.String(), "read again once whole",
		"no batch became whole: the only batch read again is the damaged one, reported")
}

// A batch in flight at the end of the newest .log whose append failed
// (ENOSPC): the writer cuts the .log back (cutFailedLocked) during the
// pause. The reread walk ends cleanly at the cut: no damage, and no note
// of a batch read again whole, since none was.
func TestDumpBesideWriterNoNoteAfterCut(t *testing.T) {
	p := newHeldPartition(t)
	writeAt(t, p.logPath, p.batch[:len(p.batch)/2], p.size)
	d, out, errOut := testDumper(dumpOptions{}, func() {
		require.NoError(t, os.Truncate(p.logPath, p.size)) // the writer's cut
	})
	d.file(p.logPath)
	require.NoError(t, d.w.Flush())
	assert.Zero(t, d.problems, errOut.String())
	assert.Equal(t, 3, bytes.Count(out.Bytes(), []byte("baseOffset:")))
	assert.NotContains(t, errOut.String(), "read again once whole", "the batch in flight was cut, never whole")
}

// The live index check verifies the batches past the size the data walk
// read: an offset-index entry naming a damaged batch there is reported.
// (A writer writes a batch whole before its entries, so a batch that an
// entry read names can be verified.)
func TestDumpBesideWriterIndexEntryNamesDamagedBatch(t *testing.T) {
	p := newHeldPartition(t)
	read := p.size // the size the data walk read
	bad := bytes.Clone(p.batch)
	bad[len(bad)-1] ^= 0xff
	writeAt(t, p.logPath, bad, p.size)

	idx := siblingPath(p.logPath, segment.IndexSuffix)
	at := firstZeroEntry(t, idx, index.OffsetEntrySize)
	e := make([]byte, index.OffsetEntrySize)
	binary.BigEndian.PutUint32(e[0:], 3)
	binary.BigEndian.PutUint32(e[4:], uint32(p.size))
	writeAt(t, idx, e, at)
	n, out, stderr := dumpWalk(t, p.logPath, read, true, dumpOptions{verifyIndex: true}, nil)
	t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.NotZero(t, n, "an index entry names a batch whose checksum does not match; exit 0")

	// Control: the whole file, as dump reads it when it opens it after the append.
	n, _, stderr = dumpWalk(t, p.logPath, p.size+int64(len(bad)), true, dumpOptions{verifyIndex: true}, nil)
	assert.NotZero(t, n, stderr)
}

// A background roll leaves the old segment unsealed; its seal (cut,
// final time-index entry stored through the map, trims) runs later in the
// writer's flusher, after dump may have found the segment no longer the
// newest. A final time entry read while the flusher stores it (timestamp
// stored, offset not yet) is checked again after a pause, as in the
// newest segment (TestDumpBesideWriterTornTimeEntry); here it is
// completed during that pause.
func TestDumpBesideWriterSealTornTimeEntry(t *testing.T) {
	l, _ := heldLog(t, storage.Options{}) // default interval: 3 small batches get no entry before the seal
	for i := range 3 {
		_, err := l.Append(storage.Record{Timestamp: fixedTS + int64(i), Value: []byte("v")})
		require.NoError(t, err)
	}
	require.NoError(t, l.Sync()) // the roll seals at once: no flusher racing this test
	require.NoError(t, l.Roll())
	_, err := l.Append(storage.Record{Timestamp: fixedTS + 9, Value: []byte("w")})
	require.NoError(t, err)
	segs, err := l.Segments()
	require.NoError(t, err)
	require.Len(t, segs, 2)
	logPath := segs[0].Path
	tidx := siblingPath(logPath, segment.TimeIndexSuffix)
	whole, err := os.ReadFile(tidx)
	require.NoError(t, err)
	require.Len(t, whole, index.TimeEntrySize, "the seal's final entry {fixedTS+2, offset 2}")
	final := bytes.Clone(whole)
	clear(whole[8:]) // the final entry's offset not stored yet
	require.NoError(t, os.WriteFile(tidx, whole, 0o640))

	pauses := 0
	d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {
		if pauses++; pauses == 1 {
			writeAt(t, tidx, final, 0)
		}
	})
	d.file(logPath)
	require.NoError(t, d.w.Flush())
	assert.Zero(t, d.problems, "the writer's flusher was storing the seal's entry: %s", errOut)
}

// countingFS runs hook at the n-th ReadDir of dir.
type countingFS struct {
	vfs.FS
	dir  string
	n    int
	hook func()
}

func (c *countingFS) ReadDir(name string) ([]os.DirEntry, error) {
	if filepath.Clean(name) == c.dir {
		if c.n--; c.n == 0 {
			c.hook()
		}
	}
	return c.FS.ReadDir(name)
}

// Retention (DeleteSegmentsBefore, or the store's background deleter)
// removes the oldest segment after dump --dir listed it: beside the
// writer that holds the partition that is a note, not damage.
func TestDumpBesideWriterRetention(t *testing.T) {
	l, dir := fourSegments(t)

	old := vfs.Default
	t.Cleanup(func() { vfs.Default = old })
	fired := false
	vfs.Default = &countingFS{FS: old, dir: dir, n: 3, hook: func() {
		// After IsPartitionDir and dumpDirFiles' listing: appending's.
		_, err := l.DeleteSegmentsBefore(1)
		require.NoError(t, err)
		fired = true
	}}
	r := seglog(t, "", "dump", "--dir", dir)
	require.True(t, fired)
	assert.Equal(t, 0, r.code, "retention deleted a listed segment: %s", r.stderr)
}

// Garbage in the preallocated zero tail of the newest .log (real damage)
// and a writer appending slowly: each reread finds one more whole batch
// and the walk moves on, to meet the zeros-then-garbage again. The pauses
// are bounded for the whole walk (rereads), not per position: dump does
// not follow the writer through its preallocated tail.
func TestDumpBesideWriterSlowWriterBounded(t *testing.T) {
	p := newHeldPartition(t)
	writeAt(t, p.logPath, make([]byte, 256<<10), p.size)
	writeAt(t, p.logPath, []byte{0xee}, p.size+256<<10-1) // stray byte at the end of the tail
	const appends = 500
	pos, off := p.size, int64(3)
	pauses := 0
	d, _, errOut := testDumper(dumpOptions{}, func() {
		pauses++
		if off < 3+appends { // the writer appends one small batch per pause
			b, err := segment.AppendBatch(nil, []segment.Record{{Timestamp: fixedTS, Value: []byte("x")}}, segment.EncodeOptions{})
			require.NoError(t, err)
			segment.SetBaseOffset(b, off)
			writeAt(t, p.logPath, b, pos)
			pos += int64(len(b))
			off++
		}
	})
	d.file(p.logPath)
	require.NoError(t, d.w.Flush())
	t.Logf("%d pauses (%v at 20 ms each, up to %v if the writer appends every 2 s); problems %d; stderr %q",
		pauses, time.Duration(pauses)*liveRereadGap, time.Duration(pauses)*2*time.Second, d.problems, errOut.String())
	assert.NotZero(t, d.problems)
	assert.LessOrEqual(t, pauses, 2*d.rereads(), "rereads of one piece of damage")
}

// An index entry naming a damaged batch that the writer appended after
// the data walk ended (past the end of the file, or into the preallocated
// tail, where the walk stopped at the zeros) is reported.
func TestDumpBesideWriterEntryNamesDamagedBatchPastWalk(t *testing.T) {
	for _, prealloc := range []bool{false, true} {
		name := map[bool]string{false: "past the end", true: "into the preallocated tail"}[prealloc]
		t.Run(name, func(t *testing.T) {
			p := newHeldPartition(t)
			if prealloc {
				writeAt(t, p.logPath, make([]byte, 256<<10), p.size)
			}
			f, err := os.Open(p.logPath)
			require.NoError(t, err)
			defer f.Close()
			fi, err := f.Stat()
			require.NoError(t, err)
			size := fi.Size() // what d.file's openLogFile reads

			d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {})
			end := d.log(d.newLogWalk(f, size, p.logPath, f), 0, true, nil)
			require.Equal(t, p.size, end, "the data walk ends at the end of the data")

			// After the walk, before the index check: a batch with a flipped
			// byte where the writer appends, and an offset entry naming it.
			bad := bytes.Clone(p.batch)
			bad[len(bad)-1] ^= 0xff
			writeAt(t, p.logPath, bad, p.size)
			idx := siblingPath(p.logPath, segment.IndexSuffix)
			e := make([]byte, index.OffsetEntrySize)
			binary.BigEndian.PutUint32(e[0:], 3)
			binary.BigEndian.PutUint32(e[4:], uint32(p.size))
			writeAt(t, idx, e, firstZeroEntry(t, idx, index.OffsetEntrySize))

			d.liveIndexCheck(f, p.logPath, 0, end, true, liveIndexChecks) // as d.file does
			require.NoError(t, d.w.Flush())
			assert.NotZero(t, d.problems, "an index entry names a batch whose checksum does not match; stderr %q", errOut)
		})
	}
}

// --verify-index of an .index FILE in a held directory reports damage in
// its .log that no writer can have left: bytes after a sealed segment's
// data, or after the newest one's.
func TestDumpIndexFileReportsLogDamageInSealedSegment(t *testing.T) {
	_, segs := rolledLog(t)
	require.Len(t, segs, 2)
	logPath := segs[0].Path
	fi, err := os.Stat(logPath)
	require.NoError(t, err)
	writeAt(t, logPath, bytes.Repeat([]byte{0xee}, 100), fi.Size()) // not a batch

	idx := siblingPath(logPath, segment.IndexSuffix)
	cp := filepath.Join(t.TempDir(), "orders-0")
	require.NoError(t, os.MkdirAll(cp, 0o750))
	copySegment(t, logPath, cp)
	unheld := seglog(t, "", "dump", "--verify-index", filepath.Join(cp, filepath.Base(idx)))
	require.Equal(t, 1, unheld.code, "control: nobody holds the copy: %s", unheld.stderr)

	held := seglog(t, "", "dump", "--verify-index", idx)
	assert.Equal(t, 1, held.code, "held: the same damage passes; stdout %q stderr %q", held.stdout, held.stderr)
}

// A missing .log in a held directory is retention's doing only when every
// segment there now is newer: a hole between segments, or a FILE newer
// than the newest, is reported.
func TestDumpMissingSegmentIsNotAlwaysRetention(t *testing.T) {
	t.Run("hole in --dir", func(t *testing.T) {
		l, dir := fourSegments(t)
		segs, err := l.Segments()
		require.NoError(t, err)
		require.Len(t, segs, 4)
		old := vfs.Default
		t.Cleanup(func() { vfs.Default = old })
		fired := false
		vfs.Default = &countingFS{FS: old, dir: dir, n: 3, hook: func() {
			// After dump listed the segments: segment 1 goes, segment 0 stays.
			for _, suf := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
				require.NoError(t, os.Remove(siblingPath(segs[1].Path, suf)))
			}
			fired = true
		}}
		r := seglog(t, "", "dump", "--dir", dir)
		require.True(t, fired)
		_, err = os.Stat(segs[0].Path)
		require.NoError(t, err, "the older segment is still there: no retention")
		t.Logf("stderr: %s", r.stderr)
		assert.Equal(t, 1, r.code, "segment 1 missing between segments 0 and 2")
	})
	t.Run("FILE newer than the newest segment", func(t *testing.T) {
		_, dir := fourSegments(t)
		typo := filepath.Join(dir, segment.FileName(999, segment.LogSuffix))
		r := seglog(t, "", "dump", typo)
		t.Logf("stderr: %s", r.stderr)
		assert.Equal(t, 1, r.code, "never existed; not retention")
		cp := filepath.Join(t.TempDir(), "orders-0")
		require.NoError(t, os.MkdirAll(cp, 0o750))
		r = seglog(t, "", "dump", filepath.Join(cp, segment.FileName(999, segment.LogSuffix)))
		assert.Equal(t, 1, r.code, "control, unheld")
	})
}

// Retention deleting a segment while its index check pauses before a
// second look is a note, not missing files.
func TestDumpBesideWriterRetentionDuringIndexRetry(t *testing.T) {
	l, segs := rolledLog(t)
	logPath := segs[0].Path
	tidx := siblingPath(logPath, segment.TimeIndexSuffix)
	whole, err := os.ReadFile(tidx)
	require.NoError(t, err)
	clear(whole[8:]) // the seal's final entry being stored
	require.NoError(t, os.WriteFile(tidx, whole, 0o640))

	pauses := 0
	d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {
		if pauses++; pauses == 1 {
			_, err := l.DeleteSegmentsBefore(3) // retention
			require.NoError(t, err)
		}
	})
	d.file(logPath)
	require.NoError(t, d.w.Flush())
	assert.Zero(t, d.problems, "retention deleted the segment during the retry: %s", errOut)
}

func TestDumpIndexFileReportsLogDamageInNewestSegment(t *testing.T) {
	p := newHeldPartition(t)
	writeAt(t, p.logPath, bytes.Repeat([]byte{0xee}, 100), p.size)
	idx := siblingPath(p.logPath, segment.IndexSuffix)
	cp := filepath.Join(t.TempDir(), "orders-0")
	require.NoError(t, os.MkdirAll(cp, 0o750))
	copySegment(t, p.logPath, cp)
	unheld := seglog(t, "", "dump", "--verify-index", filepath.Join(cp, filepath.Base(idx)))
	require.Equal(t, 1, unheld.code, "control: nobody holds the copy: %s", unheld.stderr)
	held := seglog(t, "", "dump", "--verify-index", idx)
	assert.Equal(t, 1, held.code, "held: stderr %q", held.stderr)
	// The .log itself, held: reported after the rereads.
	r := seglog(t, "", "dump", p.logPath)
	t.Logf(".log held: code %d stderr %q", r.code, r.stderr)
}

// rolledLog returns a held log of two segments: three batches of
// increasing timestamps, synced, rolled and sealed, then one more batch.
func rolledLog(t *testing.T) (*storage.Log, []storage.SegmentInfo) {
	t.Helper()
	l, _ := heldLog(t, storage.Options{})
	for i := range 3 {
		_, err := l.Append(storage.Record{Timestamp: fixedTS + int64(i), Value: []byte("v")})
		require.NoError(t, err)
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.Roll())
	_, err := l.Append(storage.Record{Timestamp: fixedTS + 9, Value: []byte("w")})
	require.NoError(t, err)
	segs, err := l.Segments()
	require.NoError(t, err)
	return l, segs
}

// fourSegments returns a held log of four segments of one batch each, and
// its directory's real path. Each segment is synced before the roll, so
// that the roll seals it at once (no seal runs in the background later).
func fourSegments(t *testing.T) (*storage.Log, string) {
	t.Helper()
	l, _ := heldLog(t, storage.Options{})
	for range 3 {
		_, err := l.Append(storage.Record{Timestamp: fixedTS, Value: []byte("v")})
		require.NoError(t, err)
		require.NoError(t, l.Sync())
		require.NoError(t, l.Roll())
	}
	_, err := l.Append(storage.Record{Timestamp: fixedTS, Value: []byte("v")})
	require.NoError(t, err)
	dir, err := vfs.RealPath(l.Dir())
	require.NoError(t, err)
	return l, dir
}

// A middle segment (older and newer ones stay) with a damaged time index,
// its files removed while dump pauses before the second look of the index
// check: neither retention (oldest first) nor a truncation (everything
// after the cut) deletes a segment between two that stay, so that is a
// problem, and so is the damage found before.
func TestDumpSegmentDeletedNotByRetention(t *testing.T) {
	l, dir := fourSegments(t)
	segs, err := l.Segments()
	require.NoError(t, err)
	require.Len(t, segs, 4)
	mid := segs[1].Path
	tidx := siblingPath(mid, segment.TimeIndexSuffix)
	b, err := os.ReadFile(tidx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(b), index.TimeEntrySize)
	binary.BigEndian.PutUint64(b[0:], binary.BigEndian.Uint64(b[0:])+5) // wrong timestamp: damage
	require.NoError(t, os.WriteFile(tidx, b, 0o640))

	cp := filepath.Join(t.TempDir(), "orders-0")
	require.NoError(t, os.MkdirAll(cp, 0o750))
	for _, s := range segs {
		copySegment(t, s.Path, cp)
	}
	unheld := seglog(t, "", "dump", "--verify-index", filepath.Join(cp, filepath.Base(mid)))
	require.Equal(t, 1, unheld.code, "control, a copy: %s", unheld.stderr)

	d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {
		for _, suf := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
			_ = os.Remove(siblingPath(mid, suf)) // not retention: segment 0 stays
		}
	})
	d.file(mid)
	require.NoError(t, d.w.Flush())
	_, err = os.Stat(segs[0].Path)
	require.NoError(t, err, "the oldest segment is still there")
	t.Logf("dir %s\nstderr: %s", dir, errOut)
	assert.NotZero(t, d.problems, "index damage of a segment deleted between two that stay is hidden")
}

// A dangling symbolic link named like a segment older than every segment
// there is no segment retention deleted: its name is still there.
func TestDumpDanglingSymlinkIsNotRetention(t *testing.T) {
	l, dir := fourSegments(t)
	_, err := l.DeleteSegmentsBefore(1) // real retention of segment 0
	require.NoError(t, err)
	name := segment.FileName(0, segment.LogSuffix)
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "gone.log"), filepath.Join(dir, name)))

	cp := filepath.Join(t.TempDir(), "orders-0")
	require.NoError(t, os.MkdirAll(cp, 0o750))
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "gone.log"), filepath.Join(cp, name)))
	unheld := seglog(t, "", "dump", filepath.Join(cp, name))
	require.Equal(t, 1, unheld.code, "control, a copy: %s", unheld.stderr)

	held := seglog(t, "", "dump", filepath.Join(dir, name))
	t.Logf("held: code %d stderr %q", held.code, held.stderr)
	assert.Equal(t, 1, held.code, "a dangling link is no segment retention deleted")
}

// An index entry naming a batch past the data walk whose base offset
// skips ahead (no writer does that; the checksum does not cover the base
// offset) is reported.
func TestDumpBesideWriterEntryNamesOutOfSequenceBatch(t *testing.T) {
	p := newHeldPartition(t)
	f, err := os.Open(p.logPath)
	require.NoError(t, err)
	defer f.Close()
	d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {})
	end := d.log(d.newLogWalk(f, p.size, p.logPath, f), 0, true, nil)
	require.Equal(t, p.size, end)

	segment.SetBaseOffset(p.batch, 7) // no writer skips offsets 3..6
	writeAt(t, p.logPath, p.batch, p.size)
	idx := siblingPath(p.logPath, segment.IndexSuffix)
	e := make([]byte, index.OffsetEntrySize)
	binary.BigEndian.PutUint32(e[0:], 7)
	binary.BigEndian.PutUint32(e[4:], uint32(p.size))
	writeAt(t, idx, e, firstZeroEntry(t, idx, index.OffsetEntrySize))

	cp := filepath.Join(t.TempDir(), "orders-0")
	require.NoError(t, os.MkdirAll(cp, 0o750))
	copySegment(t, p.logPath, cp)
	unheld := seglog(t, "", "dump", "--verify-index", filepath.Join(cp, filepath.Base(p.logPath)))
	require.Equal(t, 1, unheld.code, "control, a copy: %s", unheld.stderr)

	d.liveIndexCheck(f, p.logPath, 0, end, true, liveIndexChecks) // as d.file does
	require.NoError(t, d.w.Flush())
	t.Logf("copy stderr: %s\nheld stderr: %s", unheld.stderr, errOut)
	assert.NotZero(t, d.problems, "an entry names a batch out of sequence")
}
