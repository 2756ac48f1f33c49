package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/cespare/xxhash/v2"
)

// Batch header layout: see the package doc. These never change: a new
// layout is a new magic byte.
const (
	// Version is the magic byte of the batches the log writes: Kafka's
	// RecordBatch v2.
	Version = 2
	// VersionV1 is the magic byte of seglog's earlier batch format,
	// still read (see the package doc), never written.
	VersionV1 = 1
	// HeaderSize is the size of a v2 batch header.
	HeaderSize = 61
	// HeaderSizeV1 is the size of a version-1 batch header.
	HeaderSizeV1 = 65
	// MaxHeaderSize is the largest header of any version: what a scan
	// reads to parse one.
	MaxHeaderSize = HeaderSizeV1

	offBaseOffset  = 0
	offBatchLength = 8
	offLeaderEpoch = 12
	offVersion     = 16
	offChecksum    = 17

	// Fields after the checksum, relative to the attributes (v2 at 21,
	// version 1 at 25, after its 8-byte checksum).
	offAttributesV2 = 21
	offAttributesV1 = 25
	relLastDelta    = 2
	relBaseTime     = 6
	relMaxTime      = 14
	relProducerID   = 22
	relProducerEp   = 30
	relBaseSequence = 32
	relRecordCount  = 36

	// lengthPrefix is the part of the header not counted by batchLength.
	lengthPrefix = 12

	codecMask = 0x07
	// Attribute bits of a v2 batch (Kafka's): bit 3 the timestamp type,
	// bit 4 transactional, bit 5 control, bit 6 a delete horizon in
	// baseTimestamp (set by a compacting cleaner).
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
	// reservedV1 are the attribute bits a version-1 batch must leave 0.
	reservedV1 = ^int16(codecMask)

	// NoProducerID marks a batch that is not from an idempotent producer.
	NoProducerID = -1
)

// crcTable is CRC-32C (Castagnoli), hardware-accelerated by hash/crc32.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Default limits.
const (
	DefaultMaxBatchBytes   = 16 << 20
	DefaultMaxRecordsBytes = 64 << 20
)

var (
	// ErrCorrupt is wrapped by every error that reports data on disk that
	// is not valid: bytes that do not decode as a batch, and (as
	// storage.ErrCorrupt) files a data directory must not hold. Its text
	// says corrupt data, not a corrupt batch, since not every such error
	// is about a batch. A caller's malformed batch never wraps it (see
	// ErrInvalid).
	ErrCorrupt = errors.New("seglog: corrupt data")
	// ErrChecksum reports a batch on disk whose checksum does not match
	// its bytes. It wraps ErrCorrupt.
	ErrChecksum = fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	// ErrTooLarge reports a batch, or its decompressed records, over
	// Limits. Read from disk it comes with ErrCorrupt; given by a caller,
	// with ErrInvalid, never ErrCorrupt.
	ErrTooLarge = errors.New("segment: batch too large")
	// ErrInvalid reports a batch that a caller gave or asked to encode
	// and that is not valid: a malformed v2 batch from a client (lengths,
	// counts, offset deltas, CRC), no records, a codec that does not
	// exist, a record too big. It never wraps ErrCorrupt: the caller's
	// bytes are bad, not the disk's.
	ErrInvalid = errors.New("segment: invalid batch")
)

// Limits bound what a decoder accepts, so that a hostile length field can
// never cause a huge allocation.
type Limits struct {
	// MaxBatchBytes is the largest encoded batch, header included.
	MaxBatchBytes int
	// MaxRecordsBytes is the largest records section after decompression.
	MaxRecordsBytes int
}

// DefaultLimits are the limits used where none are given.
var DefaultLimits = Limits{MaxBatchBytes: DefaultMaxBatchBytes, MaxRecordsBytes: DefaultMaxRecordsBytes}

func (l Limits) withDefaults() Limits {
	if l.MaxBatchBytes <= 0 {
		l.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if l.MaxRecordsBytes <= 0 {
		l.MaxRecordsBytes = DefaultMaxRecordsBytes
	}
	return l
}

// TimestampType says what a batch's timestamps are: the producer's
// (CreateTime) or the log's at append (LogAppendTime).
type TimestampType uint8

// The timestamp types, as Kafka numbers them.
const (
	CreateTime    TimestampType = 0
	LogAppendTime TimestampType = 1
)

// String returns CreateTime or LogAppendTime.
func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// Header is the decoded fixed header of a batch.
type Header struct {
	BaseOffset  int64
	Length      int32 // batchLength: bytes after the length field
	LeaderEpoch int32 // partitionLeaderEpoch
	Version     uint8 // the magic byte: Version (2) or VersionV1
	// Checksum is the CRC-32C of a v2 batch, the xxhash64 of a
	// version-1 one.
	Checksum        uint64
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// Size is the whole batch's size in bytes.
func (h Header) Size() int { return int(h.Length) + lengthPrefix }

// HeaderLen is the size of this batch's header: HeaderSize, or
// HeaderSizeV1 for a version-1 batch. Its records section follows.
func (h Header) HeaderLen() int {
	if h.Version == VersionV1 {
		return HeaderSizeV1
	}
	return HeaderSize
}

// LastOffset is the offset of the batch's last record (in a v2 batch
// whose records a compaction removed, the offset its last record had).
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch's last record.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Offsets is how many offsets the batch takes: LastOffsetDelta+1, which
// is RecordCount unless the batch's offsets are not dense.
func (h Header) Offsets() int64 { return int64(h.LastOffsetDelta) + 1 }

// IndexOffset is the offset a segment's index entries name for this
// batch: its last offset, as Kafka's LogSegment writes them (a version-1
// batch's entries named its base offset, and rebuilt ones still do).
func (h Header) IndexOffset() int64 {
	if h.Version == VersionV1 {
		return h.BaseOffset
	}
	return h.LastOffset()
}

// Codec is the batch's compression codec.
func (h Header) Codec() Codec {
	c := Codec(h.Attributes & codecMask)
	if h.Version == VersionV1 {
		return codecFromV1(c)
	}
	return c
}

// TimestampType is the batch's timestamp type.
func (h Header) TimestampType() TimestampType {
	if h.Version != VersionV1 && h.Attributes&attrLogAppendTime != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports whether the batch is part of a transaction.
func (h Header) IsTransactional() bool {
	return h.Version != VersionV1 && h.Attributes&attrTransactional != 0
}

// IsControl reports whether the batch holds control records (transaction
// markers), which record readers skip.
func (h Header) IsControl() bool { return h.Version != VersionV1 && h.Attributes&attrControl != 0 }

// HasDeleteHorizon reports whether baseTimestamp holds a compacting
// cleaner's delete horizon rather than the first record's time.
func (h Header) HasDeleteHorizon() bool {
	return h.Version != VersionV1 && h.Attributes&attrDeleteHorizon != 0
}

// HasProducer reports whether the batch carries idempotent producer
// fields: a producer id and sequences to check. A control batch (a
// transaction marker) names its producer but has no sequence, and is not
// checked against the producer's sequences, as in Kafka.
func (h Header) HasProducer() bool { return h.ProducerID >= 0 && !h.IsControl() }

// LastSequence is the producer sequence of the batch's last record.
func (h Header) LastSequence() int32 {
	return int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) & math.MaxInt32)
}

// headerProblem is what is wrong with a header, without the sentinel that
// says whose bytes they are (see ParseHeader and CheckBatch).
type headerProblem struct {
	msg      string
	tooLarge bool
}

// parseHeader decodes the header at the start of b and checks what it can
// without the rest of the batch.
func parseHeader(b []byte, lim Limits) (Header, *headerProblem) {
	if len(b) <= offVersion {
		return Header{}, &headerProblem{msg: fmt.Sprintf("%d bytes, shorter than a batch header", len(b))}
	}
	h := Header{
		BaseOffset:  int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:      int32(binary.BigEndian.Uint32(b[offBatchLength:])),
		LeaderEpoch: int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Version:     b[offVersion],
	}
	var a int
	switch h.Version {
	case Version:
		a = offAttributesV2
	case VersionV1:
		a = offAttributesV1
	default:
		return h, &headerProblem{msg: fmt.Sprintf("unknown version (magic) %d", h.Version)}
	}
	hl := h.HeaderLen()
	if len(b) < hl {
		return h, &headerProblem{msg: fmt.Sprintf("%d bytes, shorter than the %d-byte header", len(b), hl)}
	}
	if h.Version == Version {
		h.Checksum = uint64(binary.BigEndian.Uint32(b[offChecksum:]))
	} else {
		h.Checksum = binary.BigEndian.Uint64(b[offChecksum:])
	}
	h.Attributes = int16(binary.BigEndian.Uint16(b[a:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[a+relLastDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[a+relBaseTime:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[a+relMaxTime:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[a+relProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[a+relProducerEp:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[a+relBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[a+relRecordCount:]))
	lim = lim.withDefaults()
	bad := func(format string, args ...any) (Header, *headerProblem) {
		return h, &headerProblem{msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case int64(h.Length) < int64(hl-lengthPrefix):
		return bad("batch length %d shorter than the header", h.Length)
	case int64(h.Length)+lengthPrefix > int64(lim.MaxBatchBytes):
		return h, &headerProblem{msg: fmt.Sprintf("batch length %d over the limit of %d", h.Length, lim.MaxBatchBytes), tooLarge: true}
	case h.Version == VersionV1 && h.Attributes&reservedV1 != 0:
		return bad("reserved attribute bits set (%#x)", h.Attributes)
	case h.Version == Version && h.Attributes&codecMask > int16(CodecZstd),
		h.Version == VersionV1 && h.Attributes&codecMask > v1CodecS2:
		return bad("unknown codec %d", h.Attributes&codecMask)
	case h.RecordCount < 0 || h.LastOffsetDelta < 0:
		return bad("record count %d, last offset delta %d", h.RecordCount, h.LastOffsetDelta)
	case h.Version == VersionV1 && (h.RecordCount < 1 || h.LastOffsetDelta != h.RecordCount-1):
		return bad("last offset delta %d with %d records", h.LastOffsetDelta, h.RecordCount)
	case int64(h.RecordCount) > int64(h.LastOffsetDelta)+1:
		return bad("%d records in %d offsets (last offset delta %d)", h.RecordCount, int64(h.LastOffsetDelta)+1, h.LastOffsetDelta)
	case h.BaseOffset < 0 || h.BaseOffset > math.MaxInt64-int64(h.LastOffsetDelta)-1:
		return bad("base offset %d out of range", h.BaseOffset)
	case h.Version == VersionV1 && h.MaxTimestamp < h.BaseTimestamp:
		return bad("max timestamp %d before base timestamp %d", h.MaxTimestamp, h.BaseTimestamp)
	case h.Codec() == CodecNone && int64(h.RecordCount) > int64(h.Length):
		// Every uncompressed record takes at least 6 bytes; one per byte
		// is a bound that is cheap and always true.
		return bad("%d records cannot fit in %d bytes", h.RecordCount, h.Length)
	}
	return h, nil
}

// wrap turns p into an error wrapping kind (ErrCorrupt or ErrInvalid),
// and ErrTooLarge when a limit was passed.
func (p *headerProblem) wrap(kind error) error {
	if p.tooLarge {
		return fmt.Errorf("%w: %w: %s", kind, ErrTooLarge, p.msg)
	}
	return fmt.Errorf("%w: %s", kind, p.msg)
}

// ParseHeader decodes and checks the fixed header at the start of b, read
// from disk: of a v2 batch or a version-1 one. It checks every field it
// can without the rest of the batch (version, attributes, lengths against
// lim, counts) but not the checksum; b may be just the header. Its errors
// wrap ErrCorrupt.
func ParseHeader(b []byte, lim Limits) (Header, error) {
	h, p := parseHeader(b, lim)
	if p != nil {
		return h, p.wrap(ErrCorrupt)
	}
	return h, nil
}

// checksum computes the checksum a batch's header must hold: CRC-32C of
// the bytes from the attributes on (v2), xxhash64 from byte 25 on
// (version 1).
func checksum(b []byte, version uint8) uint64 {
	if version == VersionV1 {
		return xxhash.Sum64(b[offAttributesV1:])
	}
	return uint64(crc32.Checksum(b[offAttributesV2:], crcTable))
}

// Verify checks that b, read from disk, is exactly one whole batch: a
// valid header, a length that matches len(b), and a checksum that matches
// the bytes. It does not decode the records (see ValidateRecords). Its
// errors wrap ErrCorrupt.
func Verify(b []byte, lim Limits) (Header, error) {
	h, p := verify(b, lim)
	if p != nil {
		if p.checksum {
			return h, fmt.Errorf("%w: %s", ErrChecksum, p.msg)
		}
		return h, p.wrap(ErrCorrupt)
	}
	return h, nil
}

// batchProblem is a headerProblem, or a checksum mismatch.
type batchProblem struct {
	headerProblem
	checksum bool
}

func verify(b []byte, lim Limits) (Header, *batchProblem) {
	h, p := parseHeader(b, lim)
	if p != nil {
		return h, &batchProblem{headerProblem: *p}
	}
	if h.Size() != len(b) {
		return h, &batchProblem{headerProblem: headerProblem{msg: fmt.Sprintf("batch length says %d bytes, have %d", h.Size(), len(b))}}
	}
	if sum := checksum(b, h.Version); sum != h.Checksum {
		return h, &batchProblem{headerProblem: headerProblem{msg: fmt.Sprintf("stored %#x, computed %#x", h.Checksum, sum)}, checksum: true}
	}
	return h, nil
}

// CheckBatch checks a batch a client encoded, before the log appends it:
// it must be one whole Kafka RecordBatch v2 (magic 2: the log writes
// nothing else) with at least one record, its header valid, within lim,
// and its CRC right. With records set it also decodes every record
// (lengths, count, offset deltas increasing within lastOffsetDelta). Its
// errors wrap ErrInvalid (and ErrTooLarge for a limit), never ErrCorrupt.
func CheckBatch(b []byte, lim Limits, records bool) (Header, error) {
	h, p := verify(b, lim)
	switch {
	case p != nil && p.checksum:
		return h, fmt.Errorf("%w: CRC mismatch: %s", ErrInvalid, p.msg)
	case p != nil:
		return h, p.wrap(ErrInvalid)
	case h.Version != Version:
		return h, fmt.Errorf("%w: magic %d: the log appends only RecordBatch v2", ErrInvalid, h.Version)
	case h.RecordCount < 1:
		return h, fmt.Errorf("%w: no records", ErrInvalid)
	}
	if !records {
		return h, nil
	}
	it := RecordIter{bad: ErrInvalid, prev: -1}
	if err := it.start(b, h, lim.withDefaults()); err != nil {
		return h, err
	}
	for it.Next() {
	}
	return h, it.Err()
}

// SetBaseOffset patches the base offset of an encoded batch in place. The
// checksum does not cover it, so the batch stays valid.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetLeaderEpoch patches the partition leader epoch of an encoded batch in
// place. The checksum does not cover it.
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime stamps a v2 batch with the log's append time, as Kafka
// does for a topic whose timestamps are LogAppendTime: the timestamp type
// bit set and maxTimestamp = ts, then the CRC computed again (the one
// change inside the checksum the log ever makes). It returns the new
// header. b must be a whole v2 batch that h describes.
func SetLogAppendTime(b []byte, h Header, ts int64) Header {
	h.Attributes |= attrLogAppendTime
	h.MaxTimestamp = ts
	binary.BigEndian.PutUint16(b[offAttributesV2:], uint16(h.Attributes))
	binary.BigEndian.PutUint64(b[offAttributesV2+relMaxTime:], uint64(ts))
	h.Checksum = checksum(b, Version)
	binary.BigEndian.PutUint32(b[offChecksum:], uint32(h.Checksum))
	return h
}

// RecordHeader is one header of a record.
type RecordHeader struct {
	Key   []byte
	Value []byte // nil: a null value
}

// Record is one record. Timestamps are milliseconds since the Unix epoch.
// A nil Key is no key; a nil Value is a null value (a tombstone).
type Record struct {
	Offset    int64 // set by decoding; ignored by encoding
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []RecordHeader
}

// EncodeOptions are the batch-level fields a producer chooses.
type EncodeOptions struct {
	Codec Codec
	// ProducerID, ProducerEpoch and BaseSequence identify the batch for
	// idempotent appends. A ProducerID <= 0 means none (written as -1,
	// with epoch and sequence -1, as Kafka writes them).
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// LeaderEpoch is stamped in the header (the log may patch it).
	LeaderEpoch int32
	// BaseOffset is usually 0: the log assigns offsets when it appends.
	BaseOffset int64
}

// AppendBatch encodes recs as one Kafka RecordBatch v2 and appends it to
// dst. Compression uses pooled encoders.
func AppendBatch(dst []byte, recs []Record, opts EncodeOptions) ([]byte, error) {
	if len(recs) == 0 {
		return dst, fmt.Errorf("%w: no records", ErrInvalid)
	}
	if opts.Codec > CodecZstd {
		return dst, fmt.Errorf("%w: codec %s cannot be written in a v2 batch", ErrInvalid, opts.Codec)
	}
	if len(recs) > math.MaxInt32 {
		return dst, fmt.Errorf("%w: %d records", ErrInvalid, len(recs))
	}
	base := recs[0].Timestamp
	maxTS := base
	for i := range recs {
		if recs[i].Timestamp > maxTS {
			maxTS = recs[i].Timestamp
		}
	}
	start := len(dst)
	dst = grow(dst, HeaderSize)
	h := dst[start : start+HeaderSize]
	pid, epoch, seq := opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence
	if pid <= 0 {
		pid, epoch, seq = NoProducerID, -1, -1
	}
	const a = offAttributesV2
	binary.BigEndian.PutUint64(h[offBaseOffset:], uint64(opts.BaseOffset))
	binary.BigEndian.PutUint32(h[offLeaderEpoch:], uint32(opts.LeaderEpoch))
	h[offVersion] = Version
	binary.BigEndian.PutUint16(h[a:], uint16(opts.Codec))
	binary.BigEndian.PutUint32(h[a+relLastDelta:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(h[a+relBaseTime:], uint64(base))
	binary.BigEndian.PutUint64(h[a+relMaxTime:], uint64(maxTS))
	binary.BigEndian.PutUint64(h[a+relProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(h[a+relProducerEp:], uint16(epoch))
	binary.BigEndian.PutUint32(h[a+relBaseSequence:], uint32(seq))
	binary.BigEndian.PutUint32(h[a+relRecordCount:], uint32(len(recs)))

	var err error
	if opts.Codec == CodecNone {
		dst = appendRecords(dst, recs, base)
	} else {
		scratch := getBuf()
		*scratch = appendRecords((*scratch)[:0], recs, base)
		dst, err = compress(opts.Codec, dst, *scratch)
		putBuf(scratch)
		if err != nil {
			return dst[:start], err
		}
	}
	size := len(dst) - start
	if size-lengthPrefix > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: batch of %d bytes", ErrInvalid, size)
	}
	b := dst[start:]
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(size-lengthPrefix))
	binary.BigEndian.PutUint32(b[offChecksum:], crc32.Checksum(b[offAttributesV2:], crcTable))
	return dst, nil
}

// grow extends b by n bytes, reallocating at most once.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// varintLen is the size of v as a zigzag varint.
func varintLen(v int64) int { return uvarintLen(uint64(v<<1) ^ uint64(v>>63)) }

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func bytesLen(b []byte) int {
	if b == nil {
		return 1 // varint -1
	}
	return varintLen(int64(len(b))) + len(b)
}

// recordBodyLen is the size of record r (the i-th of its batch) after its
// length field.
func recordBodyLen(r *Record, i int, base int64) int {
	n := 1 + varintLen(r.Timestamp-base) + varintLen(int64(i)) + bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for j := range r.Headers {
		n += varintLen(int64(len(r.Headers[j].Key))) + len(r.Headers[j].Key) + bytesLen(r.Headers[j].Value)
	}
	return n
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// appendRecords appends recs in Kafka's record encoding: every length,
// delta and count a zigzag varint.
func appendRecords(dst []byte, recs []Record, base int64) []byte {
	total := 0
	for i := range recs {
		n := recordBodyLen(&recs[i], i, base)
		total += varintLen(int64(n)) + n
	}
	if cap(dst)-len(dst) < total {
		nb := make([]byte, len(dst), len(dst)+total)
		copy(nb, dst)
		dst = nb
	}
	for i := range recs {
		r := &recs[i]
		dst = binary.AppendVarint(dst, int64(recordBodyLen(r, i, base)))
		dst = append(dst, 0)
		dst = binary.AppendVarint(dst, r.Timestamp-base)
		dst = binary.AppendVarint(dst, int64(i))
		dst = appendBytes(dst, r.Key)
		dst = appendBytes(dst, r.Value)
		dst = binary.AppendVarint(dst, int64(len(r.Headers)))
		for j := range r.Headers {
			dst = binary.AppendVarint(dst, int64(len(r.Headers[j].Key)))
			dst = append(dst, r.Headers[j].Key...)
			dst = appendBytes(dst, r.Headers[j].Value)
		}
	}
	return dst
}

// CheckHeader checks the header of a batch a caller gave, like ParseHeader
// but with errors wrapping ErrInvalid (never ErrCorrupt): for a batch the
// caller encoded itself, whose checksum is right by construction.
func CheckHeader(b []byte, lim Limits) (Header, error) {
	h, p := parseHeader(b, lim)
	if p != nil {
		return h, p.wrap(ErrInvalid)
	}
	return h, nil
}

// SequenceOf is the producer sequence of the record at offset in this
// batch, as Kafka computes it: -1 without a base sequence, else the base
// sequence plus the record's offset delta, wrapping at 2^31.
func (h Header) SequenceOf(offset int64) int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	return int32((int64(h.BaseSequence) + offset - h.BaseOffset) & math.MaxInt32)
}

// KafkaLastSequence is Kafka's lastSequence of the batch: -1 without a
// base sequence, else LastSequence.
func (h Header) KafkaLastSequence() int32 { return h.SequenceOf(h.LastOffset()) }
