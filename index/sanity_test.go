package index

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOffsetSanityCheck(t *testing.T) {
	valid := rawOffset([2]uint32{10, 4096}, [2]uint32{20, 8192}, [2]uint32{30, 12288})
	tests := []struct {
		name    string
		data    []byte
		logSize int64
		msg     string // "" means valid
	}{
		{"valid", valid, 12289, ""},
		{"empty", []byte{}, 0, ""},
		{"size not a multiple", append(valid, 0, 0, 1), 1 << 20, "not a multiple"},
		{"offsets out of order", rawOffset([2]uint32{10, 4096}, [2]uint32{5, 8192}), 1 << 20, "does not follow entry 0 (bytes 0..3)"},
		{"offsets repeat", rawOffset([2]uint32{10, 4096}, [2]uint32{10, 8192}), 1 << 20, "does not follow"},
		{"positions out of order", rawOffset([2]uint32{10, 8192}, [2]uint32{20, 4096}), 1 << 20, "does not follow entry 0 (bytes 4..7)"},
		{"positions repeat", rawOffset([2]uint32{10, 4096}, [2]uint32{20, 4096}), 1 << 20, "does not follow"},
		{"all-zero entry", rawOffset([2]uint32{0, 0}, [2]uint32{10, 4096}), 1 << 20, "entry 0 is all zero"},
		{"position past the log", valid, 12000, "past the log"},
		{"position at the log's end", valid, 12288, "past the log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t, "00.index")
			require.NoError(t, os.WriteFile(path, tt.data, 0o640))
			x := openOffset(t, path, Options{})
			err := x.SanityCheck(tt.logSize)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.ErrorContains(t, err, tt.msg)
			assert.ErrorContains(t, err, path)
		})
	}
}

func TestTimeSanityCheck(t *testing.T) {
	e := func(ts int64, rel uint32) rawTimeEntry { return rawTimeEntry{ts, rel} }
	valid := rawTime(e(100, 10), e(200, 20), e(300, 30))
	tests := []struct {
		name      string
		data      []byte
		base, end int64
		msg       string
	}{
		{"valid", valid, testBase, testBase + 31, ""},
		{"negative timestamps", rawTime(e(-200, 10), e(-100, 20)), testBase, testBase + 31, ""},
		{"size not a multiple", valid[:len(valid)-1], testBase, testBase + 31, "not a multiple"},
		{"timestamps out of order", rawTime(e(200, 10), e(100, 20)), testBase, testBase + 31, "(bytes 0..7)"},
		{"timestamps repeat", rawTime(e(200, 10), e(200, 20)), testBase, testBase + 31, "does not follow"},
		{"negative after positive", rawTime(e(1, 10), e(-1, 20)), testBase, testBase + 31, "does not follow"},
		{"offsets out of order", rawTime(e(100, 20), e(200, 10)), testBase, testBase + 31, "(bytes 8..11)"},
		{"all-zero entry", rawTime(e(0, 0), e(200, 10)), testBase, testBase + 31, "all zero"},
		{"offset at the end", valid, testBase, testBase + 30, "outside the offsets"},
		{"offset past the end", valid, testBase, testBase + 20, "outside the offsets"},
		{"offset below the base", valid, testBase + 11, testBase + 31, "outside the offsets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t, "00.timeindex")
			require.NoError(t, os.WriteFile(path, tt.data, 0o640))
			x := openTime(t, path, Options{})
			err := x.SanityCheck(tt.base, tt.end)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.ErrorContains(t, err, tt.msg)
		})
	}
}

// TestSanityCheckWritable opens damaged files writable, as the active
// segment does after a restart: the check reports them.
func TestSanityCheckWritable(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"size not a multiple", append(rawOffset([2]uint32{10, 4096}), 7)},
		{"out of order", rawOffset([2]uint32{10, 4096}, [2]uint32{20, 8192}, [2]uint32{15, 9000})},
		{"zero entry before the end", append(rawOffset([2]uint32{10, 4096}, [2]uint32{0, 0}), rawOffset([2]uint32{20, 8192}, [2]uint32{30, 9000})...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t, "00.index")
			require.NoError(t, os.WriteFile(path, tt.data, 0o640))
			x := openOffset(t, path, Options{Writable: true, MaxBytes: 4096})
			assert.ErrorIs(t, x.SanityCheck(1<<20), ErrCorrupt)
		})
	}
}

// TestRebuild damages an index, reopens it writable as recovery does, and
// rebuilds it from the same appends after Reset: the entries are the same,
// and stray bytes past them are gone.
func TestRebuild(t *testing.T) {
	t.Run("offset", func(t *testing.T) {
		testRebuild(t, offsetKind, false, func(b []byte) []byte {
			copy(b[10*OffsetEntrySize:], b[20*OffsetEntrySize:21*OffsetEntrySize]) // entry 10 := entry 20
			return append(b, 0xde, 0xad)                                           // a torn tail
		})
	})
	t.Run("time", func(t *testing.T) {
		testRebuild(t, timeKind, true, func(b []byte) []byte {
			b[4000] = 0x01            // a stray byte in the preallocated tail
			b[5*TimeEntrySize] = 0x80 // entry 5's timestamp becomes negative
			return b
		})
	})
}

// testRebuild damages a file of 50 entries with damage: after Close, or as
// a crash leaves it (preallocated).
func testRebuild[E entry, X testIndex[E]](t *testing.T, k kind[E, X], crash bool, damage func([]byte) []byte) {
	path := tempPath(t, k.file)
	x, err := k.open(path, testBase, Options{Writable: true, MaxBytes: 4096})
	require.NoError(t, err)
	want := fill(t, x, 50, k.entry)
	if crash {
		require.NoError(t, x.Sync())
		copyFile(t, path, path+".crash")
		path += ".crash"
	}
	require.NoError(t, x.Close())

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, damage(b), 0o640))

	y := openKind(t, k, path, Options{Writable: true, MaxBytes: 4096})
	require.ErrorIs(t, k.sane(y), ErrCorrupt)
	require.NoError(t, y.Reset())
	assert.NoError(t, k.sane(y))
	for _, e := range want {
		require.NoError(t, y.Append(e.fields()))
	}
	assert.Equal(t, want, entriesOf[E](y))
	assert.NoError(t, k.sane(y))
	require.NoError(t, y.Sync())
	copyFile(t, path, path+".2")
	z := openKind(t, k, path+".2", Options{Writable: true, MaxBytes: 4096})
	assert.Equal(t, want, entriesOf[E](z), "no stray bytes survive Reset")
	require.NoError(t, y.Close())
	ro := openKind(t, k, path, Options{})
	assert.Equal(t, want, entriesOf[E](ro))
	assert.NoError(t, k.sane(ro))
}

func TestDecodeEntries(t *testing.T) {
	b := rawOffset([2]uint32{10, 4096}, [2]uint32{20, 8192})
	got, err := DecodeOffsetEntries(b, testBase)
	require.NoError(t, err)
	assert.Equal(t, []OffsetPosition{{1010, 4096}, {1020, 8192}}, got)
	got, err = DecodeOffsetEntries(append(b, 1, 2, 3), testBase)
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.Len(t, got, 2, "the whole entries come back with the error")

	tb := rawTime(rawTimeEntry{-5, 1}, rawTimeEntry{7, 2})
	tgot, err := DecodeTimeEntries(tb, testBase)
	require.NoError(t, err)
	assert.Equal(t, []TimeOffset{{-5, 1001}, {7, 1002}}, tgot)
	tgot, err = DecodeTimeEntries(tb[:20], testBase)
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.Equal(t, []TimeOffset{{-5, 1001}}, tgot)
	tgot, err = DecodeTimeEntries(nil, 0)
	assert.NoError(t, err)
	assert.Empty(t, tgot)
}
