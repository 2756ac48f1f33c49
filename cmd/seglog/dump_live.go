package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/seglog/seglog/storage"
)

// Beside a running writer, dump reads files that change as it reads them.
// A writer appends each batch with one write at the end of the newest
// .log of its partition (over the zeros of its preallocated tail, or past
// the end of the file), so a read that meets the batch being written sees
// part of it: a batch that runs past the size dump read, a checksum that
// does not match, a header followed by zeros. In that one file, damage
// found in the bytes dump first read is read again until it has become
// whole batches; damage that stays is reported as anywhere else.

// Defaults of the rereads of a batch in flight: a writer's write of one
// batch into the page cache takes microseconds, but the kernel can make
// it wait for writeback for up to 200 ms between two pages.
const (
	liveRereads   = 25
	liveRereadGap = 20 * time.Millisecond
)

// liveDir is what dump learned of a directory the first time it looked.
type liveDir struct {
	held   bool  // a writer holds it (its lock, or the data root's)
	newest int64 // base offset of its newest segment then (held only)
}

// appending reports whether the .log at path, whose file name says base
// offset base, may be the one a writer is appending to: a segment of a
// directory a writer holds, and no older than the newest one there when
// dump first looked. Each directory is asked once, by its real path (a
// relative FILE, or one reached through a symbolic link, is in the same
// directory as the writer's).
func (d *dumper) appending(path string, base int64) bool {
	real, err := realPath(path)
	if err != nil {
		return false
	}
	dir := filepath.Dir(real)
	ld, ok := d.dirs[dir]
	if !ok {
		if writerHolds(dir) {
			if pl, err := storage.ListPartition(dir); err == nil && len(pl.Segments) > 0 {
				ld = liveDir{held: true, newest: pl.Segments[len(pl.Segments)-1]}
			}
		}
		if d.dirs == nil {
			d.dirs = map[string]liveDir{}
		}
		d.dirs[dir] = ld
	}
	return ld.held && base >= ld.newest
}

// logWalk is a batchWalk over a .log for dump. On the file a writer is
// appending to (live), damage at or after a position is read again from
// that position, after a pause, over the file as long as it is by then,
// until the walk gets past it: at most rereads times without progress.
// Either way the walk covers every byte dump read first (up to limit, the
// file's size when opened); it never goes on to batches that start past
// that.
type logWalk struct {
	*batchWalk
	f     *os.File // of a live walk
	path  string
	limit int64
	d     *dumper

	stuckAt int64 // where the last reread started
	tries   int   // rereads from stuckAt
	rereads int   // in all
}

// newLogWalk walks r, size bytes long, the .log at path; f is the same
// file when a writer may be appending to it, else nil.
func (d *dumper) newLogWalk(r io.ReaderAt, size int64, path string, f *os.File) *logWalk {
	return &logWalk{batchWalk: newBatchWalk(r, size, path), f: f, path: path, limit: size, d: d, stuckAt: -1}
}

// Next advances to the next batch, like batchWalk.Next.
func (w *logWalk) Next() bool {
	for {
		if w.f != nil && w.End() >= w.limit {
			return false
		}
		if w.batchWalk.Next() {
			if w.VerifyErr == nil || w.f == nil || !w.again(w.Pos) {
				return true
			}
			continue
		}
		if w.batchWalk.Err() == nil || w.f == nil || !w.again(w.End()) {
			return false
		}
	}
}

// again reads the file again from pos, where the walk met damage, after
// a pause; false once that has been done rereads times at pos.
func (w *logWalk) again(pos int64) bool {
	if pos > w.stuckAt {
		w.stuckAt, w.tries = pos, 0
	}
	if w.tries >= w.d.rereads() {
		return false
	}
	w.tries++
	w.d.pause()
	fi, err := w.f.Stat()
	if err != nil {
		return false
	}
	w.rereads++
	w.batchWalk = newBatchWalkFrom(w.f, fi.Size(), w.path, pos)
	return true
}

// note tells, on stderr, that the walk read part of the file again.
func (w *logWalk) note() {
	if w.rereads > 0 {
		_ = w.d.w.Flush()
		fmt.Fprintf(w.d.stderr, "%s: %s: a writer was appending while dump read it; read again where a batch was not whole yet (%d times)\n", w.d.name, w.path, w.rereads)
	}
}

// rereads is how many times a live walk reads again from one position.
func (d *dumper) rereads() int {
	if d.liveTries > 0 {
		return d.liveTries
	}
	return liveRereads
}

// pause waits before a reread.
func (d *dumper) pause() {
	if d.livePause != nil {
		d.livePause()
		return
	}
	time.Sleep(liveRereadGap)
}
