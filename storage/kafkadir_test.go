package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/internal/kafkatest"
	"github.com/seglog/seglog/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testdata/kafka/orders-0 is a Kafka partition directory built without a
// Kafka broker (see testdata/kafka.README.md): its batches encoded with
// franz-go's kmsg, its index files by Kafka's LogSegment rule
// (kafkatest.Indexes). SEGLOG_WRITE_KAFKA_FIXTURE=1 writes it again (see
// TestKafkaFixtureMatchesItsDescription).

const (
	kafkaFixtureDir      = "testdata/kafka/orders-0"
	kafkaFixtureInterval = 512 // the topic's index.interval.bytes
	kafkaFixtureTS       = 1700000000000
)

// kafkaFixtureRecord is the data record at offset n of the fixture.
func kafkaFixtureRecord(n int64) kafkatest.Record {
	r := kafkatest.Record{Timestamp: kafkaFixtureTS + 10*n,
		Value: []byte(fmt.Sprintf(`{"order":%d,"item":"widget-%d","qty":%d}`, n, n%13, 1+n%5))}
	if n%4 != 0 {
		r.Key = []byte(fmt.Sprintf("customer-%d", n%17))
	}
	if n%9 == 0 {
		r.Value = nil
	}
	if n%3 == 0 {
		r.Headers = []kmsg.Header{{Key: "trace", Value: []byte(fmt.Sprint(n * 7919))}, {Key: "null"}}
	}
	return r
}

// kafkaFixtureBatch is one batch of the fixture.
type kafkaFixtureBatch struct {
	spec    kafkatest.Batch
	control bool // transaction markers, which record readers skip
}

// kafkaFixtureSegments describes the fixture: two segments (leader epochs
// 0 and 1) of batches in every codec (snappy raw and xerial-framed), an
// idempotent producer, a committed and an aborted transaction with their
// markers, a compacted batch with offset gaps, and a batch older than the
// one before it.
func kafkaFixtureSegments() [][]kafkaFixtureBatch {
	n := int64(0) // the next offset; data record n is kafkaFixtureRecord(n)
	// recs returns records for the offsets n+d of deltas, n moving past
	// lastDelta.
	recs := func(deltas []int32, lastDelta int32, late bool) []kafkatest.Record {
		out := make([]kafkatest.Record, len(deltas))
		for i, d := range deltas {
			out[i] = kafkaFixtureRecord(n + int64(d))
			out[i].OffsetDelta = d
			if late {
				out[i].Timestamp -= 100000
			}
		}
		n += int64(lastDelta) + 1
		return out
	}
	dense := func(k int) []int32 {
		d := make([]int32, k)
		for i := range d {
			d[i] = int32(i)
		}
		return d
	}
	batch := func(attrs int16, records []kafkatest.Record) kafkaFixtureBatch {
		return kafkaFixtureBatch{spec: kafkatest.Batch{Attributes: attrs, LastOffsetDelta: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: records}}
	}
	data := func(attrs int16, k int) kafkaFixtureBatch { return batch(attrs, recs(dense(k), int32(k-1), false)) }
	seq := int32(0)
	idempotent := func(attrs int16, k int) kafkaFixtureBatch {
		b := data(attrs, k)
		b.spec.ProducerID, b.spec.ProducerEpoch, b.spec.BaseSequence = 2000, 0, seq
		seq += int32(k)
		return b
	}
	txn := func(pid int64, k int) kafkaFixtureBatch {
		b := data(kafkatest.AttrTransactional, k)
		b.spec.ProducerID, b.spec.ProducerEpoch, b.spec.BaseSequence = pid, 0, 0
		return b
	}
	marker := func(pid int64, commit bool) kafkaFixtureBatch {
		r := kafkatest.ControlRecord(commit, 3, kafkaFixtureTS+10*n)
		n++
		return kafkaFixtureBatch{control: true, spec: kafkatest.Batch{Attributes: kafkatest.AttrTransactional | kafkatest.AttrControl,
			LastOffsetDelta: -1, ProducerID: pid, ProducerEpoch: 0, BaseSequence: -1, Records: []kafkatest.Record{r}}}
	}
	xerial := func(k int) kafkaFixtureBatch {
		b := data(kafkatest.CodecSnappy, k)
		b.spec.XerialSnappy = true
		return b
	}
	compacted := func() kafkaFixtureBatch {
		// Offsets 0..6 of the batch, of which a compaction kept 0, 3, 4.
		b := batch(kafkatest.CodecGzip, recs([]int32{0, 3, 4}, 6, false))
		b.spec.LastOffsetDelta = 6
		return b
	}
	var seg0 []kafkaFixtureBatch
	seg0 = append(seg0, data(kafkatest.CodecNone, 3), data(kafkatest.CodecGzip, 5), data(kafkatest.CodecSnappy, 4))
	seg0 = append(seg0, xerial(4), data(kafkatest.CodecLZ4, 4), data(kafkatest.CodecZstd, 4))
	seg0 = append(seg0, txn(1000, 3))
	seg0 = append(seg0, marker(1000, true))
	seg0 = append(seg0, compacted())
	seg0 = append(seg0, idempotent(kafkatest.CodecNone, 5))
	for i := 0; i < 8; i++ {
		seg0 = append(seg0, data(kafkatest.Codecs[i%len(kafkatest.Codecs)], 6))
	}
	var seg1 []kafkaFixtureBatch
	seg1 = append(seg1, idempotent(kafkatest.CodecLZ4, 4))
	seg1 = append(seg1, txn(1001, 2))
	seg1 = append(seg1, marker(1001, false))
	seg1 = append(seg1, data(kafkatest.CodecZstd, 5))
	seg1 = append(seg1, batch(kafkatest.CodecNone, recs(dense(3), 2, true))) // older than the batch before
	for i := 0; i < 4; i++ {
		seg1 = append(seg1, data(kafkatest.Codecs[(i+2)%len(kafkatest.Codecs)], 5))
	}
	for i := range seg1 {
		seg1[i].spec.LeaderEpoch = 1
	}
	return [][]kafkaFixtureBatch{seg0, seg1}
}

// kafkaFixtureFiles builds the fixture's files: name -> bytes.
func kafkaFixtureFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	next := int64(0)
	var epochBase [2]int64
	for s, batches := range kafkaFixtureSegments() {
		base := next
		epochBase[s] = base
		var log []byte
		for _, fb := range batches {
			b, err := kafkatest.Build(fb.spec)
			require.NoError(t, err)
			binary.BigEndian.PutUint64(b, uint64(next)) // baseOffset: outside the CRC
			next += int64(binary.BigEndian.Uint32(b[23:])) + 1
			log = append(log, b...)
		}
		idx, tidx, err := kafkatest.Indexes(log, base, kafkaFixtureInterval)
		require.NoError(t, err)
		files[segment.FileName(base, segment.LogSuffix)] = log
		files[segment.FileName(base, segment.IndexSuffix)] = idx
		files[segment.FileName(base, segment.TimeIndexSuffix)] = tidx
	}
	// Kafka's own files, in Kafka's formats; seglog ignores them.
	files["leader-epoch-checkpoint"] = []byte(fmt.Sprintf("0\n2\n0 0\n1 %d\n", epochBase[1]))
	files["partition.metadata"] = []byte("version: 0\ntopic_id: 3q2-7wAAQAOAAAAAAAAAAQ\n")
	return files
}

// kafkaFixtureData returns the data records a record reader returns from
// the fixture, with their offsets, and the fixture's end offset.
func kafkaFixtureData(t *testing.T) ([]Record, int64) {
	t.Helper()
	var out []Record
	next := int64(0)
	for _, batches := range kafkaFixtureSegments() {
		for _, fb := range batches {
			last := fb.spec.LastOffsetDelta
			if last < 0 {
				last = fb.spec.Records[len(fb.spec.Records)-1].OffsetDelta
			}
			if !fb.control {
				for _, r := range fb.spec.Records {
					rec := Record{Offset: next + int64(r.OffsetDelta), Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
					for _, h := range r.Headers {
						rec.Headers = append(rec.Headers, segment.RecordHeader{Key: []byte(h.Key), Value: h.Value})
					}
					out = append(out, rec)
				}
			}
			next += int64(last) + 1
		}
	}
	return out, next
}

// writeKafkaFixture writes the fixture's files into testdata/kafka.
func writeKafkaFixture(t *testing.T) {
	require.NoError(t, os.RemoveAll(kafkaFixtureDir))
	require.NoError(t, os.MkdirAll(kafkaFixtureDir, 0o755))
	for name, b := range kafkaFixtureFiles(t) {
		require.NoError(t, os.WriteFile(filepath.Join(kafkaFixtureDir, name), b, 0o644))
	}
}

// The committed fixture is what its description says: its batches decode
// (with kmsg, CRCs valid) to the described records, and its index files
// are what Kafka's rule gives for its .log files. (Its compressed bytes
// may differ from what today's libraries would write.)
//
// SEGLOG_WRITE_KAFKA_FIXTURE=1 writes the fixture again first.
func TestKafkaFixtureMatchesItsDescription(t *testing.T) {
	if os.Getenv("SEGLOG_WRITE_KAFKA_FIXTURE") != "" {
		writeKafkaFixture(t)
	}
	want, _ := kafkaFixtureData(t)
	var got []Record
	for _, base := range kafkaFixtureBases(t) {
		log, err := os.ReadFile(filepath.Join(kafkaFixtureDir, segment.FileName(base, segment.LogSuffix)))
		require.NoError(t, err)
		for _, d := range kafkaBatches(t, log) {
			if d.Batch.Attributes&kafkatest.AttrControl != 0 {
				continue
			}
			for _, r := range d.Records {
				rec := Record{Offset: d.Batch.FirstOffset + int64(r.OffsetDelta), Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
				for _, h := range r.Headers {
					rec.Headers = append(rec.Headers, segment.RecordHeader{Key: []byte(h.Key), Value: h.Value})
				}
				got = append(got, rec)
			}
		}
		idx, tidx, err := kafkatest.Indexes(log, base, kafkaFixtureInterval)
		require.NoError(t, err)
		for suffix, b := range map[string][]byte{segment.IndexSuffix: idx, segment.TimeIndexSuffix: tidx} {
			committed, err := os.ReadFile(filepath.Join(kafkaFixtureDir, segment.FileName(base, suffix)))
			require.NoError(t, err)
			assert.Equal(t, b, committed, segment.FileName(base, suffix))
		}
	}
	assert.Equal(t, want, got)
}

// kafkaFixtureBases returns the base offsets of the fixture's segments.
func kafkaFixtureBases(t *testing.T) []int64 {
	t.Helper()
	entries, err := os.ReadDir(kafkaFixtureDir)
	require.NoError(t, err)
	var bases []int64
	for _, e := range entries {
		var base int64
		if _, err := fmt.Sscanf(e.Name(), "%020d.log", &base); err == nil && filepath.Ext(e.Name()) == segment.LogSuffix {
			bases = append(bases, base)
		}
	}
	require.Len(t, bases, 2)
	return bases
}

// kafkaBatches splits a .log into its batches, each decoded by kmsg.
func kafkaBatches(t *testing.T, log []byte) []kafkatest.Decoded {
	t.Helper()
	var out []kafkatest.Decoded
	for pos := 0; pos < len(log); {
		size := 12 + int(binary.BigEndian.Uint32(log[pos+8:]))
		d, err := kafkatest.Decode(log[pos : pos+size])
		require.NoError(t, err, "batch at %d", pos)
		out = append(out, d)
		pos += size
	}
	return out
}

// A Kafka partition directory opens read-only: every data record reads,
// control records are skipped by record readers and returned by batch
// reads, and Kafka's own files are left alone.
func TestKafkaDirectoryOpensReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orders-0")
	copyDir(t, kafkaFixtureDir, dir)
	before := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		before[e.Name()] = b
	}
	want, end := kafkaFixtureData(t)

	l, err := Open(dir, Options{ReadOnly: true})
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, int64(0), l.StartOffset())
	assert.Equal(t, end, l.EndOffset())

	assert.Equal(t, want, readRecords(t, l))

	// ReadRecord of each data record, and of a control record's offset
	// (the next data record).
	var buf []byte
	for i, w := range want {
		rec, b, err := l.ReadRecord(buf, w.Offset)
		require.NoError(t, err)
		assert.Equal(t, w.Offset, rec.Offset)
		assert.Equal(t, w.Value, rec.Value)
		buf = b
		if i > 0 && want[i-1].Offset+1 < w.Offset {
			// A gap: a control record or a compacted record.
			rec, _, err := l.ReadRecord(nil, want[i-1].Offset+1)
			require.NoError(t, err)
			assert.Equal(t, w.Offset, rec.Offset, "the next data record")
		}
	}

	// Batch reads return control batches too.
	controls := 0
	for off := int64(0); off < end; {
		b, err := l.Read(off, 1<<20)
		require.NoError(t, err)
		sc := segment.ScanBuffer(b, segment.ScanOptions{Verify: true})
		for sc.Next() {
			if sc.Header().IsControl() {
				controls++
			}
			off = sc.Header().NextOffset()
		}
		require.NoError(t, sc.Err())
	}
	assert.Equal(t, 2, controls)

	// Time lookups use Kafka's time index.
	for _, w := range want[:20] {
		off, err := l.OffsetForTime(w.Timestamp)
		require.NoError(t, err)
		assert.LessOrEqual(t, off, w.Offset)
	}
	require.NoError(t, l.Close())
	for name, b := range before {
		after, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, b, after, "read-only open changed %s", name)
	}
}

// readRecords reads every record of l with a Reader, copied.
func readRecords(t *testing.T, l *Log) []Record {
	t.Helper()
	r := l.NewReader(l.StartOffset())
	var got []Record
	for r.Next() {
		rec := r.Record()
		got = append(got, Record{Offset: rec.Offset, Timestamp: rec.Timestamp, Key: bytes.Clone(rec.Key), Value: bytes.Clone(rec.Value), Headers: cloneHeaders(rec.Headers)})
	}
	require.NoError(t, r.Err())
	return got
}

func cloneHeaders(hs []segment.RecordHeader) []segment.RecordHeader {
	var out []segment.RecordHeader
	for _, h := range hs {
		out = append(out, segment.RecordHeader{Key: bytes.Clone(h.Key), Value: bytes.Clone(h.Value)})
	}
	return out
}

// Given the batches of the Kafka fixture, seglog writes the .log, .index
// and .timeindex that Kafka's LogSegment writes: the batches byte for byte
// and the index entries by the same rule.
func TestSeglogWritesKafkasSegmentFiles(t *testing.T) {
	files := kafkaFixtureFiles(t)
	seg0 := files[segment.FileName(0, segment.LogSuffix)]
	dir := t.TempDir()
	l, err := Open(dir, Options{IndexIntervalBytes: kafkaFixtureInterval, SegmentBytes: int64(len(seg0))})
	require.NoError(t, err)
	var bases []int64
	for off := int64(0); ; {
		log, ok := files[segment.FileName(off, segment.LogSuffix)]
		if !ok {
			break
		}
		bases = append(bases, off)
		for _, d := range kafkaBatches(t, log) {
			b := d.Batch.AppendTo(nil)
			binary.BigEndian.PutUint64(b, 0) // as a client sends it
			res, err := l.AppendBatch(b)
			require.NoError(t, err)
			require.Equal(t, d.Batch.FirstOffset, res.FirstOffset)
			off = res.LastOffset + 1
		}
	}
	require.NoError(t, l.Close())
	same := func(when string) {
		for _, base := range bases {
			for _, suffix := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
				name := segment.FileName(base, suffix)
				got, err := os.ReadFile(filepath.Join(dir, name))
				require.NoError(t, err)
				assert.Equal(t, files[name], got, "%s %s", name, when)
			}
		}
	}
	same("after appends and a clean close")

	// Recovery rebuilds the indexes by the same rule.
	require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))
	require.NoError(t, os.Remove(filepath.Join(dir, recoveryPointFile)))
	for _, base := range bases {
		for _, suffix := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
			require.NoError(t, os.Remove(filepath.Join(dir, segment.FileName(base, suffix))))
		}
	}
	l, err = Open(dir, Options{IndexIntervalBytes: kafkaFixtureInterval, SegmentBytes: int64(len(seg0))})
	require.NoError(t, err)
	want, _ := kafkaFixtureData(t)
	assert.Equal(t, want, readRecords(t, l), "the records read back")
	require.NoError(t, l.Close())
	same("after recovery")
}
