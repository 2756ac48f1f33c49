package segment

import (
	"errors"
	"fmt"
	"io"
)

// Scanner walks batches one header at a time: those of a .log file (an
// io.ReaderAt, read through a window) or of a buffer of whole batches (a
// read's result). It is the one batch walk of the module: recovery, the
// tail of an open, lookups, reads, tools and benchmarks all use it.
//
//	sc := segment.NewScanner(f, size, segment.ScanOptions{File: path, Verify: true})
//	for sc.Next() {
//		h, pos := sc.Header(), sc.Pos()
//		...
//	}
//	if err := sc.Err(); err != nil {
//		// a *CorruptError at the first invalid batch (its Pos is where a
//		// recovery cuts), or an I/O error
//	}
//
// Every length is checked against what remains and against the limits
// before anything is read or allocated.
type Scanner struct {
	r      io.ReaderAt // nil: buf is the whole input
	size   int64       // bytes of input, from position 0
	opts   ScanOptions
	buf    []byte // the input from bufPos on (a window of r, or all of it)
	bufPos int64

	pos      int64 // where the next batch starts
	h        Header
	batchPos int64
	next     int64 // offset the next batch must start at; -1: not checked
	nextOff  int64 // offset after the last batch scanned (FirstOffset before)
	err      error
}

// ScanOptions configure a Scanner. The zero value scans headers only from
// position 0, checking nothing but each header and that each batch lies
// within the input.
type ScanOptions struct {
	// File names the input in errors.
	File string
	// Limits bound the batches (default DefaultLimits).
	Limits Limits
	// Start is the position of the first batch.
	Start int64
	// Verify reads every batch whole and checks its checksum.
	Verify bool
	// FirstOffset, when CheckOffsets is set, is the base offset the
	// first batch must have; each later batch must start where the one
	// before ended.
	FirstOffset  int64
	CheckOffsets bool
	// Window is how many bytes one read of a ReaderAt fetches at least
	// (a sequential scan reads ahead; a lookup reads a header at a time).
	// Zero: a header, or a whole batch when it is needed.
	Window int
	// Buf is memory to reuse for the window.
	Buf []byte
}

// NewScanner scans the batches of r, which holds size bytes.
func NewScanner(r io.ReaderAt, size int64, opts ScanOptions) *Scanner {
	sc := &Scanner{}
	sc.Reset(r, size, opts)
	return sc
}

// Reset makes sc a new scanner of r, which holds size bytes (of opts.Buf
// when r is nil), for callers that keep a Scanner in a variable: no
// allocation.
func (sc *Scanner) Reset(r io.ReaderAt, size int64, opts ScanOptions) {
	buf := opts.Buf
	if r != nil {
		buf = buf[:0]
	}
	*sc = Scanner{r: r, size: size, opts: opts, buf: buf, pos: opts.Start, next: -1, nextOff: opts.FirstOffset}
	sc.opts.Limits = opts.Limits.withDefaults()
	if opts.CheckOffsets {
		sc.next = opts.FirstOffset
	}
}

// ScanBuffer scans the batches in b (from opts.Start), without copying;
// opts.Buf is ignored.
func ScanBuffer(b []byte, opts ScanOptions) *Scanner {
	sc := &Scanner{}
	sc.ResetBuffer(b, opts)
	return sc
}

// ResetBuffer makes sc a new scanner of the batches in b, like ScanBuffer.
func (sc *Scanner) ResetBuffer(b []byte, opts ScanOptions) {
	opts.Buf = b
	sc.Reset(nil, int64(len(b)), opts)
}

// Next advances to the next batch and reports whether there is one: false
// at the end of the input or at the first invalid batch (see Err).
func (sc *Scanner) Next() bool {
	if sc.err != nil || sc.pos >= sc.size {
		return false
	}
	pos := sc.pos
	if left := sc.size - pos; left < HeaderSize {
		return sc.corrupt(pos, fmt.Errorf("%w: %d bytes left, less than a batch header", ErrCorrupt, left))
	}
	b, err := sc.window(pos, HeaderSize)
	if err != nil {
		sc.err = err
		return false
	}
	h, err := ParseHeader(b, sc.opts.Limits)
	if err != nil {
		return sc.corrupt(pos, err)
	}
	if pos+int64(h.Size()) > sc.size {
		return sc.corrupt(pos, fmt.Errorf("%w: batch of %d bytes runs past the end of the file (%d)", ErrCorrupt, h.Size(), sc.size))
	}
	if sc.next >= 0 && h.BaseOffset != sc.next {
		return sc.corrupt(pos, fmt.Errorf("%w: batch base offset %d, expected %d", ErrCorrupt, h.BaseOffset, sc.next))
	}
	if sc.opts.Verify {
		b, err := sc.window(pos, int64(h.Size()))
		if err != nil {
			sc.err = err
			return false
		}
		if _, err := Verify(b, sc.opts.Limits); err != nil {
			return sc.corrupt(pos, err)
		}
	}
	if sc.next >= 0 {
		sc.next = h.NextOffset()
	}
	sc.nextOff = h.NextOffset()
	sc.h, sc.batchPos, sc.pos = h, pos, pos+int64(h.Size())
	return true
}

func (sc *Scanner) corrupt(pos int64, err error) bool {
	sc.err = &CorruptError{File: sc.opts.File, Pos: pos, Err: err}
	return false
}

// window returns the n input bytes at pos, reading them if the window does
// not hold them. The caller has checked that they lie within the input.
func (sc *Scanner) window(pos, n int64) ([]byte, error) {
	if b, ok := sc.buffered(pos, n); ok {
		return b, nil
	}
	if sc.r == nil {
		// A buffer holds all of its input: out of it is past the end,
		// which Next checks first.
		return nil, fmt.Errorf("segment: scan of %s: %d bytes at %d past the end of the buffer", sc.opts.File, n, pos)
	}
	want := min(max(n, int64(sc.opts.Window)), sc.size-pos)
	if int64(cap(sc.buf)) < want {
		sc.buf = make([]byte, want)
	}
	sc.buf = sc.buf[:want]
	if k, err := sc.r.ReadAt(sc.buf, pos); err != nil && !(errors.Is(err, io.EOF) && k == len(sc.buf)) {
		sc.buf, sc.bufPos = sc.buf[:0], 0
		return nil, fmt.Errorf("segment: read %s at %d: %w", sc.opts.File, pos, err)
	}
	sc.bufPos = pos
	return sc.buf[:n], nil
}

// buffered returns the n input bytes at pos if the scanner's buffer holds
// them, without reading.
func (sc *Scanner) buffered(pos, n int64) ([]byte, bool) {
	if pos >= sc.bufPos && pos+n <= sc.bufPos+int64(len(sc.buf)) {
		return sc.buf[pos-sc.bufPos : pos-sc.bufPos+n], true
	}
	return nil, false
}

// Header returns the current batch's header.
func (sc *Scanner) Header() Header { return sc.h }

// Pos returns the current batch's position.
func (sc *Scanner) Pos() int64 { return sc.batchPos }

// End returns the position after the last batch scanned: where a scan that
// stopped at an invalid batch cuts, and the valid length of the input.
func (sc *Scanner) End() int64 {
	if sc.h.Length == 0 {
		return sc.opts.Start
	}
	return sc.batchPos + int64(sc.h.Size())
}

// NextOffset returns the offset after the last batch scanned, or
// FirstOffset before the first.
func (sc *Scanner) NextOffset() int64 { return sc.nextOff }

// Batch returns the current batch's bytes, reading them if needed. They
// are valid until the next call of Next or Batch.
func (sc *Scanner) Batch() ([]byte, error) {
	return sc.window(sc.batchPos, int64(sc.h.Size()))
}

// Err returns the error that stopped the scan: nil at the end of the
// input, a *CorruptError (wrapping ErrCorrupt) at an invalid batch, or an
// I/O error.
func (sc *Scanner) Err() error { return sc.err }
