package segment

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Segment files read by tools (seglog dump): a walk over every batch of a
// .log that goes on past a bad checksum, an index file read whole beside
// the writer that may be trimming it, and the lines Kafka's
// kafka-dump-log.sh prints for a batch and a record.

// Walk walks the batches of a .log read through an io.ReaderAt,
// read-only, with the Scanner, and checks each whole batch with Verify.
// Memory is bounded by the largest batch DefaultLimits allow.
//
// Damage that stops the walk (a header that does not parse, a batch that
// runs past the end of the file) is Err, a *CorruptError with the
// position. A batch whose header is sound but whose checksum is not is
// returned with VerifyErr set, and the walk goes on: its length field
// still frames the next batch.
type Walk struct {
	sc      *Scanner
	err     error // reading the current batch failed
	errAt   int64 // where that batch (or the one at stopAt) starts
	stopAt  int64 // StopAt's offset; -1: none
	stopped bool  // the walk reached stopAt

	// Pos is where the current batch starts.
	Pos int64
	// Header is the current batch's header.
	Header Header
	// Batch is the current batch, valid until the next call to Next.
	Batch []byte
	// VerifyErr is what Verify found wrong with the current batch.
	VerifyErr error
}

// NewWalk walks the batches of the .log at path, size bytes of r. For a
// file named like a segment, it also checks that offsets follow on from
// the base offset in the name, as recovery's scan does: a batch that does
// not is damage that stops the walk.
func NewWalk(r io.ReaderAt, size int64, path string) *Walk {
	base, named := BaseOf(path)
	return &Walk{sc: NewScanner(r, size, ScanOptions{File: path, Window: 256 << 10, CheckOffsets: named, FirstOffset: base}), stopAt: -1}
}

// StopAt makes the walk end before the first batch at or past offset end,
// and not count damage that stops it there or past it (the offset after
// the last batch returned is at least end) as an error: what a reader
// beside a writer does with the writer's end (the last whole batch it
// can see), so that the tail being written is not judged. Stopped then
// says the walk reached end. Call it before the first Next.
func (w *Walk) StopAt(end int64) { w.stopAt = end }

// Stopped reports whether the walk ended at StopAt's offset.
func (w *Walk) Stopped() bool { return w.stopped }

// Next advances to the next batch; false at the end of the file or at
// damage (see Err), or at StopAt's offset (see Stopped).
func (w *Walk) Next() bool {
	if w.stopped || w.err != nil {
		return false
	}
	if !w.sc.Next() {
		w.stopped = w.stopAt >= 0 && w.sc.Err() != nil && w.NextOffset() >= w.stopAt
		return false
	}
	if w.stopAt >= 0 && w.sc.Header().BaseOffset >= w.stopAt {
		w.stopped, w.errAt = true, w.sc.Pos()
		return false
	}
	b, err := w.sc.Batch()
	if err != nil {
		w.err, w.errAt = err, w.sc.Pos()
		w.stopped = w.stopAt >= 0 && w.NextOffset() >= w.stopAt
		return false
	}
	w.Pos, w.Header, w.Batch = w.sc.Pos(), w.sc.Header(), b
	_, w.VerifyErr = Verify(b, DefaultLimits)
	return true
}

// Err returns the damage or I/O error that stopped the walk (nil when
// it Stopped).
func (w *Walk) Err() error {
	if w.stopped {
		return nil
	}
	if w.err != nil {
		return w.err
	}
	return w.sc.Err()
}

// End returns the position after the last batch returned: where the walk
// stopped.
func (w *Walk) End() int64 {
	if w.err != nil || w.stopped && w.sc.Err() == nil {
		return w.errAt
	}
	return w.sc.End()
}

// NextOffset returns the offset after the last batch returned.
func (w *Walk) NextOffset() int64 { return w.sc.NextOffset() }

// BaseOf returns the base offset in the name of a segment file (.log,
// .index or .timeindex) at path; ok is false for another name.
func BaseOf(path string) (base int64, ok bool) {
	name := filepath.Base(path)
	for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		if strings.HasSuffix(name, suf) {
			return ParseFileName(name, suf)
		}
	}
	return 0, false
}

// maxIndexFileBytes bounds what ReadIndexFile reads: far above any
// configured MaxIndexBytes, far below what would hurt.
const maxIndexFileBytes = 1 << 30

// ReadIndexFile reads the .index or .timeindex at path whole, read-only,
// and decodes it (DecodeOffsetIndex, DecodeTimeIndex) with the base
// offset in its name (0 when the name is not a segment's). It reads to
// the end of the file rather than to the size it had when opened: a
// writer trims an active index to its used entries when it rolls or
// closes, maybe meanwhile. Errors opening the file are *os.PathError;
// the others name the path.
func ReadIndexFile(path string) (IndexContent, error) {
	f, err := os.Open(path)
	if err != nil {
		return IndexContent{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return IndexContent{}, err
	}
	if !fi.Mode().IsRegular() {
		return IndexContent{}, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Size() > maxIndexFileBytes {
		return IndexContent{}, fmt.Errorf("%s: %d bytes, more than the %d this tool reads", path, fi.Size(), maxIndexFileBytes)
	}
	b := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := b.ReadFrom(io.LimitReader(f, maxIndexFileBytes+1)); err != nil {
		return IndexContent{}, fmt.Errorf("%s: read: %w", path, err)
	}
	if b.Len() > maxIndexFileBytes {
		return IndexContent{}, fmt.Errorf("%s: more than the %d bytes this tool reads", path, maxIndexFileBytes)
	}
	// A writer that trimmed the file while it was read leaves bytes read
	// past its new end: keep what the file holds now.
	if fi, err := f.Stat(); err == nil && fi.Size() < int64(b.Len()) {
		b.Truncate(int(fi.Size()))
	}
	base, _ := BaseOf(path)
	if strings.HasSuffix(path, TimeIndexSuffix) {
		return DecodeTimeIndex(b.Bytes(), base), nil
	}
	return DecodeOffsetIndex(b.Bytes(), base), nil
}

// BatchJSON is a batch header in JSON, the object seglog dump --json
// prints for a batch at byte Position of its .log; Valid says whether its
// checksum holds.
type BatchJSON struct {
	BaseOffset      int64  `json:"base_offset"`
	LastOffset      int64  `json:"last_offset"`
	Count           int32  `json:"count"`
	Position        int64  `json:"position"`
	Size            int    `json:"size"`
	Magic           uint8  `json:"magic"`
	Codec           string `json:"codec"`
	TimestampType   string `json:"timestamp_type"`
	BaseTimestamp   int64  `json:"base_timestamp"`
	MaxTimestamp    int64  `json:"max_timestamp"`
	ProducerID      int64  `json:"producer_id"`
	ProducerEpoch   int16  `json:"producer_epoch"`
	BaseSequence    int32  `json:"base_sequence"`
	LastSequence    int32  `json:"last_sequence"`
	LeaderEpoch     int32  `json:"leader_epoch"`
	IsTransactional bool   `json:"is_transactional"`
	IsControl       bool   `json:"is_control"`
	Checksum        string `json:"checksum"`
	Valid           bool   `json:"valid"`
}

// NewBatchJSON returns the JSON form of the batch header h at byte pos of
// its .log: the fields KafkaBatchLine prints.
func NewBatchJSON(h Header, pos int64, valid bool) BatchJSON {
	return BatchJSON{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Count: h.RecordCount, Position: pos, Size: h.Size(),
		Magic: h.Version, Codec: h.Codec().String(), TimestampType: h.TimestampType().String(), BaseTimestamp: h.BaseTimestamp,
		MaxTimestamp: h.MaxTimestamp, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		LastSequence: h.KafkaLastSequence(), LeaderEpoch: h.LeaderEpoch, IsTransactional: h.IsTransactional(),
		IsControl: h.IsControl(), Checksum: fmt.Sprintf("%#x", h.Checksum), Valid: valid}
}

// KafkaBatchLine is the line kafka-dump-log.sh prints for a v2 batch at
// byte pos of its .log (DumpLogSegments' batch level); valid says whether
// its checksum holds.
func KafkaBatchLine(h Header, pos int64, valid bool) string {
	horizon := "OptionalLong.empty"
	if h.HasDeleteHorizon() {
		horizon = fmt.Sprintf("OptionalLong[%d]", h.BaseTimestamp)
	}
	return fmt.Sprintf("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t",
		h.BaseOffset, h.LastOffset(), h.RecordCount, h.BaseSequence, h.KafkaLastSequence(), h.ProducerID, h.ProducerEpoch,
		h.LeaderEpoch, h.IsTransactional(), h.IsControl(), horizon, pos, h.TimestampType(), h.MaxTimestamp, h.Size(),
		h.Version, h.Codec(), h.Checksum, valid)
}

// KafkaRecordLine is the line kafka-dump-log.sh --print-data-log prints
// for record r of the batch h: a control record's marker, or its key and
// payload, as text when they are printable UTF-8 (else Go-quoted, so
// that binary bytes and line breaks are escaped), cut at maxValue bytes
// (0: never).
func KafkaRecordLine(h Header, r *Record, maxValue int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [", r.Offset, h.TimestampType(), r.Timestamp,
		nullableLen(r.Key), nullableLen(r.Value), h.SequenceOf(r.Offset))
	for i, hd := range r.Headers {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(dumpText(hd.Key, maxValue))
	}
	sb.WriteByte(']')
	if h.IsControl() {
		c, err := ParseControlRecord(r)
		switch {
		case err != nil:
			fmt.Fprintf(&sb, " controlType: %v", err)
		case c.IsTxnMarker():
			fmt.Fprintf(&sb, " endTxnMarker: %s coordinatorEpoch: %d", c.Type, c.CoordinatorEpoch)
		default:
			fmt.Fprintf(&sb, " controlType: %s(%d)", c.Type, int16(c.Type))
		}
		return sb.String()
	}
	if r.Key != nil {
		sb.WriteString(" key: " + dumpText(r.Key, maxValue))
	}
	if r.Value != nil {
		sb.WriteString(" payload: " + dumpText(r.Value, maxValue))
	}
	return sb.String()
}

// nullableLen is Kafka's size of a nullable field: -1 for null.
func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// dumpText prints b as text when it is printable UTF-8 (what Kafka's
// dump tool prints, as a string), else Go-quoted; it cuts b at max bytes
// (0: no cut), saying so.
func dumpText(b []byte, max int) string {
	cut := ""
	if max > 0 && len(b) > max {
		b, cut = b[:max], fmt.Sprintf("...(%d bytes)", len(b))
	}
	s := string(b)
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		s = strconv.Quote(s)
	}
	return s + cut
}
