package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
)

// Batch header layout: see the package doc. These never change without a
// new Version.
const (
	Version    = 1
	HeaderSize = 65

	offBaseOffset    = 0
	offBatchLength   = 8
	offLeaderEpoch   = 12
	offVersion       = 16
	offChecksum      = 17
	offAttributes    = 25
	offLastDelta     = 27
	offBaseTimestamp = 31
	offMaxTimestamp  = 39
	offProducerID    = 47
	offProducerEpoch = 55
	offBaseSequence  = 57
	offRecordCount   = 61

	// lengthPrefix is the part of the header not counted by batchLength.
	lengthPrefix = 12
	// checksumStart is the first byte the checksum covers.
	checksumStart = offAttributes

	codecMask      = 0x07
	reservedAttrib = ^int16(codecMask)

	// NoProducerID marks a batch that is not from an idempotent producer.
	NoProducerID = -1
)

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
	// is about a batch.
	ErrCorrupt = errors.New("seglog: corrupt data")
	// ErrChecksum reports a batch whose checksum does not match its bytes.
	// It wraps ErrCorrupt.
	ErrChecksum = fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	// ErrTooLarge reports a batch, or its decompressed records, over Limits.
	ErrTooLarge = errors.New("segment: batch too large")
	// ErrInvalid reports a batch that a caller asked to encode and that
	// cannot be (no records, a codec that does not exist, a record too big).
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

// Header is the decoded fixed header of a batch.
type Header struct {
	BaseOffset      int64
	Length          int32 // batchLength: bytes after the length field
	LeaderEpoch     int32
	Version         uint8
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

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch's last record.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the batch's compression codec.
func (h Header) Codec() Codec { return Codec(h.Attributes & codecMask) }

// HasProducer reports whether the batch carries idempotent producer fields.
func (h Header) HasProducer() bool { return h.ProducerID >= 0 }

// LastSequence is the producer sequence of the batch's last record.
func (h Header) LastSequence() int32 {
	return int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) & math.MaxInt32)
}

// ParseHeader decodes and checks the fixed header at the start of b. It
// checks every field it can without the rest of the batch (version,
// attributes, lengths against lim, counts) but not the checksum; b may be
// just the header.
func ParseHeader(b []byte, lim Limits) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorrupt, len(b), HeaderSize)
	}
	h := Header{
		BaseOffset:      int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:          int32(binary.BigEndian.Uint32(b[offBatchLength:])),
		LeaderEpoch:     int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Version:         b[offVersion],
		Checksum:        binary.BigEndian.Uint64(b[offChecksum:]),
		Attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastDelta:])),
		BaseTimestamp:   int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		RecordCount:     int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
	lim = lim.withDefaults()
	switch {
	case h.Version != Version:
		return h, fmt.Errorf("%w: unknown version %d", ErrCorrupt, h.Version)
	case h.Length < HeaderSize-lengthPrefix:
		return h, fmt.Errorf("%w: batch length %d shorter than the header", ErrCorrupt, h.Length)
	case int64(h.Length)+lengthPrefix > int64(lim.MaxBatchBytes):
		return h, fmt.Errorf("%w: %w: batch length %d over the limit of %d", ErrCorrupt, ErrTooLarge, h.Length, lim.MaxBatchBytes)
	case h.Attributes&reservedAttrib != 0:
		return h, fmt.Errorf("%w: reserved attribute bits set (%#x)", ErrCorrupt, h.Attributes)
	case h.Codec() > CodecS2:
		return h, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, h.Codec())
	case h.RecordCount < 1:
		return h, fmt.Errorf("%w: record count %d", ErrCorrupt, h.RecordCount)
	case h.LastOffsetDelta != h.RecordCount-1:
		return h, fmt.Errorf("%w: last offset delta %d with %d records", ErrCorrupt, h.LastOffsetDelta, h.RecordCount)
	case h.BaseOffset < 0 || h.BaseOffset > math.MaxInt64-int64(h.RecordCount):
		return h, fmt.Errorf("%w: base offset %d out of range", ErrCorrupt, h.BaseOffset)
	case h.MaxTimestamp < h.BaseTimestamp:
		return h, fmt.Errorf("%w: max timestamp %d before base timestamp %d", ErrCorrupt, h.MaxTimestamp, h.BaseTimestamp)
	case h.Codec() == CodecNone && int64(h.RecordCount) > int64(h.Length):
		// Every uncompressed record takes at least 6 bytes; one per byte
		// is a bound that is cheap and always true.
		return h, fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrCorrupt, h.RecordCount, h.Length)
	}
	return h, nil
}

// Verify checks that b is exactly one whole batch: a valid header, a length
// that matches len(b), and a checksum that matches the bytes. It does not
// decode the records (see ValidateRecords).
func Verify(b []byte, lim Limits) (Header, error) {
	h, err := ParseHeader(b, lim)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, fmt.Errorf("%w: batch length says %d bytes, have %d", ErrCorrupt, h.Size(), len(b))
	}
	if sum := xxhash.Sum64(b[checksumStart:]); sum != h.Checksum {
		return h, fmt.Errorf("%w: stored %#016x, computed %#016x", ErrChecksum, h.Checksum, sum)
	}
	return h, nil
}

// SetBaseOffset patches the base offset of an encoded batch in place. The
// checksum does not cover it, so the batch stays valid.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetLeaderEpoch patches the leader epoch of an encoded batch in place.
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
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
	// idempotent appends. A ProducerID <= 0 means none (written as -1).
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// LeaderEpoch is stamped in the header (the log may patch it).
	LeaderEpoch int32
	// BaseOffset is usually 0: the log assigns offsets when it appends.
	BaseOffset int64
}

// AppendBatch encodes recs as one batch and appends it to dst. Compression
// uses pooled encoders.
func AppendBatch(dst []byte, recs []Record, opts EncodeOptions) ([]byte, error) {
	if len(recs) == 0 {
		return dst, fmt.Errorf("%w: no records", ErrInvalid)
	}
	if opts.Codec > CodecS2 {
		return dst, fmt.Errorf("%w: unknown codec %d", ErrInvalid, opts.Codec)
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
	pid := opts.ProducerID
	if pid <= 0 {
		pid = NoProducerID
	}
	binary.BigEndian.PutUint64(h[offBaseOffset:], uint64(opts.BaseOffset))
	binary.BigEndian.PutUint32(h[offLeaderEpoch:], uint32(opts.LeaderEpoch))
	h[offVersion] = Version
	binary.BigEndian.PutUint16(h[offAttributes:], uint16(opts.Codec))
	binary.BigEndian.PutUint32(h[offLastDelta:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(h[offBaseTimestamp:], uint64(base))
	binary.BigEndian.PutUint64(h[offMaxTimestamp:], uint64(maxTS))
	binary.BigEndian.PutUint64(h[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(h[offProducerEpoch:], uint16(opts.ProducerEpoch))
	binary.BigEndian.PutUint32(h[offBaseSequence:], uint32(opts.BaseSequence))
	binary.BigEndian.PutUint32(h[offRecordCount:], uint32(len(recs)))

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
	binary.BigEndian.PutUint64(b[offChecksum:], xxhash.Sum64(b[checksumStart:]))
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

func recordBodyLen(r *Record, i int, base int64) int {
	n := 1 + varintLen(r.Timestamp-base) + uvarintLen(uint64(i)) + bytesLen(r.Key) + bytesLen(r.Value) + uvarintLen(uint64(len(r.Headers)))
	for j := range r.Headers {
		n += uvarintLen(uint64(len(r.Headers[j].Key))) + len(r.Headers[j].Key) + bytesLen(r.Headers[j].Value)
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

func appendRecords(dst []byte, recs []Record, base int64) []byte {
	total := 0
	for i := range recs {
		n := recordBodyLen(&recs[i], i, base)
		total += uvarintLen(uint64(n)) + n
	}
	if cap(dst)-len(dst) < total {
		nb := make([]byte, len(dst), len(dst)+total)
		copy(nb, dst)
		dst = nb
	}
	for i := range recs {
		r := &recs[i]
		dst = binary.AppendUvarint(dst, uint64(recordBodyLen(r, i, base)))
		dst = append(dst, 0)
		dst = binary.AppendVarint(dst, r.Timestamp-base)
		dst = binary.AppendUvarint(dst, uint64(i))
		dst = appendBytes(dst, r.Key)
		dst = appendBytes(dst, r.Value)
		dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
		for j := range r.Headers {
			dst = binary.AppendUvarint(dst, uint64(len(r.Headers[j].Key)))
			dst = append(dst, r.Headers[j].Key...)
			dst = appendBytes(dst, r.Headers[j].Value)
		}
	}
	return dst
}
