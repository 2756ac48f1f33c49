package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// WritingTail is a partition that a writer held while Check read it: the
// batches up to From were checked through a read-only follower; the tail
// being written from From on is not judged.
type WritingTail struct {
	Partition string
	// From is the follower's end offset when the check began.
	From int64
}

// liveView is what a follower saw of a partition a writer holds.
type liveView struct {
	start, end int64
}

// partitionHeld reports whether a writer holds the partition directory
// dir: a Log locks its directory, a Store the data root above its
// partitions. It probes each lock with a shared, non-blocking flock taken
// and dropped at once on a read-only descriptor; a writer that opens in
// that instant gets ErrLocked.
func partitionHeld(dir string) bool {
	if held(dir) {
		return true
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if _, _, ok := ParsePartitionDir(filepath.Base(abs)); !ok {
		return false
	}
	return held(filepath.Dir(abs))
}

func held(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// followerView opens a follower of dir (OpenFollower) and returns the
// start and end offsets it sees: the last whole batch the writer appended
// when it opened.
// Retention may delete a segment the open listed before the open reads
// it: the open is then tried again, as Describe does.
func followerView(opts CheckOptions, dir string) (liveView, error) {
	var err error
	for try := 0; try <= describeTries; try++ {
		var l *Follower
		if l, err = OpenFollower(dir, Options{FS: opts.FS, Limits: opts.Limits}); err == nil {
			defer l.Close()
			return liveView{start: l.StartOffset(), end: l.EndOffset()}, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return liveView{}, err
}

// liveBases drops from the listed bases what the follower's view does not
// hold: segments wholly below its start (the writer deletes them after it
// advanced the start) and segments at or past its end (rolled to after
// the follower opened: the tail being written).
func liveBases(bases []int64, v liveView) []int64 {
	for len(bases) > 1 && bases[1] <= v.start {
		bases = bases[1:]
	}
	n := len(bases)
	for n > 1 && bases[n-1] >= v.end {
		n--
	}
	return bases[:n]
}

// deletedByWriter reports whether the writer's retention deleted the
// i-th of the listed segments during the check, and where the log goes
// on: its log start offset has reached the next listed segment's base,
// or, for the last one listed (the writer may have rolled past it since),
// passed its base while its .log is gone.
func deletedByWriter(fsys vfs.FS, dir string, bases []int64, i int) (next int64, deleted bool) {
	v, ok, err := readCheckpoint(fsys, dir, logStartOffsetFile)
	if err != nil || !ok {
		return 0, false
	}
	if i < len(bases)-1 {
		return bases[i+1], v >= bases[i+1]
	}
	_, err = fsys.Lstat(filepath.Join(dir, segment.FileName(bases[i], segment.LogSuffix)))
	return v, v > bases[i] && errors.Is(err, os.ErrNotExist)
}

// readIndexFile reads an index file for Check: to its end, at most
// maxIndexCheckBytes. A writer trims an active index to its used entries
// when it rolls or closes, maybe while this reads (only all-zero entries
// go): bytes read past the file's new end are dropped.
func readIndexFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexCheckBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxIndexCheckBytes {
		return nil, fmt.Errorf("%s: more than %d bytes: %w", path, maxIndexCheckBytes, vfs.ErrTooLarge)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() < int64(len(b)) {
		b = b[:fi.Size()]
	}
	return b, nil
}

// WriterEnd reports whether a writer holds the partition directory dir (a
// running broker or seglog produce) and, when one does, the end offset a
// follower (OpenFollower) sees there: the offset after the
// last whole batch. Tools that read the files themselves (seglog dump)
// judge what lies below it and leave the tail being written alone.
func WriterEnd(dir string) (end int64, held bool, err error) {
	if !partitionHeld(dir) {
		return 0, false, nil
	}
	v, err := followerView(CheckOptions{}.withDefaults(), dir)
	if err != nil {
		return 0, true, err
	}
	return v.end, true, nil
}

// LogWalk walks the batches of a .log file (segment.Walk) for a tool
// that reads segment files itself (seglog dump), read-only. Close closes
// the file.
type LogWalk struct {
	*segment.Walk
	f *os.File
	// HeldEnd is, when a writer holds the file's partition directory, the
	// end offset its follower sees (WriterEnd), where the walk stops
	// (segment.Walk.StopAt); -1 when no writer holds it.
	HeldEnd int64
}

// OpenLogWalk opens the .log at path read-only and walks its batches. A
// file named like a segment whose partition directory a writer holds is
// read up to the writer's end, asked before the file's size is read
// (what the writer appends meanwhile lies past it): Stopped then says the
// walk reached it, and the tail being written is not judged. Errors
// opening the file are *fs.PathError.
func OpenLogWalk(path string) (*LogWalk, error) {
	end := int64(-1)
	if _, named := segment.BaseOf(path); named {
		e, held, err := WriterEnd(filepath.Dir(path))
		if err != nil {
			return nil, fmt.Errorf("%s: held by a writer, and a read-only follower cannot open it: %w", path, err)
		}
		if held {
			end = e
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = fmt.Errorf("%s: is a directory", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	w := &LogWalk{Walk: segment.NewWalk(f, fi.Size(), path), f: f, HeldEnd: end}
	if end >= 0 {
		w.StopAt(end)
	}
	return w, nil
}

// Close closes the file.
func (w *LogWalk) Close() error { return w.f.Close() }
