package segment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// appendN appends n batches of recsPer records each, with values that name
// their offset, and returns the encoded batches.
func appendN(t testing.TB, s *Segment, n, recsPer int, valueSize int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < n; i++ {
		next := s.NextOffset()
		recs := make([]Record, recsPer)
		for j := range recs {
			v := bytes.Repeat([]byte{byte(next + int64(j))}, valueSize)
			copy(v, fmt.Sprintf("off=%d;", next+int64(j)))
			recs[j] = Record{Timestamp: 1000 + next + int64(j), Key: []byte("k"), Value: v}
		}
		b, err := AppendBatch(nil, recs, EncodeOptions{BaseOffset: next})
		require.NoError(t, err)
		h, err := Verify(b, DefaultLimits)
		require.NoError(t, err)
		_, err = s.Append(b, h)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

func testOpts() Options { return Options{IndexIntervalBytes: 512, MaxIndexBytes: 64 << 10} }

func readAllBatches(t testing.TB, s *Segment) [][]byte {
	t.Helper()
	size, err := s.Size()
	require.NoError(t, err)
	var out [][]byte
	for pos := int64(0); pos < size; {
		var hb [HeaderSize]byte
		_, err := s.ReadAt(hb[:], pos)
		require.NoError(t, err)
		h, err := ParseHeader(hb[:], DefaultLimits)
		require.NoError(t, err)
		b := make([]byte, h.Size())
		_, err = s.ReadAt(b, pos)
		require.NoError(t, err)
		out = append(out, b)
		pos += int64(h.Size())
	}
	return out
}

func TestAppendFindRead(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 100)
	defer s.Close()
	batches := appendN(t, s, 50, 3, 100)
	assert.Equal(t, int64(250), s.NextOffset())
	for off := int64(100); off < 250; off++ {
		pos, h, err := s.Find(off)
		require.NoError(t, err, "offset %d", off)
		assert.LessOrEqual(t, h.BaseOffset, off)
		assert.GreaterOrEqual(t, h.LastOffset(), off)
		b := make([]byte, h.Size())
		_, err = s.ReadAt(b, pos)
		require.NoError(t, err)
		assert.Equal(t, batches[(off-100)/3], b)
	}
	_, _, err := s.Find(250)
	assert.ErrorIs(t, err, io.EOF)

	_, err = s.Append(batches[0], Header{BaseOffset: 7})
	assert.Error(t, err, "an append at the wrong offset is refused")
}

func TestFindTime(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	defer s.Close()
	appendN(t, s, 40, 2, 200) // record o has timestamp 1000+o
	for _, ts := range []int64{0, 1000, 1001, 1033, 1079} {
		_, h, err := s.FindTime(ts)
		require.NoError(t, err, "ts %d", ts)
		assert.GreaterOrEqual(t, h.MaxTimestamp, ts)
		assert.True(t, h.BaseOffset == 0 || h.BaseTimestamp-1 < ts, "no earlier batch qualifies: ts %d got batch %d", ts, h.BaseOffset)
	}
	_, _, err := s.FindTime(1080)
	assert.ErrorIs(t, err, io.EOF)
}

func TestSealReopenSealed(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	batches := appendN(t, s, 30, 4, 100)
	require.NoError(t, s.Seal())
	_, err := s.Append(batches[0], Header{BaseOffset: s.NextOffset()})
	assert.ErrorIs(t, err, ErrSealed)
	require.NoError(t, s.Close())

	fi, err := os.Stat(filepath.Join(dir, FileName(0, IndexSuffix)))
	require.NoError(t, err)
	assert.Less(t, fi.Size(), int64(64<<10), "sealed index trimmed")

	r := Open(dir, 0, 120, testOpts())
	defer r.Close()
	assert.Equal(t, batches, readAllBatches(t, r))
	ts, off, ok, err := r.MaxTimestamp()
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(1000+119), ts)
	assert.Equal(t, int64(119), off, "the last offset of the batch with the largest timestamp, as Kafka keeps it")
}

func TestOpenActiveAfterClose(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	batches := appendN(t, s, 30, 2, 300)
	require.NoError(t, s.Close())
	s, err := OpenActive(dir, 0, testOpts())
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, int64(60), s.NextOffset())
	batches = append(batches, appendN(t, s, 5, 2, 300)...)
	assert.Equal(t, batches, readAllBatches(t, s))
}

// Recovery keeps every complete batch before the damage and nothing after,
// for the file cut at every byte of its last batch and for garbage appended.
func TestRecoverCutAndGarbage(t *testing.T) {
	dir, logPath, batches, full := closedSegment(t, 20)
	lastStart := len(full) - len(batches[len(batches)-1])

	check := func(t *testing.T, wantBatches int, wantCut int64) {
		s, err := OpenActive(dir, 0, testOpts())
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
		}
		cut, err := s.Recover()
		require.NoError(t, err)
		assert.Equal(t, wantCut, cut)
		got := readAllBatches(t, s)
		require.Len(t, got, wantBatches)
		if wantBatches > 0 {
			assert.Equal(t, batches[:wantBatches], got)
		}
		assert.Equal(t, int64(wantBatches*3), s.NextOffset())
		// The rebuilt index serves lookups.
		for off := int64(0); off < int64(wantBatches*3); off++ {
			_, h, err := s.Find(off)
			require.NoError(t, err)
			assert.Equal(t, off/3*3, h.BaseOffset)
		}
		require.NoError(t, s.Close())
	}
	// A tail of zeros (a preallocated part never written, or the first
	// bytes of a base offset) is cut but not counted: nothing was lost.
	counted := func(tail []byte) int64 {
		if allZero(tail) {
			return 0
		}
		return int64(len(tail))
	}
	for n := lastStart; n < len(full); n++ {
		require.NoError(t, os.WriteFile(logPath, full[:n], 0o640))
		check(t, len(batches)-1, counted(full[lastStart:n]))
	}
	for _, garbage := range [][]byte{{0}, bytes.Repeat([]byte{0xff}, 100), full[:HeaderSize+3], make([]byte, 5000)} {
		require.NoError(t, os.WriteFile(logPath, append(bytes.Clone(full), garbage...), 0o640))
		check(t, len(batches), counted(garbage))
		fi, err := os.Stat(logPath)
		require.NoError(t, err)
		assert.Equal(t, int64(len(full)), fi.Size(), "cut back to the data")
	}
	// A flipped byte in the middle keeps everything before that batch.
	for _, i := range []int{0, 17, 30, len(batches[0]) + 40} {
		damaged := bytes.Clone(full)
		damaged[i] ^= 0x10
		require.NoError(t, os.WriteFile(logPath, damaged, 0o640))
		k := 0
		if i >= len(batches[0]) {
			k = 1
		}
		check(t, k, int64(len(full)-k*len(batches[0])))
	}
}

// An index that fails its sanity check is rebuilt from the log to the same
// entries.
func TestSealedIndexRebuilt(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	batches := appendN(t, s, 40, 2, 200)
	require.NoError(t, s.Seal())
	require.NoError(t, s.Close())
	idxPath := filepath.Join(dir, FileName(0, IndexSuffix))
	good, err := os.ReadFile(idxPath)
	require.NoError(t, err)
	require.Greater(t, len(good), 16)

	damage := map[string][]byte{
		"odd size":      good[:len(good)-3],
		"out of order":  append(bytes.Clone(good[8:16]), good[:8]...),
		"past the log":  append(bytes.Clone(good), 0, 0, 0, 99, 0x7f, 0xff, 0xff, 0xff),
		"zeroed middle": append(append(bytes.Clone(good[:8]), make([]byte, 8)...), good[16:]...),
	}
	for name, bad := range damage {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(idxPath, bad, 0o640))
			r := Open(dir, 0, 80, testOpts())
			assert.Equal(t, batches, readAllBatches(t, r))
			require.NoError(t, r.Close())
			rebuilt, err := os.ReadFile(idxPath)
			require.NoError(t, err)
			assert.Equal(t, good, rebuilt)
		})
	}
}

func TestTruncateTo(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 10)
	defer s.Close()
	batches := appendN(t, s, 30, 5, 100)
	next, err := s.TruncateTo(62) // inside the batch 60..64
	require.NoError(t, err)
	assert.Equal(t, int64(60), next)
	assert.Equal(t, batches[:10], readAllBatches(t, s))
	_, _, err = s.Find(60)
	assert.ErrorIs(t, err, io.EOF)
	more := appendN(t, s, 3, 5, 100)
	assert.Equal(t, append(batches[:10:10], more...), readAllBatches(t, s))
	next, err = s.TruncateTo(10)
	require.NoError(t, err)
	assert.Equal(t, int64(10), next)
	assert.Empty(t, readAllBatches(t, s))
}

func TestDeleteWhileReading(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	appendN(t, s, 5, 1, 10)
	require.NoError(t, s.Delete())
	_, _, err := s.Find(0)
	assert.ErrorIs(t, err, ErrDeleted)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestBudgetEvicts(t *testing.T) {
	dir := t.TempDir()
	b := NewBudget(4 * FilesPerSegment)
	opts := testOpts()
	opts.Budget = b
	var segs []*Segment
	for i := 0; i < 10; i++ {
		s, err := Create(dir, int64(i*1000), opts)
		require.NoError(t, err)
		appendN(t, s, 3, 2, 50)
		require.NoError(t, s.Seal())
		segs = append(segs, s)
		assert.LessOrEqual(t, b.Open(), 4)
	}
	for round := 0; round < 3; round++ {
		for _, s := range segs {
			_, _, err := s.Find(s.Base() + 3)
			require.NoError(t, err)
			assert.LessOrEqual(t, b.Open(), 4)
		}
	}
	for _, s := range segs {
		require.NoError(t, s.Close())
	}
	assert.Zero(t, b.Open())
}

func TestParseFileName(t *testing.T) {
	cases := []struct {
		name string
		base int64
		ok   bool
	}{
		{"00000000000000000000.log", 0, true},
		{"00000000000000368769.log", 368769, true},
		{"0000000000000036876.log", 0, false},
		{"000000000000003687690.log", 0, false},
		{"0000000000000036876x.log", 0, false},
		{"-0000000000000036876.log", 0, false},
		{"99999999999999999999.log", 0, false},
		{"00000000000000000000.index", 0, false},
		{"09223372036854775807.log", math.MaxInt64, true},
		{"09223372036854775808.log", 0, false},
	}
	for _, tc := range cases {
		base, ok := ParseFileName(tc.name, LogSuffix)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.base, base, tc.name)
	}
	assert.Equal(t, "00000000000000000042.log", FileName(42, LogSuffix))
	assert.Equal(t, "09223372036854775807.index", FileName(math.MaxInt64, IndexSuffix))

	base, suffix, ok := SplitFileName("00000000000000000042.log.deleted")
	assert.True(t, ok)
	assert.Equal(t, int64(42), base)
	assert.Equal(t, ".log.deleted", suffix)
	_, _, ok = SplitFileName("0000000000000000004x.log")
	assert.False(t, ok)
	_, _, ok = SplitFileName("42.log")
	assert.False(t, ok)
}

// TestSegmentPathsAsJoin: a segment's paths are those filepath.Join
// builds, whatever form its directory was given in.
func TestSegmentPathsAsJoin(t *testing.T) {
	for _, dir := range []string{"", ".", "/", "/var/lib/seglog/t-0", "/var/lib//seglog/./t-0/", "rel/t-0", "./rel/../t-0"} {
		s := Open(dir, 368769, 368770, Options{})
		assert.Equal(t, filepath.Join(dir, "00000000000000368769.log"), s.LogPath(), "dir %q", dir)
		assert.Equal(t, filepath.Join(dir, "00000000000000368769.timeindex"), s.path(TimeIndexSuffix), "dir %q", dir)
	}
	assert.True(t, errors.Is(&CorruptError{Err: ErrChecksum}, ErrCorrupt))
}

// TestBudgetReleasesMappedPages: reads through the map (the header walks
// of Span, for zero-copy sends) past MaxMappedReadBytes release every
// map's pages, and reads after a release still find the right batches;
// record reads (pread) go on meanwhile.
func TestBudgetReleasesMappedPages(t *testing.T) {
	b := NewBudget(100 * FilesPerSegment)
	opts := testOpts()
	opts.Budget = b
	opts.MaxIndexBytes = 1 << 20
	s, err := Create(t.TempDir(), 0, opts)
	require.NoError(t, err)
	defer s.Close()
	appendN(t, s, 40, 100, 1024) // 40 batches of 100 x 1 KiB
	require.NoError(t, s.Seal())
	releases := 0
	for i := 0; i < 3000; i++ {
		off := int64(i*7919) % s.NextOffset()
		before := b.touched.Load()
		sp, err := s.Span(off, 1, math.MaxInt64)
		require.NoError(t, err)
		require.Equal(t, off/100*100, sp.FirstOffset)
		require.Equal(t, sp.FirstOffset+100, sp.NextOffset)
		if b.touched.Load() < before {
			releases++
		}
		require.Less(t, b.touched.Load(), int64(MaxMappedReadBytes))
		rec, _, err := s.ReadRecord(nil, off)
		require.NoError(t, err)
		require.Equal(t, off, rec.Offset)
		require.True(t, bytes.HasPrefix(rec.Value, []byte(fmt.Sprintf("off=%d;", off))))
	}
	assert.Greater(t, releases, 1, "the map's pages were released")
}

// TestPointReadAfterRewrite: a batch written again at the same position
// after a truncation is read as it is now, not from the point cache.
func TestPointReadAfterRewrite(t *testing.T) {
	opts := testOpts()
	opts.Budget = NewBudget(100 * FilesPerSegment)
	s, err := Create(t.TempDir(), 0, opts)
	require.NoError(t, err)
	defer s.Close()
	appendN(t, s, 2, 10, 100)
	rec, _, err := s.ReadRecord(nil, 15)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(rec.Value, []byte("off=15;")))
	_, err = s.TruncateTo(10)
	require.NoError(t, err)
	appendN(t, s, 1, 10, 300) // the same offsets, other values and lengths
	for _, off := range []int64{15, 19, 3} {
		rec, _, err = s.ReadRecord(nil, off)
		require.NoError(t, err)
		assert.Equal(t, off, rec.Offset)
		assert.True(t, bytes.HasPrefix(rec.Value, []byte(fmt.Sprintf("off=%d;", off))))
		if off >= 10 {
			assert.Len(t, rec.Value, 300)
		}
	}
}
