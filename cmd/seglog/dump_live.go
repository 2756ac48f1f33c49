package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/seglog/seglog/segment"
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
// it wait between two pages: for writeback (up to 200 ms), or, for the
// part that extends the file, for the file system's journal (seen taking
// over 0.5 s on a busy disk).
const (
	liveRereads   = 100 // 2 s
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
// appending to (live), damage at a position is read again from that
// position, over the file as long as it is by then, until the walk gets
// past it. A batch that bytes of a later batch follow was whole before
// they were written: it is read again once, at once, and damage that
// stays is damage. Damage with nothing after it (the walk stops there, or
// zeros follow) is read again after a pause, at most rereads times
// without progress. Either way the walk covers every byte dump read first
// (up to limit, the file's size when opened); it never goes on to batches
// that start past that.
type logWalk struct {
	*batchWalk
	f     *os.File // of a live walk
	path  string
	limit int64
	d     *dumper

	stuckAt int64 // where the last reread started
	tries   int   // rereads from stuckAt
	once    bool  // stuckAt was read again at once (batches follow it)
	rereads int   // in all
	gaveUp  bool  // damage stayed while it was read again after pauses
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
			if w.VerifyErr == nil || w.f == nil || !w.again(w.Pos, w.followed(w.Pos+int64(w.Header.Size()))) {
				return true
			}
			continue
		}
		if w.batchWalk.Err() == nil || w.f == nil || !w.again(w.End(), false) {
			return false
		}
	}
}

// followed reports whether the file holds more than zeros in the batch
// header's worth of bytes at pos: the start of a later batch.
func (w *logWalk) followed(pos int64) bool {
	var b [segment.HeaderSize]byte
	n, _ := w.f.ReadAt(b[:], pos)
	return len(bytes.TrimLeft(b[:n], "\x00")) > 0
}

// again reads the file again from pos, where the walk met damage: after
// a pause, or at once and for the last time when a later batch follows
// the damage (followed); false once it has been read again rereads times
// at pos.
func (w *logWalk) again(pos int64, followed bool) bool {
	if pos > w.stuckAt {
		w.stuckAt, w.tries, w.once = pos, 0, false
	}
	if w.once || w.tries >= w.d.rereads() {
		w.gaveUp = !w.once
		return false
	}
	w.tries++
	if followed {
		w.once = true
	} else {
		w.d.pause()
	}
	fi, err := w.f.Stat()
	if err != nil {
		return false
	}
	w.rereads++
	w.batchWalk = newBatchWalkFrom(w.f, fi.Size(), w.path, pos)
	return true
}

// note tells, on stderr, that the walk read part of the file again and
// found whole batches there.
func (w *logWalk) note() {
	if w.rereads > 0 && !w.gaveUp {
		_ = w.d.w.Flush()
		fmt.Fprintf(w.d.stderr, "%s: %s: a writer was appending while dump read it; read again where a batch was not whole yet (%d times)\n", w.d.name, w.path, w.rereads)
	}
}

// held is what a report of damage that stayed in a live walk adds: it
// may still be a batch that the writer has been writing all along.
func (w *logWalk) held() string {
	if !w.gaveUp {
		return ""
	}
	return fmt.Sprintf(" (a writer holds the partition: read again for %v, this is damage or a batch the writer is still writing)", time.Duration(w.d.rereads())*liveRereadGap)
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
