package segment

import (
	"testing"
)

// FuzzDecodeBatch feeds arbitrary bytes to the batch decoder. It must never
// panic or allocate past the limits; whatever decodes must re-encode to a
// batch that decodes to the same records.
func FuzzDecodeBatch(f *testing.F) {
	for _, c := range allCodecs {
		f.Add(smallBatch(f, c))
	}
	f.Add(rawBatch([]byte{6, 0, 0, 0, 1, 1, 0}, 1))
	f.Add([]byte{})
	f.Add(make([]byte, HeaderSize))
	lim := Limits{MaxBatchBytes: 1 << 20, MaxRecordsBytes: 4 << 20}
	f.Fuzz(func(t *testing.T, b []byte) {
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
		if it.Err() != nil {
			return
		}
		h := it.Header()
		re, err := AppendBatch(nil, recs, EncodeOptions{Codec: h.Codec(), BaseOffset: h.BaseOffset})
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var it2 RecordIter
		if err := it2.Reset(re, lim); err != nil {
			t.Fatalf("re-encoded batch does not verify: %v", err)
		}
		for i := 0; it2.Next(); i++ {
			r := it2.Record()
			if r.Offset != recs[i].Offset || r.Timestamp != recs[i].Timestamp || string(r.Key) != string(recs[i].Key) || string(r.Value) != string(recs[i].Value) {
				t.Fatalf("record %d differs after re-encoding", i)
			}
		}
		if it2.Err() != nil {
			t.Fatalf("re-encoded batch does not decode: %v", it2.Err())
		}
	})
}
