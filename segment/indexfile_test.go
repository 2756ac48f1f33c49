package segment

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// offsetIndexBytes encodes offset-index entries relative to base.
func offsetIndexBytes(base int64, es ...OffsetIndexEntry) []byte {
	var b []byte
	for _, e := range es {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Offset-base))
		b = binary.BigEndian.AppendUint32(b, uint32(e.Position))
	}
	return b
}

func TestDecodeIndexFiles(t *testing.T) {
	const base = 100
	used := []OffsetIndexEntry{{Offset: 103, Position: 0}, {Offset: 110, Position: 400}}
	cases := []struct {
		name            string
		b               []byte
		used, entries   int
		tailErr, decErr bool
	}{
		{"used entries", offsetIndexBytes(base, used...), 2, 2, false, false},
		{"preallocated zeros", append(offsetIndexBytes(base, used...), make([]byte, 16)...), 2, 4, false, false},
		{"something after the zeros", append(append(offsetIndexBytes(base, used...), make([]byte, 8)...), offsetIndexBytes(base, OffsetIndexEntry{Offset: 120, Position: 900})...), 2, 4, true, false},
		{"a partial entry", append(offsetIndexBytes(base, used...), 1, 2, 3), 2, 2, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DecodeOffsetIndex(tc.b, base)
			require.Len(t, c.Offsets, tc.used)
			assert.Equal(t, used[:tc.used], c.Offsets)
			assert.Equal(t, tc.entries, c.Entries)
			assert.Equal(t, 8, c.EntrySize)
			assert.Equal(t, tc.tailErr, c.Tail != nil, "%v", c.Tail)
			assert.Equal(t, tc.decErr, c.Err != nil, "%v", c.Err)
		})
	}
	// A time index entry: timestamp u64, relative offset u32.
	tb := binary.BigEndian.AppendUint64(nil, 1700000000000)
	tb = binary.BigEndian.AppendUint32(tb, 7)
	c := DecodeTimeIndex(append(tb, make([]byte, 12)...), base)
	assert.Equal(t, []TimeIndexEntry{{Timestamp: 1700000000000, Offset: 107}}, c.Times)
	assert.Equal(t, 2, c.Entries)
	assert.Equal(t, 12, c.EntrySize)
	assert.NoError(t, c.Tail)
	assert.NoError(t, c.Err)
}

// FuzzDecodeIndexFiles: the index decoders never panic on any bytes, and
// what they return is consistent with the bytes.
func FuzzDecodeIndexFiles(f *testing.F) {
	f.Add(offsetIndexBytes(0, OffsetIndexEntry{Offset: 3, Position: 10}), int64(0))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 2, 0}, int64(1<<40))
	f.Fuzz(func(t *testing.T, b []byte, base int64) {
		for _, c := range []IndexContent{DecodeOffsetIndex(b, base), DecodeTimeIndex(b, base)} {
			if c.Entries*c.EntrySize > len(b) {
				t.Fatalf("%d entries of %d bytes in %d bytes", c.Entries, c.EntrySize, len(b))
			}
			if len(c.Offsets)+len(c.Times) > c.Entries {
				t.Fatalf("more used entries than entries")
			}
		}
	})
}
