package index

import (
	"fmt"
	"math"
)

// entry is either kind of index entry.
type entry interface {
	OffsetPosition | TimeOffset
	// fields returns the entry's two fields in the order Append takes
	// them and the file stores them; both strictly increase from one
	// entry to the next.
	fields() (int64, int64)
	// describe formats the entry as errors and problems name it.
	describe() string
}

func (e OffsetPosition) fields() (int64, int64) { return e.Offset, e.Position }

func (e OffsetPosition) describe() string {
	return fmt.Sprintf("{offset %d, position %d}", e.Offset, e.Position)
}

func (e TimeOffset) fields() (int64, int64) { return e.Timestamp, e.Offset }

func (e TimeOffset) describe() string {
	return fmt.Sprintf("{timestamp %d, offset %d}", e.Timestamp, e.Offset)
}

// follows reports whether e may come after prev in an index: both its
// fields are larger.
func follows[E entry](e, prev E) bool {
	a, b := e.fields()
	pa, pb := prev.fields()
	return a > pa && b > pb
}

// entryIndex is what OffsetIndex and TimeIndex share: the file of entries,
// the offset they are relative to, and the methods that do the same for
// either kind of entry (OffsetIndex and TimeIndex embed it, so these are
// their methods).
type entryIndex[E entry] struct {
	f      *entryFile
	base   int64
	format entryFormat[E]
}

// openIndex opens the index file at path as an X: an OffsetIndex or a
// TimeIndex, whose entries have the given format.
func openIndex[X ~struct{ entryIndex[E] }, E entry](path string, baseOffset int64, format entryFormat[E], opts Options) (*X, error) {
	if baseOffset < 0 {
		return nil, fmt.Errorf("index: open %s: negative base offset %d", path, baseOffset)
	}
	f, err := openEntryFile(path, format.size, format.cols, opts)
	if err != nil {
		return nil, err
	}
	return &X{entryIndex[E]{f: f, base: baseOffset, format: format}}, nil
}

// relOffset returns offset relative to the base offset for Append, or the
// error Append returns when the index takes no appends or offset is outside
// the segment.
func (x *entryIndex[E]) relOffset(offset int64) (uint32, error) {
	if err := x.f.checkWritable(); err != nil {
		return 0, err
	}
	rel := offset - x.base
	if rel < 0 || rel > math.MaxUint32 {
		return 0, fmt.Errorf("index: %s: offset %d does not fit in the segment at base offset %d", x.f.path, offset, x.base)
	}
	return uint32(rel), nil
}

// append adds entry e, encoded as b, after checking that it is not all
// zero and follows the last entry.
func (x *entryIndex[E]) append(e E, b []byte) error {
	if allZero(b) {
		return fmt.Errorf("index: %s: entry %s would be all zero", x.f.path, e.describe())
	}
	if last, ok := x.last(); ok && !follows(e, last) {
		return fmt.Errorf("%w: %s: %s after %s", ErrOutOfOrder, x.f.path, e.describe(), last.describe())
	}
	return x.f.append(b)
}

// Len returns the number of entries in use. It may run beside Append.
func (x *entryIndex[E]) Len() int { return x.f.len() }

func (x *entryIndex[E]) entry(i int) E { return x.format.decode(x.f.entry(i), x.base) }

func (x *entryIndex[E]) last() (E, bool) {
	b, ok := x.f.last()
	if !ok {
		var none E
		return none, false
	}
	return x.format.decode(b, x.base), true
}

// Full reports whether Append would return ErrFull. A read-only or sealed
// index is always full. It may run beside Append.
func (x *entryIndex[E]) Full() bool { return x.f.full() }

// TruncateTo drops the entries with Offset >= offset, zeroing them in the
// file (as after a log truncation). It does not sync. On a read-only or
// sealed index it returns ErrReadOnly unless nothing would be dropped. It
// runs alone: no reader or writer beside it.
func (x *entryIndex[E]) TruncateTo(offset int64) error {
	k := 0
	if offset > x.base {
		k = x.f.upperBound(x.format.rel, uint64(min(offset-1-x.base, math.MaxUint32)))
	}
	return x.f.truncate(k)
}

// Reset drops every entry before a rebuild from the log: the file is
// emptied and preallocated again. On a read-only or sealed index it returns
// ErrReadOnly unless the index is empty. It runs alone.
func (x *entryIndex[E]) Reset() error { return x.f.reset() }

// Seal makes a writable index read-only when its segment rolls: the file is
// trimmed to its used length and remapped read-only, or unmapped when
// empty. It does not sync: call Sync first. On a read-only index it does
// nothing. It runs alone.
func (x *entryIndex[E]) Seal() error { return x.f.seal() }

// Sync makes the appended entries durable: msync of the mapping, then fsync
// of the file. On an index opened read-only it does nothing. It runs alone
// (not beside Append).
func (x *entryIndex[E]) Sync() error { return x.f.sync() }

// Close trims a writable index to its used length (like Seal, without
// syncing), then unmaps and closes the file. A second Close does nothing.
// It runs alone; after it no method but Close, BaseOffset and Path may be
// called (mutators return ErrClosed, Len is 0).
func (x *entryIndex[E]) Close() error { return x.f.close() }

// BaseOffset returns the offset the entries are relative to.
func (x *entryIndex[E]) BaseOffset() int64 { return x.base }

// Path returns the index file's path.
func (x *entryIndex[E]) Path() string { return x.f.path }
