package segment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logOf encodes n batches of per records of size bytes each, offsets from
// base, and returns the concatenation and each batch's position.
func logOf(t testing.TB, base int64, n, per, size int) ([]byte, []int64) {
	var out []byte
	var pos []int64
	for i := 0; i < n; i++ {
		recs := make([]Record, per)
		for j := range recs {
			recs[j] = Record{Timestamp: int64(i), Value: bytes.Repeat([]byte{byte(i + j)}, size)}
		}
		pos = append(pos, int64(len(out)))
		var err error
		out, err = AppendBatch(out, recs, EncodeOptions{BaseOffset: base + int64(i*per)})
		require.NoError(t, err)
	}
	return out, pos
}

// countingReader counts ReadAt calls.
type countingReader struct {
	r     io.ReaderAt
	calls int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.calls++
	return c.r.ReadAt(p, off)
}

func TestScanner(t *testing.T) {
	good, pos := logOf(t, 100, 6, 3, 40<<10) // batches of ~120 KiB: larger than any window
	flipped := bytes.Clone(good)
	flipped[pos[4]+HeaderSize+10] ^= 1 // a record byte of batch 4
	gap, _ := logOf(t, 100, 3, 3, 10)
	more, _ := logOf(t, 200, 1, 1, 10) // offsets jump from 109 to 200
	gap = append(gap, more...)
	cases := []struct {
		name    string
		data    []byte
		opts    ScanOptions
		batches int
		corrupt bool
	}{
		{name: "whole", data: good, opts: ScanOptions{}, batches: 6},
		{name: "verify, window smaller than a batch", data: good, opts: ScanOptions{Verify: true, Window: 4 << 10}, batches: 6},
		{name: "torn tail", data: good[:len(good)-7], opts: ScanOptions{}, batches: 5, corrupt: true},
		{name: "torn header", data: good[:pos[5]+HeaderSize-1], opts: ScanOptions{}, batches: 5, corrupt: true},
		{name: "flipped, headers only", data: flipped, opts: ScanOptions{}, batches: 6},
		{name: "flipped, verified", data: flipped, opts: ScanOptions{Verify: true, Window: 1 << 20}, batches: 4, corrupt: true},
		{name: "offsets checked", data: gap, opts: ScanOptions{CheckOffsets: true, FirstOffset: 100}, batches: 3, corrupt: true},
		{name: "offsets not checked", data: gap, opts: ScanOptions{}, batches: 4},
		{name: "wrong first offset", data: good, opts: ScanOptions{CheckOffsets: true, FirstOffset: 99}, batches: 0, corrupt: true},
		{name: "from a later batch", data: good, opts: ScanOptions{Start: pos[2], CheckOffsets: true, FirstOffset: 106}, batches: 4},
		{name: "empty", data: nil, opts: ScanOptions{}, batches: 0},
	}
	for _, c := range cases {
		for _, src := range []string{"reader", "buffer"} {
			t.Run(c.name+"/"+src, func(t *testing.T) {
				c.opts.File = "x.log"
				var sc *Scanner
				if src == "reader" {
					sc = NewScanner(bytes.NewReader(c.data), int64(len(c.data)), c.opts)
				} else {
					sc = ScanBuffer(c.data, c.opts)
				}
				n := 0
				for sc.Next() {
					b, err := sc.Batch()
					require.NoError(t, err)
					h, err := ParseHeader(b, DefaultLimits)
					require.NoError(t, err)
					assert.Equal(t, sc.Header(), h)
					assert.Equal(t, len(b), h.Size())
					n++
				}
				assert.Equal(t, c.batches, n)
				var ce *CorruptError
				if c.corrupt {
					require.ErrorAs(t, sc.Err(), &ce)
					assert.ErrorIs(t, sc.Err(), ErrCorrupt)
					assert.Equal(t, "x.log", ce.File)
					assert.Equal(t, sc.End(), ce.Pos, "the error is where the valid batches end")
				} else {
					assert.NoError(t, sc.Err())
					assert.Equal(t, int64(len(c.data)), sc.End())
				}
			})
		}
	}
}

// A scan with a window reads ahead: one read serves many small batches.
func TestScannerWindow(t *testing.T) {
	data, _ := logOf(t, 0, 100, 1, 100)
	cr := &countingReader{r: bytes.NewReader(data)}
	sc := NewScanner(cr, int64(len(data)), ScanOptions{Verify: true, Window: 1 << 20})
	n := 0
	for sc.Next() {
		n++
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 100, n)
	assert.Equal(t, 1, cr.calls)
}

// An I/O error is returned as it is, not as corruption.
func TestScannerReadError(t *testing.T) {
	data, _ := logOf(t, 0, 3, 1, 100)
	boom := errors.New("boom")
	sc := NewScanner(failingReader{boom}, int64(len(data)), ScanOptions{})
	assert.False(t, sc.Next())
	assert.ErrorIs(t, sc.Err(), boom)
	assert.NotErrorIs(t, sc.Err(), ErrCorrupt)
}

type failingReader struct{ err error }

func (f failingReader) ReadAt([]byte, int64) (int, error) { return 0, f.err }

// FuzzScanner walks arbitrary bytes: it never panics, positions only move
// forward, every batch it yields lies within the input and parses, and an
// error is a *CorruptError at the end of the valid batches.
func FuzzScanner(f *testing.F) {
	data, _ := logOf(f, 0, 3, 2, 50)
	f.Add(data, false, int64(0))
	f.Add(data[:len(data)-3], true, int64(0))
	f.Add([]byte{}, true, int64(5))
	lim := Limits{MaxBatchBytes: 1 << 20, MaxRecordsBytes: 4 << 20}
	f.Fuzz(func(t *testing.T, b []byte, verify bool, first int64) {
		for _, sc := range []*Scanner{
			ScanBuffer(b, ScanOptions{Limits: lim, Verify: verify, CheckOffsets: first >= 0, FirstOffset: first}),
			NewScanner(bytes.NewReader(b), int64(len(b)), ScanOptions{Limits: lim, Verify: verify, Window: 64}),
		} {
			last := int64(-1)
			for sc.Next() {
				if sc.Pos() <= last || sc.End() > int64(len(b)) {
					t.Fatalf("batch at %d..%d after %d in %d bytes", sc.Pos(), sc.End(), last, len(b))
				}
				last = sc.Pos()
				bb, err := sc.Batch()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ParseHeader(bb, lim); err != nil {
					t.Fatal(err)
				}
			}
			if err := sc.Err(); err != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Pos != sc.End() {
					t.Fatal(fmt.Sprintf("error %v at the end %d", err, sc.End()))
				}
			}
		}
	})
}

// FuzzPointRecord: the point read's walk over record lengths
// (recordStarts) and its decode of one record never panic on damaged
// records, and on intact ones return what the iterator does.
func FuzzPointRecord(f *testing.F) {
	data, _ := logOf(f, 10, 1, 5, 30)
	f.Add(data[HeaderSize:], uint8(3))
	f.Add([]byte{0xff, 0xff, 0xff}, uint8(0))
	h, err := ParseHeader(data, DefaultLimits)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, section []byte, k uint8) {
		off := h.BaseOffset + int64(k)%int64(h.RecordCount)
		starts, err := recordStarts(section, h)
		if err != nil {
			return
		}
		require.Len(t, starts, int(h.RecordCount)+1)
		i := off - h.BaseOffset
		rec, err := decodePoint(section[starts[i]:starts[i+1]], h, off)
		if err != nil || !bytes.Equal(section, data[HeaderSize:]) {
			return
		}
		var it RecordIter
		require.NoError(t, it.Reset(data, DefaultLimits))
		for it.Next() {
			if it.Record().Offset == off {
				assert.Equal(t, it.Record().Value, rec.Value)
			}
		}
	})
}
