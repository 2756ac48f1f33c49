package segment

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/internal/kafkatest"
)

// FuzzDecodeBatch feeds arbitrary bytes to the batch decoders: as read
// from disk (ValidateRecords, RecordIter: v2 and version 1) and as given
// by a client (CheckBatch). They must never panic or allocate past the
// limits; a disk error always wraps ErrCorrupt, a client's never does; a
// batch a client may append also reads from disk; and what decodes
// re-encodes to a batch with the same records.
func FuzzDecodeBatch(f *testing.F) {
	for _, c := range allCodecs {
		f.Add(smallBatch(f, c))
	}
	for _, spec := range kafkatest.ClientBatches(rand.New(rand.NewPCG(3, 4))) {
		if len(spec.Batch.Records) > 20 {
			spec.Batch.Records = spec.Batch.Records[:20]
		}
		b, err := kafkatest.Build(spec.Batch)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Version-1 batches, as an earlier seglog wrote them.
	if v1, err := os.ReadFile(filepath.Join("..", "storage", "testdata", "v1log", FileName(0, LogSuffix))); err == nil {
		sc := ScanBuffer(v1, ScanOptions{})
		for i := 0; i < 6 && sc.Next(); i++ {
			b, _ := sc.Batch()
			f.Add(append([]byte(nil), b...))
		}
	}
	f.Add(rawBatch([]byte{12, 0, 0, 0, 1, 1, 0}, 1))
	f.Add([]byte{})
	f.Add(make([]byte, HeaderSize))
	lim := Limits{MaxBatchBytes: 1 << 20, MaxRecordsBytes: 4 << 20}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, clientErr := CheckBatch(b, lim, true)
		if clientErr != nil && errors.Is(clientErr, ErrCorrupt) {
			t.Fatalf("a client's batch error wraps ErrCorrupt: %v", clientErr)
		}
		_, diskErr := ValidateRecords(b, lim)
		if diskErr != nil && !errors.Is(diskErr, ErrCorrupt) {
			t.Fatalf("a disk batch error does not wrap ErrCorrupt: %v", diskErr)
		}
		if clientErr == nil && diskErr != nil {
			t.Fatalf("a batch a client may append does not read back: %v", diskErr)
		}
		var it RecordIter
		if err := it.Reset(b, lim); err != nil {
			return
		}
		var recs []Record
		for it.Next() {
			r := *it.Record()
			r.Headers = append([]RecordHeader(nil), r.Headers...)
			recs = append(recs, r)
		}
		if it.Err() != nil || len(recs) == 0 {
			return
		}
		h := it.Header()
		codec := h.Codec()
		if codec == CodecS2 {
			codec = CodecNone // a version-1 codec, not written any more
		}
		re, err := AppendBatch(nil, recs, EncodeOptions{Codec: codec, BaseOffset: h.BaseOffset})
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := CheckBatch(re, Limits{MaxBatchBytes: 2 << 20, MaxRecordsBytes: 4 << 20}, true); err != nil {
			t.Fatalf("re-encoded batch is not a valid client batch: %v", err)
		}
		var it2 RecordIter
		if err := it2.Reset(re, Limits{MaxBatchBytes: 2 << 20, MaxRecordsBytes: 4 << 20}); err != nil {
			t.Fatalf("re-encoded batch does not verify: %v", err)
		}
		for i := 0; it2.Next(); i++ {
			r := it2.Record()
			if string(r.Key) != string(recs[i].Key) || string(r.Value) != string(recs[i].Value) || len(r.Headers) != len(recs[i].Headers) {
				t.Fatalf("record %d differs after re-encoding", i)
			}
			if r.Timestamp != recs[i].Timestamp && h.TimestampType() == CreateTime {
				t.Fatalf("record %d: timestamp %d, was %d", i, r.Timestamp, recs[i].Timestamp)
			}
		}
		if it2.Err() != nil {
			t.Fatalf("re-encoded batch does not decode: %v", it2.Err())
		}
	})
}
