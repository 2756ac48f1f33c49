package index

import (
	"fmt"
	"math"
)

// OffsetIndex maps offsets to byte positions in a segment's .log file: a
// sparse, memory-mapped file of OffsetEntrySize-byte entries.
//
// One goroutine writes (Append). Lookup, Len, Entry, Last, Full,
// BaseOffset and Path may run in any number of goroutines beside it.
// Seal, TruncateTo, Reset, Sync and Close run alone.
type OffsetIndex struct {
	entryIndex[OffsetPosition]
}

// OpenOffset opens the offset index at path for the segment whose first
// offset is baseOffset.
//
// With opts.Writable the file is created if missing, extended (sparse) to
// opts.MaxBytes and mapped read-write; the entries of an existing file (the
// active segment's, after a restart or a crash) are kept, and a file larger
// than MaxBytes keeps its entries and is full. Without it the file's whole
// length is mapped read-only and never written; a size that is not a
// multiple of OffsetEntrySize is reported by SanityCheck, not here.
func OpenOffset(path string, baseOffset int64, opts Options) (*OffsetIndex, error) {
	return openIndex[OffsetIndex](path, baseOffset, offsetFormat, opts)
}

// Lookup returns the entry with the largest offset at or below offset, or
// {BaseOffset(), 0} when there is none: the log is scanned forward from its
// Position. It searches an in-memory summary of the index first (the first
// offset of every 512 entries, 4 bytes per 4 KiB page of the index), then
// one page of the map. It may run beside Append. It does not allocate,
// except on the first Lookup of an index opened read-only or followed, which
// builds the summary (reading one entry of every page).
func (x *OffsetIndex) Lookup(offset int64) OffsetPosition {
	if offset < x.base {
		return OffsetPosition{Offset: x.base}
	}
	target := uint64(math.MaxUint32)
	if rel := offset - x.base; rel < math.MaxUint32 {
		target = uint64(rel)
	}
	i := x.f.upperBound(offsetRelCol, target)
	if i == 0 {
		return OffsetPosition{Offset: x.base}
	}
	return x.Entry(i - 1)
}

// Append adds an entry: the batch that starts at byte position of the log
// holds offset (the segment names its last offset, as Kafka does), so a
// lookup of any offset at or after it may scan from position. Offset and position must both be greater than the last entry's
// (ErrOutOfOrder), offset-BaseOffset and position must fit a uint32, and
// the entry must not be all zero (position 0, the start of the log, is never
// indexed). It returns ErrFull when the index has no room (roll the
// segment), ErrReadOnly on a read-only or sealed index, ErrClosed, or an
// error wrapping syscall.ENOSPC when no disk blocks could be reserved; on
// any error the index is unchanged.
//
// Append does not sync. One goroutine appends; readers may run beside it.
func (x *OffsetIndex) Append(offset, position int64) error {
	rel, err := x.relOffset(offset)
	if err != nil {
		return err
	}
	if position < 0 || position > math.MaxUint32 {
		return fmt.Errorf("index: %s: position %d does not fit in 32 bits", x.f.path, position)
	}
	var b [OffsetEntrySize]byte
	encodeOffsetEntry(b[:], rel, uint32(position))
	return x.append(OffsetPosition{Offset: offset, Position: position}, b[:])
}

// Entry returns entry i, 0 <= i < Len(); it panics otherwise. It may run
// beside Append.
func (x *OffsetIndex) Entry(i int) OffsetPosition { return x.entry(i) }

// Last returns the last entry, or false when the index is empty. It may run
// beside Append.
func (x *OffsetIndex) Last() (OffsetPosition, bool) { return x.last() }

// SanityCheck checks the index against a log of logSize bytes. It returns
// an error wrapping ErrCorrupt, saying what is wrong, when the file's size
// is not a multiple of OffsetEntrySize, an entry is all zero, entries do not
// strictly increase in offset and position, or a position is at or past
// logSize; the caller then rebuilds the index (Reset and Append) from the
// log. It reads every entry and may run beside Append.
func (x *OffsetIndex) SanityCheck(logSize int64) error {
	if err := x.f.sanityCheck(); err != nil {
		return err
	}
	if last, ok := x.Last(); ok && last.Position >= logSize {
		return fmt.Errorf("%w: %s: last entry {offset %d, position %d} is past the log's %d bytes",
			ErrCorrupt, x.f.path, last.Offset, last.Position, logSize)
	}
	return nil
}
