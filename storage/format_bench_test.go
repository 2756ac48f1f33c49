package storage

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Benchmarks of what the batch format costs on the append, read and
// recovery paths, written (with the helpers of bench_test.go) only against
// API that every batch format of the log has had, so that test binaries of
// two versions run them side by side (benchstat of old against new). Each
// plain-* sub-benchmark is the same bytes written with a plain pwrite in
// the same run.

// formatRecords returns n records of size random bytes.
func formatRecords(n, size int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, size)
		_, _ = rand.Read(v)
		recs[i] = Record{Timestamp: 1_700_000_000_000 + int64(i), Key: []byte(fmt.Sprint(i)), Value: v}
	}
	return recs
}

// BenchmarkFormatAppend: Log.Append of 100 records of 100 B and of 1 KiB
// (the log encodes the batch), no fsync.
func BenchmarkFormatAppend(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("records-%dB", size), func(b *testing.B) {
			recs := formatRecords(100, size)
			l, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetBytes(int64(100 * size))
			written := 0
			for b.Loop() {
				if written += 100 * size; written > restartBytes {
					written = 0
					if err := l.Truncate(0); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := l.Append(recs...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// formatBatches are the pre-encoded batches the AppendBatch benchmarks
// append: 100 records of 1 KiB, and 1 MiB (1024 records of 1 KiB).
var formatBatches = []struct {
	name    string
	records int
}{{"1KiB-records", 100}, {"1MiB-batch", 1024}}

// BenchmarkFormatAppendBatch: AppendBatch of a pre-encoded batch (a
// producer's: checked, patched, written) of 100 records of 1 KiB, and of
// one of 1 MiB (1024 records of 1 KiB), beside a plain pwrite of the same
// bytes at the end of a file.
func BenchmarkFormatAppendBatch(b *testing.B) {
	for _, tc := range formatBatches {
		batch := encodedBatch(b, tc.records, 1024)
		b.Run(tc.name+"/plain-pwrite", func(b *testing.B) { benchPwrite(b, batch) })
		b.Run(tc.name+"/seglog", func(b *testing.B) { benchLogAppend(b, batch, Options{}) })
	}
}

// benchPwrite writes batch at the end of a plain file with pwrite, once per
// iteration, starting over as benchWrites does.
func benchPwrite(b *testing.B, batch []byte) {
	f, err := os.Create(filepath.Join(b.TempDir(), "plain"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var off int64
	benchWrites(b, batch, func() error {
		_, err := f.WriteAt(batch, off)
		off += int64(len(batch))
		return err
	}, func() error {
		off = 0
		return f.Truncate(0)
	})
}

// BenchmarkFormatAppendBatchPaired: the AppendBatch of
// BenchmarkFormatAppendBatch and the plain pwrite of the same bytes, one
// of each in every iteration (their order alternating), each timed alone.
// On a shared machine the stalls of other work (writeback, other
// processes) fall on both sides alike instead of on whichever
// sub-benchmark runs while they last, and the medians resist them: it
// reports the median of each side (plain-p50-ns, seglog-p50-ns) and
// seglog's speed as a percentage of the plain pwrite's, from the medians
// (p50-%-of-plain) and from the means (mean-%-of-plain). sec/op is the
// pair.
func BenchmarkFormatAppendBatchPaired(b *testing.B) {
	for _, tc := range formatBatches {
		batch := encodedBatch(b, tc.records, 1024)
		b.Run(tc.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "plain"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			l, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			var plain, seglog []time.Duration
			var off int64
			written := 0
			pwrite := func() {
				t0 := time.Now()
				if _, err := f.WriteAt(batch, off); err != nil {
					b.Fatal(err)
				}
				plain = append(plain, time.Since(t0))
				off += int64(len(batch))
			}
			appendBatch := func() {
				t0 := time.Now()
				if _, err := l.AppendBatch(batch); err != nil {
					b.Fatal(err)
				}
				seglog = append(seglog, time.Since(t0))
			}
			b.SetBytes(int64(2 * len(batch)))
			for b.Loop() {
				if written += len(batch); written > restartBytes {
					written = 0
					b.StopTimer()
					off = 0
					if err := f.Truncate(0); err != nil {
						b.Fatal(err)
					}
					if err := l.Truncate(0); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if len(plain)%2 == 0 {
					pwrite()
					appendBatch()
				} else {
					appendBatch()
					pwrite()
				}
			}
			reportPaired(b, plain, seglog)
		})
	}
}

// reportPaired reports the medians of the plain and seglog times of
// BenchmarkFormatAppendBatchPaired and seglog's speed relative to plain.
func reportPaired(b *testing.B, plain, seglog []time.Duration) {
	sum := func(d []time.Duration) (s time.Duration) {
		for _, x := range d {
			s += x
		}
		return s
	}
	mean := float64(sum(plain)) / float64(sum(seglog))
	slices.Sort(plain)
	slices.Sort(seglog)
	p50, s50 := plain[len(plain)/2], seglog[len(seglog)/2]
	b.ReportMetric(float64(p50.Nanoseconds()), "plain-p50-ns")
	b.ReportMetric(float64(s50.Nanoseconds()), "seglog-p50-ns")
	b.ReportMetric(100*float64(p50)/float64(s50), "p50-%-of-plain")
	b.ReportMetric(100*mean, "mean-%-of-plain")
}

// formatLogBytes is the size of the logs the read and recovery
// benchmarks fill.
const formatLogBytes = 256 << 20

// BenchmarkFormatRead: a sequential read of a 256 MiB log of 1 KiB
// records in batches of 100, in page cache: whole batches (ReadInto) and
// records (a Reader, which verifies and decodes every batch).
func BenchmarkFormatRead(b *testing.B) {
	dir := b.TempDir()
	batch := encodedBatch(b, 100, 1024)
	fillLog(b, dir, batch, formatLogBytes, Options{})
	l, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.Run("batches", func(b *testing.B) {
		buf := make([]byte, 1<<20)
		b.SetBytes(formatLogBytes)
		for b.Loop() {
			for off := int64(0); off < l.EndOffset(); {
				data, err := l.ReadInto(buf, off, 1<<20)
				if err != nil {
					b.Fatal(err)
				}
				buf = data
				off += int64(len(data)/len(batch)) * 100
			}
		}
	})
	b.Run("records", func(b *testing.B) { benchReader(b, l, formatLogBytes) })
}

// BenchmarkFormatRecovery: the open of a 256 MiB log after a crash with no
// recovery point: every batch read, its checksum verified, the indexes
// rebuilt.
func BenchmarkFormatRecovery(b *testing.B) {
	dir := b.TempDir()
	fillLog(b, dir, encodedBatch(b, 100, 1024), formatLogBytes, Options{})
	b.SetBytes(formatLogBytes)
	if benchRecovery(b, dir) == 0 {
		b.Fatal("nothing recovered")
	}
}
