package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The partition directory in testdata/v1log was written by the version-1
// batch writer (see testdata/v1log.README.md); these tests check that the
// data existing installations hold keeps working beside new v2 batches.

const v1Records = 100

// v1Record is record n of testdata/v1log, as its README describes it.
func v1Record(n int64) Record {
	r := Record{Offset: n, Timestamp: 1700000000000 + n*1000, Value: []byte(fmt.Sprintf("value-%04d", n))}
	if n%3 != 0 {
		r.Key = []byte(fmt.Sprintf("key-%d", n%7))
	}
	if n%5 == 0 {
		r.Headers = []segment.RecordHeader{{Key: []byte("h"), Value: []byte(fmt.Sprint(n))}, {Key: []byte("null")}}
	}
	if n%11 == 0 {
		r.Value = nil
	}
	return r
}

// v2Record is a record appended after the version-1 data, at offset n.
func v2Record(n int64) Record {
	return Record{Offset: n, Timestamp: 1800000000000 + n, Key: []byte("v2"), Value: []byte(fmt.Sprintf("new-%d", n)),
		Headers: []segment.RecordHeader{{Key: []byte("fmt"), Value: []byte("v2")}}}
}

// copyV1Log copies testdata/v1log into a new directory.
func copyV1Log(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "v1-0")
	copyDir(t, filepath.Join("testdata", "v1log"), dir)
	return dir
}

// assertMixedRecords reads [from, end) with a Reader and with ReadRecord
// and checks each record: version-1 ones below v1Records, v2 ones after.
func assertMixedRecords(t *testing.T, l *Log, from, end int64) {
	t.Helper()
	want := func(n int64) Record {
		if n < v1Records {
			return v1Record(n)
		}
		return v2Record(n)
	}
	r := l.NewReader(from)
	n := from
	for r.Next() {
		assertSameRecord(t, want(n), *r.Record())
		n++
	}
	require.NoError(t, r.Err())
	assert.Equal(t, end, n, "read to the end")
	var buf []byte
	for n := from; n < end; n++ {
		rec, b, err := l.ReadRecord(buf, n)
		require.NoError(t, err)
		assertSameRecord(t, want(n), rec)
		buf = b
	}
}

func assertSameRecord(t *testing.T, want, got Record) {
	t.Helper()
	assert.Equal(t, want.Offset, got.Offset)
	assert.Equal(t, want.Timestamp, got.Timestamp, "offset %d", want.Offset)
	assert.Equal(t, want.Key, got.Key, "offset %d", want.Offset)
	assert.Equal(t, want.Value, got.Value, "offset %d", want.Offset)
	assert.Equal(t, want.Headers, got.Headers, "offset %d", want.Offset)
}

func appendV2(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		off := l.EndOffset()
		res, err := l.Append(v2Record(off))
		require.NoError(t, err)
		require.Equal(t, off, res.FirstOffset)
	}
}

func TestV1DirectoryOpensAndReads(t *testing.T) {
	dir := copyV1Log(t)
	l, err := Open(dir, small())
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, int64(0), l.StartOffset())
	assert.Equal(t, int64(v1Records), l.EndOffset())
	assertMixedRecords(t, l, 0, v1Records)
	assertMixedRecords(t, l, 37, v1Records)

	// Every batch read whole is a version-1 batch, every codec among them.
	b, err := l.Read(0, 1<<20)
	require.NoError(t, err)
	codecs := map[segment.Codec]bool{}
	sc := segment.ScanBuffer(b, segment.ScanOptions{Verify: true})
	for sc.Next() {
		assert.Equal(t, uint8(segment.VersionV1), sc.Header().Version)
		codecs[sc.Header().Codec()] = true
	}
	require.NoError(t, sc.Err())
	assert.Len(t, codecs, 5, "none, gzip, snappy, zstd and s2")
}

func TestV1DirectoryTakesV2Appends(t *testing.T) {
	dir := copyV1Log(t)
	l, err := Open(dir, small())
	require.NoError(t, err)
	appendV2(t, l, 60) // past a roll: mixed segment, then v2 ones
	assertMixedRecords(t, l, 0, v1Records+60)
	require.NoError(t, l.Close())

	l, err = Open(dir, small())
	require.NoError(t, err)
	assertMixedRecords(t, l, 0, v1Records+60)
	segs, err := l.Segments()
	require.NoError(t, err)
	assert.Greater(t, len(segs), 2, "rolled into segments of v2 batches")
	require.NoError(t, l.Close())

	ro, err := Open(dir, Options{ReadOnly: true})
	require.NoError(t, err)
	assertMixedRecords(t, ro, 0, v1Records+60)
	require.NoError(t, ro.Close())
}

// After a crash every segment past the recovery point is rescanned: the
// mixed segment (version-1 batches, then v2) recovers whole, its indexes
// rebuilt.
func TestV1DirectoryRecoversMixedSegments(t *testing.T) {
	dir := copyV1Log(t)
	l, err := Open(dir, small())
	require.NoError(t, err)
	appendV2(t, l, 60)
	require.NoError(t, l.Close())
	// As after a crash before any checkpoint: everything is rescanned.
	require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))
	require.NoError(t, os.Remove(filepath.Join(dir, recoveryPointFile)))
	for _, s := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
		require.NoError(t, os.Truncate(filepath.Join(dir, segment.FileName(0, s)), 0))
	}
	l, err = Open(dir, small())
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, int64(v1Records+60), l.EndOffset())
	assertMixedRecords(t, l, 0, v1Records+60)
	// The rebuilt time indexes find records of both formats.
	for _, want := range []int64{42, 130} {
		off, err := l.OffsetForTime(v1Record(want).Timestamp)
		if want >= v1Records {
			off, err = l.OffsetForTime(v2Record(want).Timestamp)
		}
		require.NoError(t, err)
		assert.Equal(t, want, off)
	}
}

func TestV1DirectoryTruncates(t *testing.T) {
	dir := copyV1Log(t)
	l, err := Open(dir, small())
	require.NoError(t, err)
	defer l.Close()
	appendV2(t, l, 10)
	// Into the version-1 data: the batch holding offset 50 goes whole.
	require.NoError(t, l.Truncate(50))
	end := l.EndOffset()
	assert.LessOrEqual(t, end, int64(50))
	assert.Greater(t, end, int64(45), "batches hold at most 4 records")
	assertMixedRecords(t, l, 0, end)
	// New appends follow on in v2, in the segment that holds version-1
	// batches.
	for i := 0; i < 5; i++ {
		_, err := l.Append(v2Record(l.EndOffset()))
		require.NoError(t, err)
	}
	r := l.NewReader(0)
	n := int64(0)
	for r.Next() {
		want := v1Record(n)
		if n >= end {
			want = v2Record(n)
		}
		assertSameRecord(t, want, *r.Record())
		n++
	}
	require.NoError(t, r.Err())
	assert.Equal(t, end+5, n)
}

// Retention deletes version-1 segments from the front like any other.
func TestV1DirectoryRetention(t *testing.T) {
	dir := copyV1Log(t)
	l, err := Open(dir, small())
	require.NoError(t, err)
	defer l.Close()
	appendV2(t, l, 60)
	res, err := l.DeleteSegmentsBefore(90)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Segments, "the first version-1 segment, [0, 81)")
	assert.Equal(t, int64(81), l.StartOffset())
	assertMixedRecords(t, l, 81, v1Records+60)
}
