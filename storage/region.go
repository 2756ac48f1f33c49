package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Region is a byte range of one segment's .log holding whole batches: what
// a broker sends to a consumer without copying it through user space.
//
//	reg, err := log.ReadRegion(offset, 1<<20)
//	_, err = io.Copy(conn, reg) // sendfile(2) when conn is a socket
type Region struct {
	seg         *segment.Segment
	Path        string // the .log file
	Position    int64  // byte position in the file
	Length      int64  // bytes; 0 when the reader is caught up
	FirstOffset int64  // base offset of the first batch
	NextOffset  int64  // offset after the last batch

	read int64 // bytes consumed by Read or WriteTo
	log  *view
	gen  int64 // the log's truncation generation at ReadRegion
}

// ReadRegion is Read without the copy: it returns where the batches are.
// The same offset rules apply; at EndOffset the Region is empty.
func (v *view) ReadRegion(offset int64, maxBytes int) (*Region, error) {
	gen := v.truncGen.Load()
	var sp segment.Span
	var seg *segment.Segment
	err := v.inSegment(offset, math.MaxInt64, func(s *segment.Segment, limit int64) (err error) {
		seg = s
		sp, err = s.Span(offset, maxBytes, limit)
		return err
	})
	if err == errCaughtUp {
		return &Region{FirstOffset: offset, NextOffset: offset}, nil
	}
	if err != nil {
		return nil, err
	}
	return &Region{seg: seg, Path: seg.LogPath(), Position: sp.Position, Length: sp.Length, FirstOffset: sp.FirstOffset, NextOffset: sp.NextOffset, log: v, gen: gen}, nil
}

// Read reads the region's bytes sequentially, so a Region is an
// io.Reader; io.Copy uses WriteTo instead.
func (r *Region) Read(p []byte) (int, error) {
	if r.read >= r.Length {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.Length-r.read)]
	var n int
	err := r.seg.Region(func(f vfs.File, size int64) error {
		if r.Position+r.Length > size {
			return fmt.Errorf("%w: the region was truncated", ErrOffsetOutOfRange)
		}
		var err error
		n, err = f.ReadAt(p, r.Position+r.read)
		return err
	})
	r.read += int64(n)
	return n, r.mapErr(err)
}

func (r *Region) mapErr(err error) error {
	if errors.Is(err, segment.ErrDeleted) {
		return fmt.Errorf("%w: the segment was deleted", ErrOffsetOutOfRange)
	}
	return err
}

// WriteTo writes the rest of the region to w. When w is a socket (a
// syscall.Conn) the bytes go with sendfile(2), file to socket, never
// through user space; otherwise they are copied. It works on its own
// descriptor of the segment file, so a slow consumer never holds up the
// log: a segment deleted meanwhile is still sent whole; one truncated
// since ReadRegion gives ErrOffsetOutOfRange.
func (r *Region) WriteTo(w io.Writer) (int64, error) {
	if r.read >= r.Length {
		return 0, nil
	}
	f, size, err := r.seg.DupFile()
	if err != nil {
		return 0, r.mapErr(err)
	}
	defer f.Close()
	if r.Position+r.Length > size || r.truncated() {
		return 0, fmt.Errorf("%w: the region was truncated", ErrOffsetOutOfRange)
	}
	var written int64
	pos, length := r.Position+r.read, r.Length-r.read
	if sc, ok := w.(syscall.Conn); ok {
		n, err, handled := sendfile(sc, f, pos, length)
		written += n
		if err == nil && handled && r.truncated() {
			err = fmt.Errorf("%w: the region was truncated while it was sent", ErrOffsetOutOfRange)
		}
		if err != nil || handled {
			r.read += written
			return written, err
		}
	}
	n, err := io.Copy(w, io.NewSectionReader(f, pos+written, length-written))
	written += n
	r.read += written
	if err == nil && (written < length || r.truncated()) {
		err = fmt.Errorf("%w: the region was truncated while it was sent", ErrOffsetOutOfRange)
	}
	return written, err
}

// truncated reports whether the log was truncated since ReadRegion: the
// bytes at the region's position may be another leader's now.
func (r *Region) truncated() bool { return r.log != nil && r.log.truncGen.Load() != r.gen }

// sendfile copies length bytes at pos of f to the socket with sendfile(2),
// at an explicit offset, so concurrent readers of the same file do not
// share a file position. handled is false when sendfile cannot be used
// (the rest is then copied by the caller).
func sendfile(dst syscall.Conn, f *os.File, pos, length int64) (written int64, err error, handled bool) {
	rc, err := dst.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	src, err := f.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	off := pos
	var werr error
	unsupported := false
	cerr := src.Control(func(sfd uintptr) {
		err = rc.Write(func(dfd uintptr) bool {
			for written < length {
				n, e := syscall.Sendfile(int(dfd), int(sfd), &off, int(min(length-written, 1<<30)))
				if n > 0 {
					written += int64(n)
				}
				switch {
				case e == syscall.EAGAIN:
					return false // wait until the socket is writable
				case e == syscall.EINTR:
					continue
				case e == syscall.EINVAL || e == syscall.ENOSYS || e == syscall.EOPNOTSUPP:
					unsupported = true
					return true
				case e != nil:
					werr = e
					return true
				case n == 0:
					werr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
	})
	if cerr != nil {
		return written, nil, false
	}
	if unsupported {
		return written, nil, false
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		err = fmt.Errorf("storage: sendfile: %w", err)
	}
	return written, err, true
}
