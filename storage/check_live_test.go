package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// TestCheckBesideAWriter: while a writer holds the partition, Check reads
// it through a read-only follower up to the last whole batch, reports no
// problem for the batch being written after it, and says once that the
// tail is not judged; once the writer is gone, the same bytes are a torn
// tail the next open cuts.
func TestCheckBesideAWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openFilled(t, dir, small(), 300, 5)
	waitRollFlushed(t, l)
	end := l.EndOffset()
	segs := segmentsOf(t, l)
	require.Greater(t, len(segs), 2)
	active := segs[len(segs)-1]
	// Half a batch at the end of the active segment: what the writer is
	// appending as Check reads.
	b, err := segment.AppendBatch(nil, []segment.Record{{Value: []byte("being written")}}, segment.EncodeOptions{BaseOffset: end})
	require.NoError(t, err)
	f, err := os.OpenFile(active.Path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b[:len(b)/2], active.Size)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	rep, err := Check(dir, CheckOptions{})
	require.NoError(t, err)
	assert.Empty(t, rep.Problems)
	assert.Equal(t, []WritingTail{{Partition: dir, From: end}}, rep.Writing)
	require.Len(t, rep.Stats, 1)
	assert.Equal(t, end, rep.Stats[0].End)
	assert.Equal(t, int64(len(segs)), rep.Stats[0].Segments)

	gotEnd, held, err := WriterEnd(dir)
	require.NoError(t, err)
	assert.True(t, held)
	assert.Equal(t, end, gotEnd)
	// OpenLogWalk reads the active segment as far as Check does.
	walkActive := func(path string) (w *LogWalk, bad int) {
		w, err := OpenLogWalk(path)
		require.NoError(t, err)
		t.Cleanup(func() { w.Close() })
		for w.Next() {
			if w.VerifyErr != nil || w.Header.BaseOffset >= end {
				bad++
			}
		}
		return w, bad
	}
	w, bad := walkActive(active.Path)
	assert.Equal(t, end, w.HeldEnd)
	assert.True(t, w.Stopped(), "the walk stops at the writer's end")
	assert.NoError(t, w.Err())
	assert.Zero(t, bad, "the tail being written is not judged")

	// The same bytes where no writer holds them (what a crash leaves).
	copied := filepath.Join(t.TempDir(), "t-0")
	copyDir(t, dir, copied)
	require.NoError(t, l.Close())
	rep, err = Check(copied, CheckOptions{})
	require.NoError(t, err)
	assert.Empty(t, rep.Writing)
	require.Len(t, rep.Problems, 1)
	assert.Equal(t, ProblemTornTail, rep.Problems[0].Kind)
	assert.Equal(t, filepath.Join(copied, filepath.Base(active.Path)), rep.Problems[0].File)
	assert.Equal(t, active.Size, rep.Problems[0].Pos)
	assert.True(t, rep.Problems[0].OpenRepairs)
	assert.False(t, rep.Problems[0].CutAtDamage(), "the open cuts a torn tail by itself")
	_, held, err = WriterEnd(copied)
	require.NoError(t, err)
	assert.False(t, held)
	w, bad = walkActive(rep.Problems[0].File)
	assert.Equal(t, int64(-1), w.HeldEnd)
	assert.False(t, w.Stopped())
	assert.Equal(t, 1, bad, "where no writer holds it, the half batch is read and fails its checksum")

	_, err = OpenLogWalk(filepath.Join(copied, "00000000000000099999.log"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// TestCheckRecordsDecodesEveryRecord: a batch whose checksum matches but
// whose records do not decode passes recovery's scan; CheckOptions.Records
// reports it, with its position and offsets.
func TestCheckRecordsDecodesEveryRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openLog(t, dir, small())
	_, err := l.Append(Record{Value: []byte("fine")})
	require.NoError(t, err)
	// A batch that says it holds 2 records but holds 1, checksummed.
	b, err := segment.AppendBatch(nil, []segment.Record{{Value: []byte("one")}}, segment.EncodeOptions{BaseOffset: 1})
	require.NoError(t, err)
	binary.BigEndian.PutUint32(b[23:], 1) // last offset delta
	binary.BigEndian.PutUint32(b[57:], 2) // record count
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	_, err = l.AppendBatch(b)
	require.NoError(t, err)
	require.NoError(t, l.Close())

	rep, err := Check(dir, CheckOptions{})
	require.NoError(t, err)
	assert.Empty(t, rep.Problems, "recovery's scan does not decode records")

	rep, err = Check(dir, CheckOptions{Records: true})
	require.NoError(t, err)
	require.Len(t, rep.Problems, 1)
	p := rep.Problems[0]
	assert.Equal(t, ProblemDamage, p.Kind)
	assert.Equal(t, SeverityError, p.Severity)
	assert.Equal(t, int64(1), p.From)
	assert.Equal(t, int64(3), p.Upto)
	assert.Contains(t, p.What, "reads of it fail")
}

// TestCheckPassesOverSegmentsRetentionDeletesMeanwhile: the writer's
// retention deletes the two oldest segments at some step of the Check
// after it listed them; Check passes over what it could not finish
// reading (the log start moved past it) and reports no problem.
func TestCheckPassesOverSegmentsRetentionDeletesMeanwhile(t *testing.T) {
	cases := []struct {
		name string
		// when the deletion happens: before the nth (from 1) op on the
		// file of segment seg with the suffix.
		op, suffix string
		seg, nth   int
		records    bool
		// writerLate: no writer holds the partition when Check begins;
		// one opens it at the deletion.
		writerLate bool
		// checked is how many of the two deleted segments Check read
		// whole before they went.
		checked int
	}{
		{name: "before the first is read", op: "lstat", suffix: segment.LogSuffix, seg: 0, nth: 1},
		{name: "between its indexes and its log", op: "open", suffix: segment.LogSuffix, seg: 0, nth: 1},
		{name: "after the first is read", op: "lstat", suffix: segment.LogSuffix, seg: 1, nth: 1, checked: 1},
		{name: "while its records are checked", op: "open", suffix: segment.LogSuffix, seg: 0, nth: 2, records: true},
		{name: "while its index is read", op: "open", suffix: segment.TimeIndexSuffix, seg: 1, nth: 1, checked: 1},
		{name: "by a writer that opened after the check began", op: "lstat", suffix: segment.LogSuffix, seg: 1, nth: 1, writerLate: true, checked: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, l, segs := sealedSegments(t)
			target := filepath.Join(dir, segment.FileName(segs[tc.seg].BaseOffset, tc.suffix))
			end := l.EndOffset()
			if tc.writerLate {
				require.NoError(t, l.Close())
			}
			seen := 0
			fsys := &hookFS{FS: vfs.Default, hook: func(op, name string) error {
				if op != tc.op || name != target {
					return nil
				}
				if seen++; seen != tc.nth {
					return nil
				}
				if tc.writerLate {
					l = openLog(t, dir, small())
				}
				_, err := l.DeleteSegmentsBefore(segs[2].BaseOffset)
				require.NoError(t, err)
				waitRemoved(t, segs[:2])
				return nil
			}}
			rep, err := Check(dir, CheckOptions{FS: fsys, Records: tc.records})
			require.NoError(t, err)
			require.Equal(t, tc.nth, seen, "the deletion ran")
			assert.Empty(t, rep.Problems)
			require.Len(t, rep.Stats, 1)
			assert.Equal(t, int64(len(segs)-2+tc.checked), rep.Stats[0].Segments)
			assert.Equal(t, end, rep.Stats[0].End)
		})
	}
}

// TestCheckPassesOverTheLastSegmentRolledAndDeletedMeanwhile: the last
// segment the check lists, the writer's active one when the check began,
// is sealed by a roll and deleted by retention, with every segment before
// it, while the check reads the partition.
func TestCheckPassesOverTheLastSegmentRolledAndDeletedMeanwhile(t *testing.T) {
	cases := []struct {
		name string
		op   string // the deletion happens before the first op on its .log
		// readBefore: the check read the segments before it whole.
		readBefore bool
	}{
		{name: "while the follower opens the partition", op: "open"},
		{name: "after the segments before it were read", op: "lstat", readBefore: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, l, segs := sealedSegments(t)
			target := filepath.Join(dir, segment.FileName(segs[len(segs)-1].BaseOffset, segment.LogSuffix))
			end := l.EndOffset()
			deleted := false
			fsys := &hookFS{FS: vfs.Default, hook: func(op, name string) error {
				if op != tc.op || name != target || deleted {
					return nil
				}
				deleted = true
				require.NoError(t, l.Roll())
				_, err := l.DeleteSegmentsBefore(end)
				require.NoError(t, err)
				waitRemoved(t, segs)
				return nil
			}}
			rep, err := Check(dir, CheckOptions{FS: fsys})
			require.NoError(t, err)
			require.True(t, deleted, "the deletion ran")
			assert.Empty(t, rep.Problems)
			require.Len(t, rep.Stats, 1)
			want := int64(0)
			if tc.readBefore {
				want = int64(len(segs) - 1)
			}
			assert.Equal(t, want, rep.Stats[0].Segments, "segments read whole")
			assert.Equal(t, end, rep.Stats[0].End)
		})
	}
}

// sealedSegments makes a partition of more than three segments whose
// sealed ones are flushed, held open by its writer l.
func sealedSegments(t *testing.T) (string, *Log, []SegmentInfo) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openFilled(t, dir, small(), 1000, 5)
	waitRollFlushed(t, l)
	segs := segmentsOf(t, l)
	require.Greater(t, len(segs), 3)
	return dir, l, segs
}

// waitRemoved waits until the files of the segments retention deleted
// are gone (the store removes them in the background).
func waitRemoved(t *testing.T, segs []SegmentInfo) {
	t.Helper()
	for _, s := range segs {
		require.Eventually(t, func() bool {
			_, err := os.Lstat(s.Path)
			return errors.Is(err, fs.ErrNotExist)
		}, 10*time.Second, time.Millisecond, "retention removes %s", s.Path)
	}
}
