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
//
// A v2 batch's record offsets need not be dense (a compacted batch keeps
// its lastOffsetDelta when records go): each record's offset delta must be
// larger than the one before and at most lastOffsetDelta. A control
// batch's records (transaction markers) are returned like any other; the
// log's record readers skip control batches. In a LogAppendTime batch
// every record's timestamp is the batch's maxTimestamp, as Kafka
// consumers read it.
type RecordIter struct {
	hdr  Header
	data []byte // the records section, decompressed
	pos  int
	i    int32
	prev int64 // offset delta of the record before; -1 before the first
	rec  Record
	hdrs []RecordHeader
	buf  []byte
	err  error
	bad  error // what bad bytes wrap: ErrCorrupt (nil) or ErrInvalid
}

// Reset verifies batch (header, length and checksum), decompresses its
// records section within lim, and positions the iterator before the first
// record. Its errors, and Err's, wrap ErrCorrupt: the batch was read from
// disk.
func (it *RecordIter) Reset(batch []byte, lim Limits) error {
	lim = lim.withDefaults()
	bad := it.bad
	if bad == nil {
		bad = ErrCorrupt
	}
	*it = RecordIter{buf: it.buf, hdrs: it.hdrs[:0], bad: bad, prev: -1}
	h, p := verify(batch, lim)
	if p != nil {
		switch {
		case p.checksum && bad == ErrCorrupt:
			it.err = fmt.Errorf("%w: %s", ErrChecksum, p.msg)
		case p.checksum:
			it.err = fmt.Errorf("%w: CRC mismatch: %s", bad, p.msg)
		default:
			it.err = p.wrap(bad)
		}
		return it.err
	}
	return it.start(batch, h, lim)
}

// start positions the iterator before the first record of batch, whose
// header h was verified (lim has its defaults).
func (it *RecordIter) start(batch []byte, h Header, lim Limits) error {
	bad := it.sentinel()
	it.hdr = h
	section := batch[h.HeaderLen():]
	if h.Codec() == CodecNone {
		if len(section) > lim.MaxRecordsBytes {
			it.err = fmt.Errorf("%w: %w: records section of %d bytes over the limit of %d", bad, ErrTooLarge, len(section), lim.MaxRecordsBytes)
			return it.err
		}
		it.data = section
		return nil
	}
	out, err := decompress(h.Codec(), it.buf, section, lim.MaxRecordsBytes)
	if err != nil {
		it.err = fmt.Errorf("%w: %w", bad, err)
		return it.err
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
	it.err = fmt.Errorf("%w: record %d: %s", it.sentinel(), it.i, fmt.Sprintf(format, args...))
}

// sentinel is what bad bytes wrap.
func (it *RecordIter) sentinel() error {
	if it.bad == nil {
		return ErrCorrupt
	}
	return it.bad
}

// decode reads record it.i at it.pos: Kafka's record in a v2 batch, the
// version-1 record otherwise (uvarint lengths, counts and offset delta; a
// zero attributes byte; dense offset deltas; timestamps at most the
// batch's max). Every length is checked against what remains before it is
// used.
func (it *RecordIter) decode() error {
	v1 := it.hdr.Version == VersionV1
	d := decbuf{b: it.data, pos: it.pos}
	n := d.count(v1)
	if d.err == nil && (n < 0 || n > int64(len(d.b)-d.pos)) {
		return it.corrupt("length %d, %d bytes remain", n, len(d.b)-d.pos)
	}
	end := d.pos + int(n)
	d.b = d.b[:end]
	// Kafka's v2 records leave the attributes unused; version 1 wants 0.
	if attr := d.byte(); v1 && d.err == nil && attr != 0 {
		return it.corrupt("reserved attributes %#x", attr)
	}
	tsDelta := d.varint()
	offDelta := d.count(v1)
	key := d.bytes()
	value := d.bytes()
	nh := d.count(v1)
	if d.err != nil {
		return it.corrupt("%v", d.err)
	}
	switch {
	case v1 && offDelta != int64(it.i):
		return it.corrupt("offset delta %d, want %d", offDelta, it.i)
	case offDelta <= it.prev || offDelta > int64(it.hdr.LastOffsetDelta):
		return it.corrupt("offset delta %d after %d (last offset delta %d)", offDelta, it.prev, it.hdr.LastOffsetDelta)
	}
	ts := it.hdr.BaseTimestamp + tsDelta
	switch {
	case v1 && ts > it.hdr.MaxTimestamp:
		return it.corrupt("timestamp %d after the batch's max timestamp %d", ts, it.hdr.MaxTimestamp)
	case it.hdr.TimestampType() == LogAppendTime:
		ts = it.hdr.MaxTimestamp
	}
	if nh < 0 || nh > int64(end-d.pos)/2 {
		return it.corrupt("%d headers cannot fit in %d bytes", nh, end-d.pos)
	}
	it.hdrs = it.hdrs[:0]
	for j := int64(0); j < nh; j++ {
		kl := d.count(v1)
		if d.err == nil && (kl < 0 || kl > int64(end-d.pos)) {
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
	it.rec = Record{Offset: it.hdr.BaseOffset + offDelta, Timestamp: ts, Key: key, Value: value}
	if nh > 0 {
		it.rec.Headers = it.hdrs
	}
	it.prev = offDelta
	it.pos = end
	return nil
}

func (it *RecordIter) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: record %d at byte %d of the records section: %s", it.sentinel(), it.i, it.pos, fmt.Sprintf(format, args...))
}

// ValidateRecords checks a whole batch read from disk: header, checksum,
// and every record (count, offset deltas, lengths). Its errors wrap
// ErrCorrupt.
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

// count reads a length, count or offset delta: a zigzag varint (Kafka's),
// or a uvarint in a version-1 record (v1), where a value past MaxInt64
// reads as negative, which callers refuse.
func (d *decbuf) count(v1 bool) int64 {
	if v1 {
		return int64(d.uvarint())
	}
	return d.varint()
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

// ControlType is the type of a control record (Kafka's ControlRecordType).
type ControlType int16

// The control record types.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

var controlTypeNames = []string{"ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS"}

// String returns Kafka's name of the type (ABORT, COMMIT, ...), or
// UNKNOWN.
func (c ControlType) String() string {
	if c >= 0 && int(c) < len(controlTypeNames) {
		return controlTypeNames[c]
	}
	return "UNKNOWN"
}

// ControlRecord is the decoded key (and, for a transaction marker, value)
// of a record of a control batch.
type ControlRecord struct {
	Type ControlType
	// CoordinatorEpoch is the transaction coordinator's epoch, in the
	// value of an ABORT or COMMIT marker.
	CoordinatorEpoch int32
}

// IsTxnMarker reports whether the record ends a transaction (ABORT or
// COMMIT).
func (c ControlRecord) IsTxnMarker() bool { return c.Type == ControlAbort || c.Type == ControlCommit }

// ParseControlRecord decodes a control record: its key is a version
// (int16, 0) and a type (int16); an ABORT or COMMIT marker's value is a
// version (int16) and the coordinator epoch (int32).
func ParseControlRecord(r *Record) (ControlRecord, error) {
	if len(r.Key) < 4 {
		return ControlRecord{}, fmt.Errorf("%w: control record key of %d bytes", ErrCorrupt, len(r.Key))
	}
	c := ControlRecord{Type: ControlType(int16(binary.BigEndian.Uint16(r.Key[2:])))}
	if c.IsTxnMarker() {
		if len(r.Value) < 6 {
			return c, fmt.Errorf("%w: transaction marker value of %d bytes", ErrCorrupt, len(r.Value))
		}
		c.CoordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
	}
	return c, nil
}
