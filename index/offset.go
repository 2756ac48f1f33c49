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
	f    *entryFile
	base int64
}

var offsetCols = []column{offsetRelCol, offsetPosCol}

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
	if baseOffset < 0 {
		return nil, fmt.Errorf("index: open %s: negative base offset %d", path, baseOffset)
	}
	f, err := openEntryFile(path, OffsetEntrySize, offsetCols, opts)
	if err != nil {
		return nil, err
	}
	return &OffsetIndex{f: f, base: baseOffset}, nil
}

// Append adds an entry: the record at offset starts at byte position of the
// log. Offset and position must both be greater than the last entry's
// (ErrOutOfOrder), offset-BaseOffset and position must fit a uint32, and
// the entry must not be all zero (position 0, the start of the log, is never
// indexed). It returns ErrFull when the index has no room (roll the
// segment), ErrReadOnly on a read-only or sealed index, ErrClosed, or an
// error wrapping syscall.ENOSPC when no disk blocks could be reserved; on
// any error the index is unchanged.
//
// Append does not sync. One goroutine appends; readers may run beside it.
func (x *OffsetIndex) Append(offset, position int64) error {
	if err := x.f.checkWritable(); err != nil {
		return err
	}
	rel := offset - x.base
	if rel < 0 || rel > math.MaxUint32 {
		return fmt.Errorf("index: %s: offset %d does not fit in the segment at base offset %d", x.f.path, offset, x.base)
	}
	if position < 0 || position > math.MaxUint32 {
		return fmt.Errorf("index: %s: position %d does not fit in 32 bits", x.f.path, position)
	}
	if rel == 0 && position == 0 {
		return fmt.Errorf("index: %s: entry {offset %d, position 0} would be all zero", x.f.path, offset)
	}
	if last, ok := x.Last(); ok && (offset <= last.Offset || position <= last.Position) {
		return fmt.Errorf("%w: %s: {offset %d, position %d} after {offset %d, position %d}",
			ErrOutOfOrder, x.f.path, offset, position, last.Offset, last.Position)
	}
	var b [OffsetEntrySize]byte
	encodeOffsetEntry(b[:], uint32(rel), uint32(position))
	return x.f.append(b[:])
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

// Len returns the number of entries in use. It may run beside Append.
func (x *OffsetIndex) Len() int { return x.f.len() }

// Entry returns entry i, 0 <= i < Len(); it panics otherwise. It may run
// beside Append.
func (x *OffsetIndex) Entry(i int) OffsetPosition { return decodeOffsetEntry(x.f.entry(i), x.base) }

// Last returns the last entry, or false when the index is empty. It may run
// beside Append.
func (x *OffsetIndex) Last() (OffsetPosition, bool) {
	b, ok := x.f.last()
	if !ok {
		return OffsetPosition{}, false
	}
	return decodeOffsetEntry(b, x.base), true
}

// Full reports whether Append would return ErrFull. A read-only or sealed
// index is always full. It may run beside Append.
func (x *OffsetIndex) Full() bool { return x.f.full() }

// TruncateTo drops the entries with Offset >= offset, zeroing them in the
// file (as after a log truncation). It does not sync. On a read-only or
// sealed index it returns ErrReadOnly unless nothing would be dropped. It
// runs alone: no reader or writer beside it.
func (x *OffsetIndex) TruncateTo(offset int64) error {
	k := 0
	if offset > x.base {
		k = x.f.upperBound(offsetRelCol, uint64(min(offset-1-x.base, math.MaxUint32)))
	}
	return x.f.truncate(k)
}

// Reset drops every entry before a rebuild from the log: the file is
// emptied and preallocated again. On a read-only or sealed index it returns
// ErrReadOnly unless the index is empty. It runs alone.
func (x *OffsetIndex) Reset() error { return x.f.reset() }

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

// Seal makes a writable index read-only when its segment rolls: the file is
// trimmed to its used length and remapped read-only, or unmapped when
// empty. It does not sync: call Sync first. On a read-only index it does
// nothing. It runs alone.
func (x *OffsetIndex) Seal() error { return x.f.seal() }

// Sync makes the appended entries durable: msync of the mapping, then fsync
// of the file. On an index opened read-only it does nothing. It runs alone
// (not beside Append).
func (x *OffsetIndex) Sync() error { return x.f.sync() }

// Close trims a writable index to its used length (like Seal, without
// syncing), then unmaps and closes the file. A second Close does nothing.
// It runs alone; after it no method but Close, BaseOffset and Path may be
// called (mutators return ErrClosed, Len is 0).
func (x *OffsetIndex) Close() error { return x.f.close() }

// BaseOffset returns the offset the entries are relative to.
func (x *OffsetIndex) BaseOffset() int64 { return x.base }

// Path returns the index file's path.
func (x *OffsetIndex) Path() string { return x.f.path }
