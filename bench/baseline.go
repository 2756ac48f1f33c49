package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/seglog/seglog/vfs"
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

// plainPreads preads size bytes at each of positions of the file at path,
// in order, timing each. It compares by operations per second.
func plainPreads(ctx context.Context, path string, size int, positions []int64) (Baseline, error) {
	b := Baseline{Name: fmt.Sprintf("plain pread of %s", formatBytes(int64(size)))}
	f, err := os.Open(path)
	if err != nil {
		return b, err
	}
	defer f.Close()
	buf := make([]byte, size)
	h := NewHistogram()
	start := time.Now()
	for i, pos := range positions {
		if i&1023 == 0 && ctx.Err() != nil {
			return b, ctx.Err()
		}
		t := time.Now()
		if _, err := f.ReadAt(buf, pos); err != nil {
			return b, err
		}
		h.Record(time.Since(t))
	}
	b.Elapsed = time.Since(start)
	b.Ops = int64(len(positions))
	b.Latency = h.Latency()
	b.finish()
	b.MBPerSec = 0 // compared by operations per second
	return b, nil
}

// plainFsyncLoop appends chunk bytes and fsyncs, one goroutine, for d:
// the fsync-bound rate of this disk.
func plainFsyncLoop(ctx context.Context, dir string, chunk int, d time.Duration) (Baseline, error) {
	buf := make([]byte, chunk)
	fillRandom(buf, 4)
	return syncLoop{data: buf}.run(ctx, dir, d)
}

// syncLoop appends data to a new plain file and syncs it after every
// write, from one goroutine: the sync-bound rate of this disk. Ops counts
// the syncs; the latency is of the write and the sync together, or of the
// sync alone with timeSync.
type syncLoop struct {
	data     []byte // written before each sync
	datasync bool   // fdatasync (vfs File.Datasync, as a segment syncs) instead of fsync
	timeSync bool   // time the sync alone
}

func (s syncLoop) run(ctx context.Context, dir string, d time.Duration) (Baseline, error) {
	call := "fsync"
	if s.datasync {
		call = "fdatasync"
	}
	b := Baseline{Name: fmt.Sprintf("plain write of %s + %s, 1 goroutine", formatBytes(int64(len(s.data))), call)}
	if s.timeSync {
		b.Name += ", latency of the " + call
	}
	path := filepath.Join(dir, fmt.Sprintf("baseline-fsync-%d.dat", time.Now().UnixNano()))
	f, err := vfs.Default.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return b, err
	}
	defer os.Remove(path)
	defer f.Close()
	sync := f.Sync
	if s.datasync {
		sync = f.Datasync
	}
	h := NewHistogram()
	start := time.Now()
	for time.Since(start) < d && ctx.Err() == nil {
		t := time.Now()
		if _, err := f.Write(s.data); err != nil {
			return b, err
		}
		if s.timeSync {
			t = time.Now()
		}
		if err := sync(); err != nil {
			return b, err
		}
		h.Record(time.Since(t))
		b.Ops++
		b.Bytes += int64(len(s.data))
	}
	b.Elapsed = time.Since(start)
	b.Latency = h.Latency()
	b.finish()
	b.MBPerSec = 0 // compared by operations per second
	return b, ctx.Err()
}
