package segment

import (
	"encoding/binary"
	"fmt"
)

// RecordIter walks the records of one batch:
//
//	var it segment.RecordIter
//	if err := it.Reset(batch, segment.DefaultLimits); err != nil { ... }
//	for it.Next() {
//		r := it.Record()
//	}
//	if err := it.Err(); err != nil { ... }
//
// The zero value is ready to use. Reuse one iterator across batches: it
// keeps its decompression buffer. A Record's slices point into the batch
// (or into that buffer) and stay valid until the next Reset; copy what must
// outlive it. An iterator is not safe for concurrent use.
type RecordIter struct {
	hdr  Header
	data []byte // the records section, decompressed
	pos  int
	i    int32
	rec  Record
	hdrs []RecordHeader
	buf  []byte
	err  error
}

// Reset verifies batch (header, length and checksum), decompresses its
// records section within lim, and positions the iterator before the first
// record.
func (it *RecordIter) Reset(batch []byte, lim Limits) error {
	lim = lim.withDefaults()
	*it = RecordIter{buf: it.buf, hdrs: it.hdrs[:0]}
	h, err := Verify(batch, lim)
	if err != nil {
		it.err = err
		return err
	}
	it.hdr = h
	section := batch[HeaderSize:]
	if h.Codec() == CodecNone {
		if len(section) > lim.MaxRecordsBytes {
			it.err = fmt.Errorf("%w: %w: records section of %d bytes over the limit of %d", ErrCorrupt, ErrTooLarge, len(section), lim.MaxRecordsBytes)
			return it.err
		}
		it.data = section
		return nil
	}
	out, err := decompress(h.Codec(), it.buf, section, lim.MaxRecordsBytes)
	if err != nil {
		it.err = err
		return err
	}
	it.buf, it.data = out, out
	return nil
}

// Header returns the batch header of the last Reset.
func (it *RecordIter) Header() Header { return it.hdr }

// Record returns the current record.
func (it *RecordIter) Record() *Record { return &it.rec }

// Err returns the first error met, or nil.
func (it *RecordIter) Err() error { return it.err }

// Next advances to the next record and reports whether there is one.
func (it *RecordIter) Next() bool {
	if it.err != nil || it.data == nil {
		return false
	}
	if it.i >= it.hdr.RecordCount {
		if it.pos != len(it.data) {
			it.fail("%d bytes after the last of %d records", len(it.data)-it.pos, it.hdr.RecordCount)
		}
		it.data = nil
		return false
	}
	if err := it.decode(); err != nil {
		it.err = err
		return false
	}
	it.i++
	return true
}

func (it *RecordIter) fail(format string, args ...any) {
	it.err = fmt.Errorf("%w: record %d: %s", ErrCorrupt, it.i, fmt.Sprintf(format, args...))
}

// decode reads record it.i at it.pos. Every length is checked against what
// remains before it is used.
func (it *RecordIter) decode() error {
	d := decbuf{b: it.data, pos: it.pos}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)-d.pos) {
		return it.corrupt("length %d, %d bytes remain", n, len(d.b)-d.pos)
	}
	end := d.pos + int(n)
	d.b = d.b[:end]
	if attr := d.byte(); d.err == nil && attr != 0 {
		return it.corrupt("reserved attributes %#x", attr)
	}
	tsDelta := d.varint()
	offDelta := d.uvarint()
	key := d.bytes()
	value := d.bytes()
	nh := d.uvarint()
	if d.err != nil {
		return it.corrupt("%v", d.err)
	}
	if offDelta != uint64(it.i) {
		return it.corrupt("offset delta %d, want %d", offDelta, it.i)
	}
	ts := it.hdr.BaseTimestamp + tsDelta
	if ts > it.hdr.MaxTimestamp {
		return it.corrupt("timestamp %d after the batch's max timestamp %d", ts, it.hdr.MaxTimestamp)
	}
	if nh > uint64(end-d.pos)/2 {
		return it.corrupt("%d headers cannot fit in %d bytes", nh, end-d.pos)
	}
	it.hdrs = it.hdrs[:0]
	for j := uint64(0); j < nh; j++ {
		kl := d.uvarint()
		if d.err == nil && kl > uint64(end-d.pos) {
			return it.corrupt("header key length %d, %d bytes remain", kl, end-d.pos)
		}
		hk := d.take(int(kl))
		hv := d.bytes()
		if d.err != nil {
			return it.corrupt("header %d: %v", j, d.err)
		}
		it.hdrs = append(it.hdrs, RecordHeader{Key: hk, Value: hv})
	}
	if d.pos != end {
		return it.corrupt("%d bytes left inside the record", end-d.pos)
	}
	it.rec = Record{
		Offset:    it.hdr.BaseOffset + int64(it.i),
		Timestamp: ts,
		Key:       key,
		Value:     value,
	}
	if nh > 0 {
		it.rec.Headers = it.hdrs
	}
	it.pos = end
	return nil
}

func (it *RecordIter) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: record %d at byte %d of the records section: %s", ErrCorrupt, it.i, it.pos, fmt.Sprintf(format, args...))
}

// ValidateRecords checks a whole batch: header, checksum, and every record
// (count, dense offset deltas, lengths, timestamps within the header's).
func ValidateRecords(batch []byte, lim Limits) (Header, error) {
	var it RecordIter
	if err := it.Reset(batch, lim); err != nil {
		return it.hdr, err
	}
	for it.Next() {
	}
	return it.hdr, it.Err()
}

// decbuf decodes varints and byte strings from b[pos:], bounds-checked; its
// first error sticks and later calls return zero values.
type decbuf struct {
	b   []byte
	pos int
	err error
}

func (d *decbuf) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.pos >= len(d.b) {
		d.err = errShort
		return 0
	}
	c := d.b[d.pos]
	d.pos++
	return c
}

func (d *decbuf) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	if d.pos < len(d.b) && d.b[d.pos] < 0x80 {
		v := d.b[d.pos]
		d.pos++
		return uint64(v)
	}
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.err = errVarint
		return 0
	}
	d.pos += n
	return v
}

func (d *decbuf) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// bytes reads a varint length (-1: nil) and that many bytes.
func (d *decbuf) bytes() []byte {
	n := d.varint()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < -1 || n > int64(len(d.b)-d.pos) {
		d.err = fmt.Errorf("length %d, %d bytes remain", n, len(d.b)-d.pos)
		return nil
	}
	return d.take(int(n))
}

func (d *decbuf) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.pos {
		d.err = errShort
		return nil
	}
	b := d.b[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return b
}

var (
	errShort  = fmt.Errorf("unexpected end of record")
	errVarint = fmt.Errorf("bad varint")
)
