package index

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Entry sizes and the default capacity. The sizes are part of the file
// format: see the package documentation.
const (
	OffsetEntrySize = 8  // relative offset uint32 BE, file position uint32 BE
	TimeEntrySize   = 12 // timestamp int64 BE (milliseconds), relative offset uint32 BE
	DefaultMaxBytes = 10 << 20
)

// Errors. Specific errors wrap these, so test them with errors.Is.
var (
	ErrCorrupt    = errors.New("index: corrupt")            // sanity check failed: the caller rebuilds the index from the log
	ErrFull       = errors.New("index: full")               // no room for another entry: the caller rolls the segment
	ErrOutOfOrder = errors.New("index: entry out of order") // an appended entry does not follow the last one
	ErrClosed     = errors.New("index: closed")
	// ErrReadOnly is returned by a mutating method of an index opened
	// read-only or sealed: reopen it writable first.
	ErrReadOnly = errors.New("index: read-only")
)

// OffsetPosition is one offset-index entry, in absolute terms.
type OffsetPosition struct {
	Offset   int64
	Position int64
}

// TimeOffset is one time-index entry, in absolute terms.
type TimeOffset struct {
	Timestamp int64
	Offset    int64
}

// column is one big-endian integer field of an entry, read as a uint64
// that orders like the field's value: signed fields have their sign bit
// flipped.
type column struct {
	off    int  // byte offset within the entry
	width  int  // 4 or 8
	signed bool // an int64 (two's complement)
}

// The entries' fields.
var (
	offsetRelCol = column{off: 0, width: 4}
	offsetPosCol = column{off: 4, width: 4}
	timeTsCol    = column{off: 0, width: 8, signed: true}
	timeRelCol   = column{off: 8, width: 4}
)

// entryFormat is the layout of one kind of index entry.
type entryFormat[E entry] struct {
	size   int                   // OffsetEntrySize or TimeEntrySize
	cols   []column              // the columns that strictly increase, the one Lookup searches first
	rel    column                // the relative offset
	decode func([]byte, int64) E // decodes the entry at the start of a slice, given the base offset
}

// The two kinds of entry.
var (
	offsetFormat = entryFormat[OffsetPosition]{OffsetEntrySize, []column{offsetRelCol, offsetPosCol}, offsetRelCol, decodeOffsetEntry}
	timeFormat   = entryFormat[TimeOffset]{TimeEntrySize, []column{timeTsCol, timeRelCol}, timeRelCol, decodeTimeEntry}
)

const signBit = 1 << 63

// at reads the column of the entry that starts at b[off].
func (c column) at(b []byte, off int) uint64 {
	if c.width == 4 {
		return uint64(binary.BigEndian.Uint32(b[off+c.off:]))
	}
	v := binary.BigEndian.Uint64(b[off+c.off:])
	if c.signed {
		v ^= signBit
	}
	return v
}

// orderedInt64 maps an int64 to a uint64 of the same order, as column.at
// reads a signed column.
func orderedInt64(v int64) uint64 { return uint64(v) ^ signBit }

func encodeOffsetEntry(b []byte, rel, pos uint32) {
	binary.BigEndian.PutUint32(b[0:4], rel)
	binary.BigEndian.PutUint32(b[4:8], pos)
}

func decodeOffsetEntry(b []byte, baseOffset int64) OffsetPosition {
	_ = b[OffsetEntrySize-1]
	return OffsetPosition{
		Offset:   baseOffset + int64(binary.BigEndian.Uint32(b[0:4])),
		Position: int64(binary.BigEndian.Uint32(b[4:8])),
	}
}

func encodeTimeEntry(b []byte, timestamp int64, rel uint32) {
	binary.BigEndian.PutUint64(b[0:8], uint64(timestamp))
	binary.BigEndian.PutUint32(b[8:12], rel)
}

func decodeTimeEntry(b []byte, baseOffset int64) TimeOffset {
	_ = b[TimeEntrySize-1]
	return TimeOffset{
		Timestamp: int64(binary.BigEndian.Uint64(b[0:8])),
		Offset:    baseOffset + int64(binary.BigEndian.Uint32(b[8:12])),
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// DecodeOffsetEntries decodes the raw bytes of an offset index file, every
// entry including all-zero ones (a preallocated tail), without checking
// their order. A trailing partial entry is an error wrapping ErrCorrupt,
// returned together with the whole entries before it.
func DecodeOffsetEntries(b []byte, baseOffset int64) ([]OffsetPosition, error) {
	return decodeEntries(b, baseOffset, offsetFormat)
}

// DecodeTimeEntries decodes the raw bytes of a time index file, like
// DecodeOffsetEntries.
func DecodeTimeEntries(b []byte, baseOffset int64) ([]TimeOffset, error) {
	return decodeEntries(b, baseOffset, timeFormat)
}

func decodeEntries[E entry](b []byte, baseOffset int64, format entryFormat[E]) ([]E, error) {
	size := format.size
	n := len(b) / size
	out := make([]E, n) // bounded by len(b): never larger than the input
	for i := range out {
		out[i] = format.decode(b[i*size:], baseOffset)
	}
	if rem := len(b) % size; rem != 0 {
		return out, fmt.Errorf("%w: %d trailing bytes after %d entries of %d bytes", ErrCorrupt, rem, n, size)
	}
	return out, nil
}
