package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// The baselines are what a plain file does with the same work, in the
// same directory and the same run, so that every figure can be read as a
// fraction of what this machine's disk and page cache allow.

// fillRandom fills b with pseudo-random (incompressible) bytes.
func fillRandom(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		b[i], b[i+1], b[i+2], b[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		b[i+4], b[i+5], b[i+6], b[i+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
}

// plainWrite writes n bytes sequentially to a new file in dir, chunk bytes
// per Write, with an fsync after every syncEvery writes (0: never) and
// none at the end (an fsync at the end is made but not timed, so the file
// is clean for what follows). It returns the file's path; the caller
// removes it.
func plainWrite(ctx context.Context, dir string, n int64, chunk, syncEvery int) (Baseline, string, error) {
	b := Baseline{Name: fmt.Sprintf("plain sequential write, %s per write", formatBytes(int64(chunk)))}
	if syncEvery > 0 {
		b.Name += fmt.Sprintf(", fsync every %d writes", syncEvery)
	}
	path := filepath.Join(dir, fmt.Sprintf("baseline-%d.dat", time.Now().UnixNano()))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return b, "", err
	}
	defer f.Close()
	buf := make([]byte, chunk)
	fillRandom(buf, 1)
	start := time.Now()
	var written int64
	for i := 0; written < n; i++ {
		if i&63 == 0 && ctx.Err() != nil {
			return b, path, ctx.Err()
		}
		m := int(min(int64(chunk), n-written))
		if _, err := f.Write(buf[:m]); err != nil {
			return b, path, err
		}
		written += int64(m)
		b.Ops++
		if syncEvery > 0 && (i+1)%syncEvery == 0 {
			if err := f.Sync(); err != nil {
				return b, path, err
			}
		}
	}
	b.Elapsed = time.Since(start)
	b.Bytes = written
	b.finish()
	return b, path, f.Sync()
}

// plainRead reads the file at path sequentially, chunk bytes per ReadAt.
func plainRead(ctx context.Context, path string, chunk int) (Baseline, error) {
	b := Baseline{Name: fmt.Sprintf("plain sequential read, %s per read", formatBytes(int64(chunk)))}
	f, err := os.Open(path)
	if err != nil {
		return b, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return b, err
	}
	buf := make([]byte, chunk)
	start := time.Now()
	for pos := int64(0); pos < fi.Size(); {
		if b.Ops&63 == 0 && ctx.Err() != nil {
			return b, ctx.Err()
		}
		n, err := f.ReadAt(buf[:min(int64(chunk), fi.Size()-pos)], pos)
		if err != nil {
			return b, err
		}
		pos += int64(n)
		b.Bytes += int64(n)
		b.Ops++
	}
	b.Elapsed = time.Since(start)
	b.finish()
	return b, nil
}

// plainRandomRead preads size bytes at count random size-aligned
// positions of the file at path, timing each.
func plainRandomRead(ctx context.Context, path string, size, count int) (Baseline, error) {
	b := Baseline{Name: fmt.Sprintf("plain pread of %s at random aligned positions", formatBytes(int64(size)))}
	f, err := os.Open(path)
	if err != nil {
		return b, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return b, err
	}
	slots := fi.Size() / int64(size)
	if slots == 0 {
		return b, fmt.Errorf("bench: %s is smaller than one read", path)
	}
	r := rand.New(rand.NewPCG(2, 3))
	buf := make([]byte, size)
	h := NewHistogram()
	start := time.Now()
	for i := 0; i < count; i++ {
		if i&1023 == 0 && ctx.Err() != nil {
			return b, ctx.Err()
		}
		pos := r.Int64N(slots) * int64(size)
		t := time.Now()
		if _, err := f.ReadAt(buf, pos); err != nil {
			return b, err
		}
		h.Record(time.Since(t))
	}
	b.Elapsed = time.Since(start)
	b.Ops = int64(count)
	b.Latency = h.Latency()
	b.finish()
	b.MBPerSec = 0 // compared by operations per second
	return b, nil
}

// plainFsyncLoop appends chunk bytes and fsyncs, one goroutine, for d:
// the fsync-bound rate of this disk.
func plainFsyncLoop(ctx context.Context, dir string, chunk int, d time.Duration) (Baseline, error) {
	b := Baseline{Name: fmt.Sprintf("plain write of %s + fsync, 1 goroutine", formatBytes(int64(chunk)))}
	path := filepath.Join(dir, fmt.Sprintf("baseline-fsync-%d.dat", time.Now().UnixNano()))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return b, err
	}
	defer os.Remove(path)
	defer f.Close()
	buf := make([]byte, chunk)
	fillRandom(buf, 4)
	h := NewHistogram()
	start := time.Now()
	for time.Since(start) < d && ctx.Err() == nil {
		t := time.Now()
		if _, err := f.Write(buf); err != nil {
			return b, err
		}
		if err := f.Sync(); err != nil {
			return b, err
		}
		h.Record(time.Since(t))
		b.Ops++
		b.Bytes += int64(chunk)
	}
	b.Elapsed = time.Since(start)
	b.Latency = h.Latency()
	b.finish()
	b.MBPerSec = 0 // compared by operations per second
	return b, ctx.Err()
}
