package segment

import (
	"crypto/rand"
	"os"
	"path/filepath"
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

// BenchmarkSegmentAppend appends 1 KiB-record batches (100 per batch)
// without fsync, beside a plain os.File.Write of the same bytes in the same
// run: compare the two MB/s figures. The segment's caller (the log) has
// verified the batch already, so the loop only patches its base offset.
func BenchmarkSegmentAppend(b *testing.B) {
	recs := benchRecords()
	batch, err := AppendBatch(nil, recs, EncodeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	h, err := Verify(batch, DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	// Both sides start over every 64 MiB (the same truncation cost), so
	// that the figures measure the write path and not the kernel's
	// throttling of gigabytes of dirty pages.
	const restart = 640
	b.Run("plain-write", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "plain"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(int64(len(batch)))
		loopRestarting(b, restart, func() error {
			if err := f.Truncate(0); err != nil {
				return err
			}
			_, err := f.Seek(0, 0)
			return err
		}, func() error {
			_, err := f.Write(batch)
			return err
		})
	})
	b.Run("segment", func(b *testing.B) {
		s, err := Create(b.TempDir(), 0, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.SetBytes(int64(len(batch)))
		loopRestarting(b, restart, func() error {
			_, err := s.TruncateTo(0)
			return err
		}, func() error {
			h.BaseOffset = s.NextOffset()
			SetBaseOffset(batch, h.BaseOffset)
			_, err := s.Append(batch, h)
			return err
		})
	})
}

// loopRestarting is the loop of a benchmark: step every time, and
// startOver (an emptying) before every restart-th step. An error of either
// fails the benchmark.
func loopRestarting(b *testing.B, restart int, startOver, step func() error) {
	i := 0
	for b.Loop() {
		if i++; i%restart == 0 {
			if err := startOver(); err != nil {
				b.Fatal(err)
			}
		}
		if err := step(); err != nil {
			b.Fatal(err)
		}
	}
}
