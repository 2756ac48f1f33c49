package index

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func encOffsets(base int64, es ...OffsetPosition) []byte {
	b := make([]byte, len(es)*OffsetEntrySize)
	for i, e := range es {
		encodeOffsetEntry(b[i*OffsetEntrySize:], uint32(e.Offset-base), uint32(e.Position))
	}
	return b
}

func encTimes(base int64, es ...TimeOffset) []byte {
	b := make([]byte, len(es)*TimeEntrySize)
	for i, e := range es {
		encodeTimeEntry(b[i*TimeEntrySize:], e.Timestamp, uint32(e.Offset-base))
	}
	return b
}

// batch is what the checker is fed: a batch's position, indexed offset and
// max timestamp.
type batch struct{ pos, base, maxTS int64 }

func TestChecker(t *testing.T) {
	const base = 100
	batches := []batch{{0, 100, 1000}, {50, 110, 1010}, {100, 120, 1005}, {150, 130, 1020}}
	for _, tc := range []struct {
		name     string
		offs     []byte
		times    []byte
		problems []string
	}{
		{"good", encOffsets(base, OffsetPosition{110, 50}, OffsetPosition{130, 150}), encTimes(base, TimeOffset{1010, 110}, TimeOffset{1020, 130}), nil},
		{"preallocated zeros", append(encOffsets(base, OffsetPosition{110, 50}), make([]byte, 4*OffsetEntrySize)...), append(encTimes(base, TimeOffset{1010, 110}), make([]byte, 2*TimeEntrySize)...), nil},
		{"not a batch start", encOffsets(base, OffsetPosition{110, 51}), nil, []string{"o: entry 0 {offset 110, position 51}: position is not the start of a batch"}},
		{"wrong offset", encOffsets(base, OffsetPosition{111, 50}), nil, []string{"o: entry 0 {offset 111, position 50}: the batch at position 50 is indexed by offset 110"}},
		{"out of order", encOffsets(base, OffsetPosition{130, 150}, OffsetPosition{110, 50}), nil, []string{"o: entry 1 {offset 110, position 50} does not follow entry 0 {offset 130, position 150}"}},
		{"trailing bytes", append(encOffsets(base, OffsetPosition{110, 50}), 1, 2, 3), nil, []string{"o: index: corrupt: 3 trailing bytes after 1 entries of 8 bytes"}},
		{"garbage after zeros", append(append(encOffsets(base, OffsetPosition{110, 50}), make([]byte, OffsetEntrySize)...), encOffsets(base, OffsetPosition{130, 150})...), nil,
			[]string{"o: index: corrupt: entry 1 is all zero (the end of the used entries) but entry 2 {offset 130, position 150} follows it"}},
		{"time not max", nil, encTimes(base, TimeOffset{1005, 120}), []string{"t: entry 0 {timestamp 1005, offset 120}: an earlier batch has the larger timestamp 1010"}},
		{"time wrong ts", nil, encTimes(base, TimeOffset{1011, 110}), []string{"t: entry 0 {timestamp 1011, offset 110}: that batch's max timestamp is 1010"}},
		{"time no batch", nil, encTimes(base, TimeOffset{1011, 111}), []string{"t: entry 0 {timestamp 1011, offset 111}: offset 111 is not the indexed offset of a batch in the log"}},
		{"past the end", encOffsets(base, OffsetPosition{140, 200}), nil, []string{"o: entry 0 {offset 140, position 200}: position is past the end of the valid log data (200 bytes)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChecker("o", tc.offs, "t", tc.times, base)
			for _, b := range batches {
				c.Batch(b.pos, b.base, b.maxTS)
			}
			assert.Equal(t, tc.problems, c.Finish(200))
		})
	}
	// DropPastEnd sets aside what a writer appended after the scan.
	c := NewChecker("o", encOffsets(base, OffsetPosition{110, 50}, OffsetPosition{140, 200}), "t", encTimes(base, TimeOffset{1030, 140}), base)
	for _, b := range batches {
		c.Batch(b.pos, b.base, b.maxTS)
	}
	assert.Equal(t, 2, c.DropPastEnd(200, 140))
	assert.Empty(t, c.Finish(200))
	assert.Equal(t, 2, c.OffsetEntries())
	assert.Equal(t, 1, c.TimeEntries())

	// An entry past the data for an offset the scan covered was not
	// appended after it: it stays, and Finish reports it.
	c = NewChecker("o", encOffsets(base, OffsetPosition{110, 50}, OffsetPosition{125, 210}, OffsetPosition{140, 220}), "t", nil, base)
	for _, b := range batches {
		c.Batch(b.pos, b.base, b.maxTS)
	}
	assert.Equal(t, 1, c.DropPastEnd(200, 140), "only the entry of offset 140")
	assert.Equal(t, []string{"o: entry 1 {offset 125, position 210}: position is past the end of the valid log data (200 bytes)"}, c.Finish(200))
}

// FuzzChecker: any index bytes and any batches: no panic, and a problem
// for every offset-index entry that names no batch.
func FuzzChecker(f *testing.F) {
	f.Add(encOffsets(0, OffsetPosition{10, 50}), encTimes(0, TimeOffset{5, 10}), []byte{0, 0, 10, 50})
	f.Add([]byte{1, 2, 3}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, offs, times, feed []byte) {
		c := NewChecker("o", offs, "t", times, 7)
		for len(feed) >= 4 {
			c.Batch(int64(binary.BigEndian.Uint16(feed)), 7+int64(feed[2]), int64(feed[3]))
			feed = feed[4:]
		}
		c.DropPastEnd(1<<15, 7+200)
		problems := c.Finish(1 << 16)
		if len(offs) > 0 && len(offs) < OffsetEntrySize {
			require.NotEmpty(t, problems, "a partial entry is a problem")
		}
	})
}
