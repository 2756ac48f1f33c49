package index

import (
	"fmt"
	"math"
)

// TimeIndex maps timestamps to offsets in a segment: a sparse,
// memory-mapped file of TimeEntrySize-byte entries.
//
// One goroutine writes (Append). Lookup, Len, Entry, Last, Full,
// BaseOffset and Path may run in any number of goroutines beside it.
// Seal, TruncateTo, Reset, Sync and Close run alone.
type TimeIndex struct {
	f    *entryFile
	base int64
}

var timeCols = []column{timeTsCol, timeRelCol}

// OpenTime opens the time index at path for the segment whose first offset
// is baseOffset, like OpenOffset.
func OpenTime(path string, baseOffset int64, opts Options) (*TimeIndex, error) {
	if baseOffset < 0 {
		return nil, fmt.Errorf("index: open %s: negative base offset %d", path, baseOffset)
	}
	f, err := openEntryFile(path, TimeEntrySize, timeCols, opts)
	if err != nil {
		return nil, err
	}
	return &TimeIndex{f: f, base: baseOffset}, nil
}

// Append adds an entry: the largest timestamp so far, timestamp, belongs to
// the record at offset. Timestamp and offset must both be greater than the
// last entry's (ErrOutOfOrder), offset-BaseOffset must fit a uint32, and
// the entry must not be all zero. Other errors are as for
// OffsetIndex.Append; on any error the index is unchanged.
//
// Append does not sync. One goroutine appends; readers may run beside it.
func (x *TimeIndex) Append(timestamp, offset int64) error {
	if err := x.f.checkWritable(); err != nil {
		return err
	}
	rel := offset - x.base
	if rel < 0 || rel > math.MaxUint32 {
		return fmt.Errorf("index: %s: offset %d does not fit in the segment at base offset %d", x.f.path, offset, x.base)
	}
	if rel == 0 && timestamp == 0 {
		return fmt.Errorf("index: %s: entry {timestamp 0, offset %d} would be all zero", x.f.path, offset)
	}
	if last, ok := x.Last(); ok && (timestamp <= last.Timestamp || offset <= last.Offset) {
		return fmt.Errorf("%w: %s: {timestamp %d, offset %d} after {timestamp %d, offset %d}",
			ErrOutOfOrder, x.f.path, timestamp, offset, last.Timestamp, last.Offset)
	}
	var b [TimeEntrySize]byte
	encodeTimeEntry(b[:], timestamp, uint32(rel))
	return x.f.append(b[:])
}

// Lookup returns the entry with the largest timestamp at or below
// timestamp, or {-1, BaseOffset()} and false when there is none. Like
// OffsetIndex.Lookup it searches an in-memory summary first (the first
// timestamp of every 512 entries, 8 bytes per 6 KiB of the index), then
// those 512 entries in the map. It may run beside Append. It does not
// allocate, except on the first Lookup of an index opened read-only or
// followed, which builds the summary.
func (x *TimeIndex) Lookup(timestamp int64) (TimeOffset, bool) {
	i := x.f.upperBound(timeTsCol, orderedInt64(timestamp))
	if i == 0 {
		return TimeOffset{Timestamp: -1, Offset: x.base}, false
	}
	return x.Entry(i - 1), true
}

// Len returns the number of entries in use. It may run beside Append.
func (x *TimeIndex) Len() int { return x.f.len() }

// Entry returns entry i, 0 <= i < Len(); it panics otherwise. It may run
// beside Append.
func (x *TimeIndex) Entry(i int) TimeOffset { return decodeTimeEntry(x.f.entry(i), x.base) }

// Last returns the last entry, or false when the index is empty. It may run
// beside Append.
func (x *TimeIndex) Last() (TimeOffset, bool) {
	b, ok := x.f.last()
	if !ok {
		return TimeOffset{}, false
	}
	return decodeTimeEntry(b, x.base), true
}

// Full reports whether Append would return ErrFull. A read-only or sealed
// index is always full. It may run beside Append.
func (x *TimeIndex) Full() bool { return x.f.full() }

// TruncateTo drops the entries with Offset >= offset, zeroing them in the
// file. It does not sync. On a read-only or sealed index it returns
// ErrReadOnly unless nothing would be dropped. It runs alone.
func (x *TimeIndex) TruncateTo(offset int64) error {
	k := 0
	if offset > x.base {
		k = x.f.upperBound(timeRelCol, uint64(min(offset-1-x.base, math.MaxUint32)))
	}
	return x.f.truncate(k)
}

// Reset drops every entry before a rebuild from the log, like
// OffsetIndex.Reset. It runs alone.
func (x *TimeIndex) Reset() error { return x.f.reset() }

// SanityCheck checks the index of a segment holding the offsets
// [baseOffset, endOffset). It returns an error wrapping ErrCorrupt, saying
// what is wrong, when the file's size is not a multiple of TimeEntrySize,
// an entry is all zero, entries do not strictly increase in timestamp and
// offset, or an offset is outside [baseOffset, endOffset). It reads every
// entry and may run beside Append.
func (x *TimeIndex) SanityCheck(baseOffset, endOffset int64) error {
	if err := x.f.sanityCheck(); err != nil {
		return err
	}
	n := x.Len()
	if n == 0 {
		return nil
	}
	// Offsets increase, so the first and last entries bound them all.
	for _, i := range []int{0, n - 1} {
		if e := x.Entry(i); e.Offset < baseOffset || e.Offset >= endOffset {
			return fmt.Errorf("%w: %s: entry %d {timestamp %d, offset %d} is outside the offsets [%d, %d)",
				ErrCorrupt, x.f.path, i, e.Timestamp, e.Offset, baseOffset, endOffset)
		}
	}
	return nil
}

// Seal makes a writable index read-only, like OffsetIndex.Seal. It runs
// alone.
func (x *TimeIndex) Seal() error { return x.f.seal() }

// Sync makes the appended entries durable, like OffsetIndex.Sync. It runs
// alone.
func (x *TimeIndex) Sync() error { return x.f.sync() }

// Close trims a writable index, unmaps and closes it, like
// OffsetIndex.Close. A second Close does nothing. It runs alone.
func (x *TimeIndex) Close() error { return x.f.close() }

// BaseOffset returns the offset the entries are relative to.
func (x *TimeIndex) BaseOffset() int64 { return x.base }

// Path returns the index file's path.
func (x *TimeIndex) Path() string { return x.f.path }
