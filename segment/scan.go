package segment

import (
	"encoding/binary"
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
	zeroTail bool // the scan ended at a zero tail (see Next)
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

	// zeroHeaderEnds ends the scan at a zeroed header without reading
	// what follows it: a follower, for which the writer's preallocated
	// tail is "not written yet" and anything after it is looked at again.
	zeroHeaderEnds bool
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
// at the end of the input, at a zero tail (a zeroed header with nothing
// but zeros after it: the unwritten, preallocated end of an active .log;
// see ZeroTail), or at the first invalid batch (see Err).
func (sc *Scanner) Next() bool {
	if sc.err != nil || sc.zeroTail || sc.pos >= sc.size {
		return false
	}
	pos := sc.pos
	left := sc.size - pos
	b, err := sc.window(pos, min(left, MaxHeaderSize))
	if err != nil {
		return sc.fail(err)
	}
	if allZero(b) {
		// A zeroed header is never a batch (version 0): zeros to the end
		// are a preallocated tail, the end of the data.
		end, err := sc.zerosToEnd(pos + int64(len(b)))
		if err != nil {
			return sc.fail(err)
		}
		if end {
			sc.zeroTail = true
			return false
		}
	}
	if left < HeaderSize {
		return sc.corrupt(pos, fmt.Errorf("%w: %d bytes left, less than a batch header", ErrCorrupt, left))
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
			return sc.fail(err)
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

// zeroScanChunk is how much of a zero tail one read checks at least.
const zeroScanChunk = 64 << 10

// zerosToEnd reports whether every input byte from pos on is zero (with
// zeroHeaderEnds, it takes that on trust).
func (sc *Scanner) zerosToEnd(pos int64) (bool, error) {
	if sc.opts.zeroHeaderEnds {
		return true, nil
	}
	chunk := max(int64(sc.opts.Window), zeroScanChunk)
	for pos < sc.size {
		b, err := sc.window(pos, min(chunk, sc.size-pos))
		if err != nil {
			return false, err
		}
		if !allZero(b) {
			return false, nil
		}
		pos += int64(len(b))
	}
	return true, nil
}

// allZero reports whether b holds only zero bytes.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// fail stops the scan at an I/O error. A file that ended before the
// input's size (another process cut it meanwhile: a writer trimming its
// preallocated tail when it rolls or closes) is scanned again from the
// same batch as that shorter input.
func (sc *Scanner) fail(err error) bool {
	if errors.Is(err, errInputEnded) {
		if sc.pos > sc.size && sc.h.Length != 0 {
			// A batch taken on its header alone is cut.
			return sc.corrupt(sc.batchPos, fmt.Errorf("%w: the file ends at or before byte %d, inside the batch at %d", ErrCorrupt, sc.size, sc.batchPos))
		}
		return sc.Next()
	}
	sc.err = err
	return false
}

// errInputEnded is window's error when the file ends before the input's
// size: sc.size was lowered to where it ends.
var errInputEnded = errors.New("segment: the file ends before the size scanned")

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
	k, err := sc.r.ReadAt(sc.buf, pos)
	k = max(0, min(k, len(sc.buf)))
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) && int64(k) < n:
		// The file is shorter than the input's size: another process
		// cut it (a writer trimming its preallocated tail). Its end is
		// the input's end from now on; nothing read at pos says whether
		// it ends at pos or before (fail narrows that down).
		end := pos + int64(k)
		if k == 0 && pos > 0 && !sc.readable(pos-1) {
			end = pos - 1
		}
		sc.buf, sc.bufPos, sc.size = sc.buf[:k], pos, min(sc.size, end)
		return nil, fmt.Errorf("%w: %s at %d", errInputEnded, sc.opts.File, end)
	case errors.Is(err, io.EOF):
		// A short read still serves the n bytes; the read-ahead was cut.
		sc.buf = sc.buf[:k]
	default:
		sc.buf, sc.bufPos = sc.buf[:0], 0
		return nil, fmt.Errorf("segment: read %s at %d: %w", sc.opts.File, pos, err)
	}
	sc.bufPos = pos
	return sc.buf[:n], nil
}

// readable reports whether the file has a byte at pos.
func (sc *Scanner) readable(pos int64) bool {
	var b [1]byte
	k, _ := sc.r.ReadAt(b[:], pos)
	return k == 1
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
// input (or at a zero tail, see ZeroTail), a *CorruptError (wrapping
// ErrCorrupt) at an invalid batch, or an I/O error.
func (sc *Scanner) Err() error { return sc.err }

// ZeroTail reports whether the scan ended at a zero tail: from End on, the
// input holds only zeros (the part of a preallocated .log not written
// yet). A zeroed header followed by anything else is corruption.
func (sc *Scanner) ZeroTail() bool { return sc.zeroTail }
