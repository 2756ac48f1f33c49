package index

import "fmt"

// TimeIndex maps timestamps to offsets in a segment: a sparse,
// memory-mapped file of TimeEntrySize-byte entries.
//
// One goroutine writes (Append). Lookup, Len, Entry, Last, Full,
// BaseOffset and Path may run in any number of goroutines beside it.
// Seal, TruncateTo, Reset, Sync and Close run alone.
type TimeIndex struct {
	entryIndex[TimeOffset]
}

// OpenTime opens the time index at path for the segment whose first offset
// is baseOffset, like OpenOffset.
func OpenTime(path string, baseOffset int64, opts Options) (*TimeIndex, error) {
	return openIndex[TimeIndex](path, baseOffset, timeFormat, opts)
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

// Append adds an entry: the largest timestamp so far, timestamp, belongs to
// the record at offset. Timestamp and offset must both be greater than the
// last entry's (ErrOutOfOrder) and offset-BaseOffset must fit a uint32.
// Other errors are as for OffsetIndex.Append; on any error the index is
// unchanged.
//
// An entry of timestamp 0 (the epoch, a valid producer timestamp) at the
// base offset would be all zero bytes, which mark the end of the used
// entries: Append leaves it out and returns nil. A lookup finds the base
// offset without it; the segment learns its largest timestamp from its
// batches instead (segment.MaxTimestamp).
//
// Append does not sync. One goroutine appends; readers may run beside it.
func (x *TimeIndex) Append(timestamp, offset int64) error {
	rel, err := x.relOffset(offset)
	if err != nil {
		return err
	}
	if timestamp == 0 && rel == 0 {
		return nil
	}
	var b [TimeEntrySize]byte
	encodeTimeEntry(b[:], timestamp, rel)
	return x.append(TimeOffset{Timestamp: timestamp, Offset: offset}, b[:])
}

// Entry returns entry i, 0 <= i < Len(); it panics otherwise. It may run
// beside Append.
func (x *TimeIndex) Entry(i int) TimeOffset { return x.entry(i) }

// Last returns the last entry, or false when the index is empty. It may run
// beside Append.
func (x *TimeIndex) Last() (TimeOffset, bool) { return x.last() }

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
