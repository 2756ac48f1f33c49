package segment

import (
	"crypto/rand"
	"testing"
)

// benchRecords returns 100 records of 1 KiB of half-compressible data.
func benchRecords() []Record {
	recs := make([]Record, 100)
	for i := range recs {
		v := make([]byte, 1024)
		_, _ = rand.Read(v[:512])
		recs[i] = Record{Timestamp: 1700000000000 + int64(i), Key: []byte("key-0000"), Value: v}
	}
	return recs
}

func payloadBytes(recs []Record) int64 {
	n := 0
	for _, r := range recs {
		n += len(r.Key) + len(r.Value)
	}
	return int64(n)
}

func BenchmarkEncode(b *testing.B) {
	recs := benchRecords()
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			buf := make([]byte, 0, 256<<10)
			b.SetBytes(payloadBytes(recs))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = AppendBatch(buf[:0], recs, EncodeOptions{Codec: c})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	recs := benchRecords()
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			batch, err := AppendBatch(nil, recs, EncodeOptions{Codec: c})
			if err != nil {
				b.Fatal(err)
			}
			var it RecordIter
			b.SetBytes(payloadBytes(recs))
			b.ReportAllocs()
			for b.Loop() {
				if err := it.Reset(batch, DefaultLimits); err != nil {
					b.Fatal(err)
				}
				n := 0
				for it.Next() {
					n += len(it.Record().Value)
				}
				if it.Err() != nil || n != 100*1024 {
					b.Fatal(it.Err(), n)
				}
			}
		})
	}
}
