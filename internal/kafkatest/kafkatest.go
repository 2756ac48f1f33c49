// Package kafkatest builds and reads Kafka record batches with an
// implementation independent of seglog's: franz-go's kmsg for the batch
// and record structures, the compression libraries called directly, and
// the CRC computed here. Tests use it to check seglog's batch format
// against Kafka's, in both directions. Nothing outside tests imports it.
package kafkatest

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's codec numbers (bits 0-2 of a batch's attributes) and attribute
// bits.
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4

	AttrLogAppendTime = 0x08
	AttrTransactional = 0x10
	AttrControl       = 0x20
)

// Codecs are Kafka's codecs, by number.
var Codecs = []int16{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC is the CRC-32C that a v2 batch's header holds: of its bytes from the
// attributes (byte 21) to the end.
func CRC(batch []byte) uint32 { return crc32.Checksum(batch[21:], castagnoli) }

// Record is a record to build into a batch, or one decoded from a batch.
// A nil Key or Value is null; a header's nil Value is null.
type Record struct {
	OffsetDelta int32
	Timestamp   int64
	Key, Value  []byte
	Headers     []kmsg.Header
}

// Batch describes a batch to build.
type Batch struct {
	Attributes      int16 // codec, transactional, control
	LastOffsetDelta int32 // -1: the last record's delta
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	LeaderEpoch     int32
	// XerialSnappy frames a snappy records section as Kafka's Java
	// client does (xerial), not as a raw block.
	XerialSnappy bool
	Records      []Record
}

// Build encodes b with kmsg: records, compressed with the codec in its
// attributes, in a RecordBatch whose length and CRC are computed here.
func Build(b Batch) ([]byte, error) {
	if len(b.Records) == 0 {
		return nil, errors.New("kafkatest: no records")
	}
	base := b.Records[0].Timestamp
	maxTS := base
	var raw []byte
	for _, r := range b.Records {
		maxTS = max(maxTS, r.Timestamp)
		kr := kmsg.Record{Attributes: 0, TimestampDelta64: r.Timestamp - base, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value, Headers: r.Headers}
		body := kr.AppendTo(nil)[1:] // without the zero Length kmsg wrote
		kr.Length = int32(len(body))
		raw = append(raw, kr.AppendTo(nil)...)
	}
	section, err := Compress(b.Attributes&7, raw, b.XerialSnappy)
	if err != nil {
		return nil, err
	}
	last := b.LastOffsetDelta
	if last < 0 {
		last = b.Records[len(b.Records)-1].OffsetDelta
	}
	kb := kmsg.RecordBatch{
		PartitionLeaderEpoch: b.LeaderEpoch,
		Magic:                2,
		Attributes:           b.Attributes,
		LastOffsetDelta:      last,
		FirstTimestamp:       base,
		MaxTimestamp:         maxTS,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.ProducerEpoch,
		FirstSequence:        b.BaseSequence,
		NumRecords:           int32(len(b.Records)),
		Records:              section,
	}
	out := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], CRC(out))
	return out, nil
}

// Compress compresses a records section with Kafka's codec number codec,
// each codec's library called directly.
func Compress(codec int16, raw []byte, xerial bool) ([]byte, error) {
	var buf bytes.Buffer
	switch codec {
	case CodecNone:
		return raw, nil
	case CodecGzip:
		return writeAll(&buf, gzip.NewWriter(&buf), raw)
	case CodecSnappy:
		if !xerial {
			return snappy.Encode(nil, raw), nil
		}
		// xerial: magic, version 1, compatible version 1, then chunks of
		// a length and a raw block (8 KiB chunks here).
		out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
		for len(raw) > 0 {
			n := min(len(raw), 8<<10)
			block := snappy.Encode(nil, raw[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
			out = append(out, block...)
			raw = raw[n:]
		}
		return out, nil
	case CodecLZ4:
		return writeAll(&buf, lz4.NewWriter(&buf), raw)
	case CodecZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(raw, nil), nil
	}
	return nil, fmt.Errorf("kafkatest: codec %d", codec)
}

// writeAll writes raw through w, a compressor writing into buf, closes it
// and returns buf's bytes.
func writeAll(buf *bytes.Buffer, w io.WriteCloser, raw []byte) ([]byte, error) {
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decompress undoes Compress (raw or xerial snappy).
func Decompress(codec int16, section []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return section, nil
	case CodecGzip:
		r, err := gzip.NewReader(bytes.NewReader(section))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case CodecSnappy:
		if !bytes.HasPrefix(section, []byte("\x82SNAPPY\x00")) {
			return snappy.Decode(nil, section)
		}
		var out []byte
		for p := 16; p < len(section); {
			n := int(binary.BigEndian.Uint32(section[p:]))
			block, err := snappy.Decode(nil, section[p+4:p+4+n])
			if err != nil {
				return nil, err
			}
			out = append(out, block...)
			p += 4 + n
		}
		return out, nil
	case CodecLZ4:
		return io.ReadAll(lz4.NewReader(bytes.NewReader(section)))
	case CodecZstd:
		d, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(section, nil)
	}
	return nil, fmt.Errorf("kafkatest: codec %d", codec)
}

// Decoded is a batch decoded by kmsg, with its records.
type Decoded struct {
	Batch   kmsg.RecordBatch
	Records []Record
}

// Decode decodes one whole v2 batch with kmsg: it checks its length and
// CRC, decompresses its records and decodes each.
func Decode(b []byte) (Decoded, error) {
	var d Decoded
	if err := d.Batch.ReadFrom(b); err != nil {
		return d, fmt.Errorf("kmsg: %w", err)
	}
	kb := &d.Batch
	switch {
	case kb.Magic != 2:
		return d, fmt.Errorf("magic %d", kb.Magic)
	case int(kb.Length) != len(b)-12:
		return d, fmt.Errorf("length %d for %d bytes", kb.Length, len(b))
	case uint32(kb.CRC) != CRC(b):
		return d, fmt.Errorf("CRC %#x, computed %#x", uint32(kb.CRC), CRC(b))
	}
	raw, err := Decompress(kb.Attributes&7, kb.Records)
	if err != nil {
		return d, err
	}
	for i := int32(0); i < kb.NumRecords; i++ {
		length, n := binary.Varint(raw)
		if n <= 0 || length < 0 || int(length) > len(raw)-n {
			return d, fmt.Errorf("record %d: length", i)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(raw[:n+int(length)]); err != nil {
			return d, fmt.Errorf("record %d: %w", i, err)
		}
		raw = raw[n+int(length):]
		d.Records = append(d.Records, Record{OffsetDelta: kr.OffsetDelta, Timestamp: kb.FirstTimestamp + kr.TimestampDelta64, Key: kr.Key, Value: kr.Value, Headers: kr.Headers})
	}
	if len(raw) != 0 {
		return d, fmt.Errorf("%d bytes after the last record", len(raw))
	}
	return d, nil
}

// ControlRecord is a transaction marker: Kafka's control record key
// (version 0, type 0 abort or 1 commit) and value (version 0, the
// coordinator epoch).
func ControlRecord(commit bool, coordinatorEpoch int32, ts int64) Record {
	typ := byte(0)
	if commit {
		typ = 1
	}
	value := binary.BigEndian.AppendUint32([]byte{0, 0}, uint32(coordinatorEpoch))
	return Record{Timestamp: ts, Key: []byte{0, 0, 0, typ}, Value: value}
}

// Indexes returns the .index and .timeindex that Kafka's LogSegment writes
// for the segment whose .log holds log, with base offset base, written
// with index.interval.bytes interval and then closed: for each batch, in
// order, the largest timestamp so far (with the last offset of its batch)
// is noted; when more than interval bytes of batches lie between the last
// entry (or the start) and the batch, an offset entry (the batch's last
// offset, its position) and a time entry (the largest timestamp so far,
// if larger than the last time entry's, or than -1) are added; closing
// adds a last time entry the same way. Both files are trimmed to their
// entries, as Kafka leaves them after a clean shutdown. It reads the
// batch headers with kmsg.
func Indexes(log []byte, base int64, interval int) (offsetIndex, timeIndex []byte, err error) {
	since, maxTS, maxTSOff := 0, int64(-1), int64(-1)
	lastTS := int64(-1)
	timeEntry := func() {
		if maxTSOff >= 0 && maxTS > lastTS {
			timeIndex = binary.BigEndian.AppendUint64(timeIndex, uint64(maxTS))
			timeIndex = binary.BigEndian.AppendUint32(timeIndex, uint32(maxTSOff-base))
			lastTS = maxTS
		}
	}
	for pos := 0; pos < len(log); {
		if len(log)-pos < 12 {
			return nil, nil, fmt.Errorf("kafkatest: %d bytes left at %d", len(log)-pos, pos)
		}
		size := 12 + int(binary.BigEndian.Uint32(log[pos+8:]))
		if size > len(log)-pos {
			return nil, nil, fmt.Errorf("kafkatest: batch at %d runs past the end", pos)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(log[pos : pos+size]); err != nil {
			return nil, nil, fmt.Errorf("kafkatest: batch at %d: %w", pos, err)
		}
		last := kb.FirstOffset + int64(kb.LastOffsetDelta)
		if kb.MaxTimestamp > maxTS {
			maxTS, maxTSOff = kb.MaxTimestamp, last
		}
		if since > interval {
			offsetIndex = binary.BigEndian.AppendUint32(offsetIndex, uint32(last-base))
			offsetIndex = binary.BigEndian.AppendUint32(offsetIndex, uint32(pos))
			timeEntry()
			since = 0
		}
		since += size
		pos += size
	}
	timeEntry()
	return offsetIndex, timeIndex, nil
}

// Named is a batch description with a name for a subtest.
type Named struct {
	Name  string
	Batch Batch
}

// ClientBatches are batches a Kafka client may send, with random records
// from rng (null and empty keys and values, headers with null values,
// timestamps out of order): every codec, snappy raw and xerial-framed,
// idempotent, transactional, control (COMMIT and ABORT) batches, and
// offset deltas with gaps (a compacted batch).
func ClientBatches(rng *rand.Rand) []Named {
	plain := func(attrs int16, recs []Record) Batch {
		return Batch{Attributes: attrs, LastOffsetDelta: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: recs}
	}
	var out []Named
	for _, codec := range Codecs {
		out = append(out, Named{fmt.Sprintf("codec %d", codec), plain(codec, RandomRecords(rng, 1+rng.IntN(50)))})
	}
	xerial := plain(CodecSnappy, RandomRecords(rng, 300))
	xerial.XerialSnappy = true
	idem := plain(CodecGzip, RandomRecords(rng, 5))
	idem.ProducerID, idem.ProducerEpoch, idem.BaseSequence = 11, 0, 0
	txn := plain(AttrTransactional|CodecLZ4, RandomRecords(rng, 4))
	txn.ProducerID, txn.ProducerEpoch, txn.BaseSequence = 9, 1, 0
	marker := func(commit bool) Batch {
		b := plain(AttrTransactional|AttrControl, []Record{ControlRecord(commit, 4, 1700000000000)})
		b.ProducerID, b.ProducerEpoch = 9, 1
		return b
	}
	gaps := plain(CodecZstd, RandomRecords(rng, 4))
	for i, d := range []int32{0, 2, 3, 9} {
		gaps.Records[i].OffsetDelta = d
	}
	gaps.LastOffsetDelta = 12
	return append(out,
		Named{"snappy xerial", xerial}, Named{"idempotent", idem}, Named{"transactional", txn},
		Named{"control commit", marker(true)}, Named{"control abort", marker(false)},
		Named{"offset deltas with gaps", gaps})
}

// RandomRecords returns n records with dense offset deltas.
func RandomRecords(rng *rand.Rand, n int) []Record {
	bytesOf := func(k int) []byte {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{OffsetDelta: int32(i), Timestamp: 1700000000000 + rng.Int64N(100000) - 50000}
		if rng.IntN(4) > 0 {
			recs[i].Key = bytesOf(rng.IntN(20))
		}
		if rng.IntN(8) > 0 {
			recs[i].Value = bytesOf(rng.IntN(500))
		}
		for j := rng.IntN(3); j > 0; j-- {
			h := kmsg.Header{Key: string(bytesOf(rng.IntN(6)))}
			if rng.IntN(3) > 0 {
				h.Value = bytesOf(rng.IntN(6))
			}
			recs[i].Headers = append(recs[i].Headers, h)
		}
	}
	return recs
}
