package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
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
	// liveIndexChecks is how many times an index check beside a writer
	// that finds problems is done in all.
	liveIndexChecks = 3
)

// liveDir is what dump learned of a directory the first time it looked.
type liveDir struct {
	held   bool  // a writer holds it (its lock, or the data root's)
	newest int64 // base offset of its newest segment then (held only)
}

// liveness reports whether a writer holds the directory of the .log at
// path (held), and whether it may be appending to that .log: a segment,
// named by its base offset base, no older than the newest one there when
// dump first looked. Each directory is asked once, by its real path (a
// relative FILE, or one reached through a symbolic link, is in the same
// directory as the writer's).
func (d *dumper) liveness(path string, base int64, named bool) (held, appending bool) {
	real, err := vfs.RealPath(path)
	if err != nil {
		// Gone (retention deleted it since dump listed it): its
		// directory says.
		if real, err = vfs.RealPath(filepath.Dir(path)); err != nil {
			return false, false
		}
		real = filepath.Join(real, filepath.Base(path))
	}
	dir := filepath.Dir(real)
	ld, ok := d.dirs[dir]
	if !ok {
		if writerHolds(dir) {
			ld.held = true
			ld.newest = math.MaxInt64
			if pl, err := storage.ListPartition(dir); err == nil && len(pl.Segments) > 0 {
				ld.newest = pl.Segments[len(pl.Segments)-1]
			}
		}
		if d.dirs == nil {
			d.dirs = map[string]liveDir{}
		}
		d.dirs[dir] = ld
	}
	return ld.held, ld.held && named && base >= ld.newest
}

// retired reports whether the segment with base offset base, whose .log
// at path is missing, is one that retention deleted: its name is gone,
// and, since retention deletes the oldest segments and never the newest,
// every segment of the directory now is newer.
func (d *dumper) retired(path string, base int64) bool {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	dir, err := vfs.RealPath(filepath.Dir(path))
	if err != nil {
		return false
	}
	pl, err := storage.ListPartition(dir)
	return err == nil && len(pl.Segments) > 0 && pl.Segments[0] > base
}

// gone tells about the segment whose .log at path (base offset base) was
// deleted while dump read it: a note when retention deleted it, else a
// problem. It reports whether that was a problem.
func (d *dumper) gone(path string, base int64) bool {
	if d.retired(path, base) {
		d.note("%s: deleted by the writer's retention while dump read it: its indexes are not checked", path)
		return false
	}
	d.problem(path, -1, fmt.Sprintf("%s: deleted while dump read it, but not by retention (an older segment is still there)", path))
	return true
}

// deleted reports whether the open file f has been removed.
func deleted(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}

// note tells something on stderr that is no damage.
func (d *dumper) note(format string, args ...any) {
	_ = d.w.Flush()
	fmt.Fprintf(d.stderr, "%s: %s\n", d.name, fmt.Sprintf(format, args...))
}

// logWalk is a batchWalk over a .log for dump. On the file a writer is
// appending to (live), damage is read again until the walk gets past it:
//   - A batch with a bad checksum that bytes of a later batch follow was
//     whole before they were written (the writer writes one batch at a
//     time, at the end): it is read again once, at once, and damage that
//     stays is damage.
//   - Damage with nothing after it (zeros follow, or the walk stops
//     there) is read again from its position over the file as long as it
//     is by then, after a pause: at most rereads pauses in all, so that
//     a writer appending slowly does not keep dump following it.
//
// Either way the walk covers every byte dump read first (up to limit, the
// file's size when opened); it never goes on to batches that start past
// that.
type logWalk struct {
	*batchWalk
	f     *os.File // of a live walk
	path  string
	limit int64
	d     *dumper

	pauses   int   // in all: at most rereads
	pending  int64 // where the last reread started, until a batch there is read (-1: none)
	resolved int   // damage that was whole batches when read again
	gaveUp   bool  // the damage just reported stayed through the rereads
}

// newLogWalk walks r, size bytes long, the .log at path; f is the same
// file when a writer may be appending to it, else nil.
func (d *dumper) newLogWalk(r io.ReaderAt, size int64, path string, f *os.File) *logWalk {
	return &logWalk{batchWalk: newBatchWalk(r, size, path), f: f, path: path, limit: size, d: d, pending: -1}
}

// Next advances to the next batch, like batchWalk.Next.
func (w *logWalk) Next() bool {
	w.gaveUp = false
	for {
		if w.f != nil && w.End() >= w.limit {
			return false
		}
		if w.batchWalk.Next() {
			if w.f == nil {
				return true
			}
			whole := w.VerifyErr == nil && w.Pos == w.pending
			if w.VerifyErr != nil {
				if w.followed(w.Pos + int64(w.Header.Size())) {
					whole = w.readBatchAgain()
				} else if w.again(w.Pos) {
					continue
				}
			}
			if whole {
				w.resolved++
			}
			w.pending = -1
			return true
		}
		if w.f == nil || w.batchWalk.Err() == nil || !w.again(w.End()) {
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

// readBatchAgain reads the current batch again and reports whether it
// is whole now; the walk goes on with the batch read before when it is
// still damaged.
func (w *logWalk) readBatchAgain() bool {
	b := make([]byte, w.Header.Size())
	if _, err := w.f.ReadAt(b, w.Pos); err != nil {
		return false
	}
	if _, err := segment.Verify(b, segment.DefaultLimits); err != nil {
		return false
	}
	w.Batch, w.VerifyErr = b, nil
	return true
}

// again reads the file again from pos, where the walk met damage with
// nothing after it, after a pause; false once the walk has paused
// rereads times (a writer appending slowly must not keep dump following
// it through its preallocated tail).
func (w *logWalk) again(pos int64) bool {
	if w.pauses >= w.d.rereads() {
		w.gaveUp, w.pending = true, -1
		return false
	}
	w.pauses++
	w.d.pause()
	fi, err := w.f.Stat()
	if err != nil {
		return false
	}
	w.pending = pos
	w.batchWalk = newBatchWalkFrom(w.f, fi.Size(), w.path, pos)
	return true
}

// note tells, on stderr, that batches the walk read while the writer was
// writing them were read again, whole.
func (w *logWalk) note() {
	if w.resolved > 0 {
		w.d.note("%s: a writer was appending while dump read it: %s read again once whole", w.path, plural(int64(w.resolved), "batch"))
	}
}

// liveIndexCheck checks the indexes of the .log at path (open as f) in a
// directory a writer holds, and reports the result. It reads the indexes
// first and the .log's size after: the writer writes each batch before
// its index entries, so every entry read names a batch in the file by
// then, and the check walks the batches up to that size, verifying those
// from verifyFrom on (the walk of the data read the ones before). In the
// segment being appended to (appending), a batch the writer is writing at
// the end stops the walk quietly: the walk of the data reports damage in
// what it read, and what lies past that was written after it (the next
// dump reads it); only index entries naming those bytes are judged here.
// Elsewhere damage in the log is a problem of the check. An entry the
// writer (or the seal of a segment it rolled from) was storing while dump
// read it can be torn (a time entry is two stores, which a page fault can
// part): a check with problems is done again after a pause, attempts
// times in all, and the last one reported. A segment deleted meanwhile is
// a note when retention deleted it (see gone).
func (d *dumper) liveIndexCheck(f *os.File, path string, base, verifyFrom int64, appending bool, attempts int) {
	var chk *index.Checker
	var problems []string
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			d.pause()
		}
		if deleted(f) {
			if d.gone(path, base) && chk != nil {
				d.indexCheckResult(chk, path, problems)
			}
			return
		}
		fi, err := f.Stat()
		if err != nil {
			d.problem(path, -1, fileErr(path, err).Error())
			return
		}
		chk = loadIndexChecker(path, base, fi.Size())
		if fi, err = f.Stat(); err != nil {
			d.problem(path, -1, fileErr(path, err).Error())
			return
		}
		w := newBatchWalk(f, fi.Size(), path)
		for next := base; w.Next(); next = w.Header.NextOffset() {
			if w.Pos >= verifyFrom && (w.VerifyErr != nil || w.Header.BaseOffset != next) {
				// Not a batch the writer appended after the walk of
				// the data: entries naming it, or later ones, are not
				// matched.
				if !appending {
					why := fmt.Sprintf("base offset %d, expected %d", w.Header.BaseOffset, next)
					if w.VerifyErr != nil {
						why = w.VerifyErr.Error()
					}
					chk.Problemf("%s at byte %d: batch at offset %d: %s (entries after it cannot be checked)", path, w.Pos, w.Header.BaseOffset, why)
				}
				break
			}
			chk.Batch(w.Pos, w.Header.IndexOffset(), w.Header.MaxTimestamp)
		}
		if err := w.Err(); err != nil && !appending {
			chk.Problemf("%v (the log is damaged: entries after byte %d cannot be checked)", err, w.End())
		}
		if problems = chk.Finish(w.End()); len(problems) == 0 {
			break
		}
	}
	d.indexCheckResult(chk, path, problems)
}

// held is what a report of damage that stayed in a live walk adds: it
// may still be a batch that the writer has been writing all along.
func (w *logWalk) held() string {
	if !w.gaveUp {
		return ""
	}
	return fmt.Sprintf(" (a writer holds the partition: dump read the end of the file again %s, %v apart; this is damage, or a batch the writer is still writing)", plural(int64(w.pauses), "time"), liveRereadGap)
}

// rereads is how many times a live walk pauses to read the file again, in all.
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
