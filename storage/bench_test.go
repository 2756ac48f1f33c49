package storage

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
)

// Every benchmark here runs a plain-file baseline beside seglog in the
// same run ("plain-*" sub-benchmarks): compare within one run only, these
// machines are shared and noisy.

func encodedBatch(tb testing.TB, records, size int) []byte {
	recs := make([]Record, records)
	for i := range recs {
		v := make([]byte, size)
		_, _ = rand.Read(v)
		recs[i] = Record{Timestamp: 1_700_000_000_000 + int64(i), Value: v}
	}
	b, err := segment.AppendBatch(nil, recs, segment.EncodeOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// restartBytes: both sides start over after this many bytes, so that the
// figures measure the write path, not the kernel throttling gigabytes of
// dirty pages.
const restartBytes = 64 << 20

func benchPlainWrite(b *testing.B, batch []byte, syncEvery int) {
	f, err := os.Create(filepath.Join(b.TempDir(), "plain"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	benchWrites(b, batch, func() error {
		if _, err := f.Write(batch); err != nil || syncEvery == 0 {
			return err
		}
		return f.Sync()
	}, func() error {
		_ = f.Truncate(0)
		_, _ = f.Seek(0, 0)
		return nil
	})
}

func benchLogAppend(b *testing.B, batch []byte, opts Options) {
	l, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	benchWrites(b, batch, func() error {
		_, err := l.AppendBatch(batch)
		return err
	}, func() error { return l.Truncate(0) })
}

// benchWrites writes batch with write once per iteration, and starts over
// with restart whenever restartBytes have been written since the last
// start, with the timer stopped: only the writes are measured, not a
// truncation (and for a log its checkpoints).
func benchWrites(b *testing.B, batch []byte, write, restart func() error) {
	b.SetBytes(int64(len(batch)))
	written := 0
	for b.Loop() {
		if written += len(batch); written > restartBytes {
			written = 0
			b.StopTimer()
			if err := restart(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if err := write(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppend1KiB: 1 KiB records in batches of 100, no fsync, the
// producer's encoded batch (AppendBatch: checksum and record validation).
func BenchmarkAppend1KiB(b *testing.B) {
	batch := encodedBatch(b, 100, 1024)
	b.Run("plain-write", func(b *testing.B) { benchPlainWrite(b, batch, 0) })
	b.Run("seglog", func(b *testing.B) { benchLogAppend(b, batch, Options{}) })
}

// BenchmarkAppend100B: 100-byte records in batches of 100; see recs/s.
func BenchmarkAppend100B(b *testing.B) {
	batch := encodedBatch(b, 100, 100)
	report := func(b *testing.B) { b.ReportMetric(float64(b.N)*100/b.Elapsed().Seconds(), "recs/s") }
	b.Run("plain-write", func(b *testing.B) { benchPlainWrite(b, batch, 0); report(b) })
	b.Run("seglog", func(b *testing.B) { benchLogAppend(b, batch, Options{}); report(b) })
}

// BenchmarkDurable: fsync after every batch of 10 records of 1 KiB; then
// 1 and 8 goroutines each appending with SyncAlways (group commit).
func BenchmarkDurable(b *testing.B) {
	batch := encodedBatch(b, 10, 1024)
	report := func(b *testing.B) { b.ReportMetric(float64(b.N)*10/b.Elapsed().Seconds(), "recs/s") }
	b.Run("plain-write-fsync", func(b *testing.B) { benchPlainWrite(b, batch, 1); report(b) })
	b.Run("seglog-sync-always", func(b *testing.B) { benchLogAppend(b, batch, Options{Sync: SyncAlways}); report(b) })
	b.Run("seglog-explicit-sync", func(b *testing.B) {
		l, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		buf := slices.Clone(batch)
		for b.Loop() {
			if _, err := l.AppendBatch(buf); err != nil {
				b.Fatal(err)
			}
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	for _, g := range []int{1, 8} {
		b.Run(fmt.Sprintf("seglog-goroutines=%d", g), func(b *testing.B) {
			l, err := Open(b.TempDir(), Options{Sync: SyncAlways})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			one := encodedBatch(b, 1, 1024)
			var wg sync.WaitGroup
			per := (b.N + g - 1) / g
			b.ResetTimer()
			for i := 0; i < g; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := slices.Clone(one)
					for j := 0; j < per; j++ {
						if _, err := l.AppendBatch(buf); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*g)/b.Elapsed().Seconds(), "appends/s")
			if st, err := l.Stats(); err == nil && st.Fsyncs > 0 {
				n := st.Fsyncs
				b.ReportMetric(float64(per*g)/float64(n), "appends/fsync")
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "fsyncs/s")
			}
		})
	}
}

// fillLog appends size bytes of batches and returns the log, closed.
func fillLog(b *testing.B, dir string, batch []byte, size int64, opts Options) {
	l, err := Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	for n := int64(0); n < size; n += int64(len(batch)) {
		if _, err := l.AppendBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSequentialRead reads 1 GiB from page cache: raw batches (Read,
// what a broker sends), records through the Reader (checksums verified),
// beside a plain sequential Read of the same file.
func BenchmarkSequentialRead(b *testing.B) {
	const size = 1 << 30
	dir := b.TempDir()
	batch := encodedBatch(b, 100, 1024)
	fillLog(b, dir, batch, size, Options{})
	l, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	segs, _ := l.Segments()
	b.Run("plain-read", func(b *testing.B) {
		buf := make([]byte, 1<<20)
		b.SetBytes(size)
		for b.Loop() {
			for _, s := range segs {
				f, err := os.Open(s.Path)
				if err != nil {
					b.Fatal(err)
				}
				for {
					_, err := f.Read(buf)
					if err == io.EOF {
						break
					}
				}
				f.Close()
			}
		}
	})
	b.Run("seglog-read", func(b *testing.B) {
		buf := make([]byte, 1<<20)
		b.SetBytes(size)
		for b.Loop() {
			for off := int64(0); off < l.EndOffset(); {
				data, err := l.ReadInto(buf, off, 1<<20)
				if err != nil {
					b.Fatal(err)
				}
				h, _ := segment.ParseHeader(data[len(data)-len(batch):], segment.DefaultLimits)
				off = h.NextOffset()
				buf = data
			}
		}
	})
	b.Run("seglog-reader", func(b *testing.B) { benchReader(b, l, size) })
}

// benchReader reads every record of l, of size bytes, with a Reader (every
// batch verified and decoded), once per iteration.
func benchReader(b *testing.B, l *Log, size int64) {
	b.SetBytes(size)
	for b.Loop() {
		r := l.NewReader(0)
		for r.Next() {
		}
		if r.Err() != nil {
			b.Fatal(r.Err())
		}
	}
}

// BenchmarkRandomRead reads single 1 KiB records (one per batch) at random
// offsets over a 512 MiB log in page cache; see p50/p99 in ns.
func BenchmarkRandomRead(b *testing.B) {
	l, offsets := randomReadLog(b, 512<<20, 1)
	buf := make([]byte, 4096)
	timeReads(b, offsets, func(off int64) error {
		data, err := l.ReadInto(buf, off, 1)
		if err == nil && len(data) == 0 {
			err = fmt.Errorf("nothing read at %d", off)
		}
		buf = data
		return err
	})
}

// randomReadLog fills a log of size bytes with batches of per 1 KiB
// records, reopens it and returns it with 64 Ki random offsets in it.
func randomReadLog(b *testing.B, size int64, per int) (*Log, []int64) {
	dir := b.TempDir()
	fillLog(b, dir, encodedBatch(b, per, 1024), size, Options{})
	l, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	end := l.EndOffset()
	offsets := make([]int64, 1<<16)
	for i := range offsets {
		var x [8]byte
		_, _ = rand.Read(x[:])
		offsets[i] = int64(uint64(x[0])|uint64(x[1])<<8|uint64(x[2])<<16|uint64(x[3])<<24) % end
	}
	return l, offsets
}

// timeReads runs read over offsets in turn and reports the p50 and p99
// latency of a read in ns.
func timeReads(b *testing.B, offsets []int64, read func(off int64) error) {
	lat := make([]time.Duration, 0, 1<<20)
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if err := read(offsets[i&(len(offsets)-1)]); err != nil {
			b.Fatal(err)
		}
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(t0))
		}
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkOpen opens a cleanly closed 512 MiB log made of 1, 100 and
// 1,000 segments, and reports the unclean recovery scan rate.
func BenchmarkOpen(b *testing.B) {
	const size = 512 << 20
	batch := encodedBatch(b, 100, 1024)
	for _, segs := range []int{1, 100, 1000} {
		dir := b.TempDir()
		opts := Options{SegmentBytes: size / int64(segs)}
		fillLog(b, dir, batch, size, opts)
		b.Run(fmt.Sprintf("clean/segments=%d", segs), func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				l, err := Open(dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				b.StopTimer()
				if l.OpenStats().RecoveredSegs != 0 {
					b.Fatal("clean open rescanned")
				}
				l.Close()
				b.StartTimer()
			}
			// The median resists the stalls of a shared machine better
			// than the mean (sec/op).
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
		})
	}
	b.Run("unclean-recovery", func(b *testing.B) {
		dir := b.TempDir()
		fillLog(b, dir, batch, size, Options{})
		scanned := benchRecovery(b, dir)
		b.ReportMetric(float64(scanned)/b.Elapsed().Seconds()/1e9, "GB/s-scanned")
	})
}

// benchRecovery opens the log in dir as after a crash with no recovery
// point (every segment rescanned, verified, its indexes rebuilt), once per
// iteration, and returns how many bytes the opens rescanned.
func benchRecovery(b *testing.B, dir string) int64 {
	var scanned int64
	for b.Loop() {
		b.StopTimer()
		_ = os.Remove(filepath.Join(dir, cleanShutdownFile))
		_ = os.Remove(filepath.Join(dir, recoveryPointFile))
		b.StartTimer()
		l, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		scanned += l.OpenStats().RecoveredBytes
		l.Close()
		b.StartTimer()
	}
	return scanned
}

// BenchmarkBytesOnDisk reports the bytes on disk per payload byte for 1 KiB
// records in batches of 100, uncompressed.
func BenchmarkBytesOnDisk(b *testing.B) {
	batch := encodedBatch(b, 100, 1024)
	for b.Loop() {
		dir := b.TempDir()
		const batches = 500
		fillLog(b, dir, batch, int64(batches*len(batch)), Options{})
		var disk int64
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			fi, _ := e.Info()
			disk += fi.Size()
		}
		b.ReportMetric(float64(disk)/float64(batches*100*1024), "disk/payload")
	}
}

// BenchmarkIdempotentAppend compares appends of batches with producer ids
// (duplicate and sequence checks, state updates) with the same batches
// without, in the same run. Both encode a fresh batch per append (100
// records of 100 B) since the sequence is covered by the checksum.
func BenchmarkIdempotentAppend(b *testing.B) {
	recs := make([]Record, 100)
	for i := range recs {
		v := make([]byte, 100)
		_, _ = rand.Read(v)
		recs[i] = Record{Timestamp: 1_700_000_000_000, Value: v}
	}
	for _, idem := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "idempotent"}[idem]
		b.Run(name, func(b *testing.B) {
			l, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			buf := make([]byte, 0, 16<<10)
			b.SetBytes(100 * 100)
			seq := int32(0)
			written := 0
			for b.Loop() {
				opts := segment.EncodeOptions{}
				if idem {
					opts = segment.EncodeOptions{ProducerID: 1, BaseSequence: seq}
					seq += 100
				}
				buf, err = segment.AppendBatch(buf[:0], recs, opts)
				if err != nil {
					b.Fatal(err)
				}
				if written += len(buf); written > restartBytes {
					b.StopTimer()
					written = 0
					if err := l.Truncate(0); err != nil {
						b.Fatal(err)
					}
					if idem { // the producer's state went with the truncation
						seq = 0
						buf, _ = segment.AppendBatch(buf[:0], recs, segment.EncodeOptions{ProducerID: 1, BaseSequence: seq})
						seq = 100
					}
					b.StartTimer()
				}
				res, err := l.AppendBatch(buf)
				if err != nil || res.Duplicate {
					b.Fatal(err, res.Duplicate)
				}
			}
		})
	}
}

// BenchmarkPointRead reads one random record of 1 KiB from a 256 MiB log of
// 100-record batches: ReadRecord (the record only) beside ReadInto of its
// batch and decoding it (the way before ReadRecord), in the same run.
func BenchmarkPointRead(b *testing.B) {
	l, offsets := randomReadLog(b, 256<<20, 100)
	run := timeReads
	b.Run("read-record", func(b *testing.B) {
		var buf []byte
		run(b, offsets, func(off int64) (err error) {
			_, buf, err = l.ReadRecord(buf, off)
			return err
		})
	})
	b.Run("read-batch-decode", func(b *testing.B) {
		buf := make([]byte, 0, 256<<10)
		var it segment.RecordIter
		run(b, offsets, func(off int64) error {
			data, err := l.ReadInto(buf, off, 1)
			if err != nil {
				return err
			}
			buf = data
			if err := it.Reset(data, segment.DefaultLimits); err != nil {
				return err
			}
			for it.Next() {
				if it.Record().Offset == off {
					return nil
				}
			}
			return fmt.Errorf("offset %d not found: %v", off, it.Err())
		})
	})
}

// BenchmarkRolling appends 1 GiB of 1 KiB records (batches of 100, no
// fsync) per iteration to a new log of 128 MiB segments: 8 rolls, each
// of which used to wait 50-100 ms for the file system's journal in the
// appender (the index trim, the directory fsync). It reports the slowest
// append and the 99.9th percentile beside throughput; the plain baseline
// writes the same into new 128 MiB files. Run it with -benchtime 1x.
func BenchmarkRolling(b *testing.B) {
	const total, segBytes = 1 << 30, 128 << 20
	batch := encodedBatch(b, 100, 1024)
	run := func(b *testing.B, open func(dir string) (write func() error, done func() error)) {
		b.SetBytes(total)
		var lat []time.Duration
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			b.StartTimer()
			write, done := open(dir)
			for n := 0; n < total; n += len(batch) {
				t0 := time.Now()
				if err := write(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			if err := done(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1e3, "max-ms")
		b.ReportMetric(float64(lat[len(lat)-5].Microseconds())/1e3, "5th-slowest-ms")
		b.ReportMetric(float64(lat[len(lat)*999/1000].Microseconds())/1e3, "p99.9-ms")
	}
	b.Run("plain-write", func(b *testing.B) {
		run(b, func(dir string) (func() error, func() error) {
			var f *os.File
			files, written := 0, int64(segBytes)
			write := func() error {
				if written+int64(len(batch)) > segBytes {
					if f != nil {
						if err := f.Close(); err != nil {
							return err
						}
					}
					var err error
					if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("%020d.log", files))); err != nil {
						return err
					}
					files, written = files+1, 0
				}
				written += int64(len(batch))
				_, err := f.Write(batch)
				return err
			}
			return write, func() error { return f.Close() }
		})
	})
	seglog := func(opts Options) func(b *testing.B) {
		return func(b *testing.B) {
			run(b, func(dir string) (func() error, func() error) {
				l, err := Open(dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				write := func() error {
					_, err := l.AppendBatch(batch)
					return err
				}
				return write, l.CloseUnflushed
			})
		}
	}
	b.Run("seglog", seglog(Options{SegmentBytes: segBytes}))
	// A writer that leaves the fsyncs to the background flusher (every
	// 50 ms: several per run); each covers far more than a chunk, so its
	// segments do not preallocate.
	b.Run("seglog-sync-interval", seglog(Options{SegmentBytes: segBytes, Sync: SyncInterval, SyncInterval: 50 * time.Millisecond}))
}
