package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

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
