package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/seglog/seglog/segment"
)

// batchWalk walks the batches of a .log read through an io.ReaderAt,
// read-only, with the library's scanner (segment.NewScanner frames each
// batch by its header) and checks each whole batch with segment.Verify.
// Memory is bounded by the largest batch the limits allow.
//
// Damage that stops the walk (a header that does not parse, a batch that
// runs past the end of the file) is Err, a *segment.CorruptError with the
// position. A batch whose header is sound but whose checksum is not is
// returned with VerifyErr set, and the walk goes on: its length field
// still frames the next batch.
type batchWalk struct {
	path  string
	sc    *segment.Scanner
	err   error // reading the current batch failed
	errAt int64 // where that batch starts

	// The current batch.
	Pos       int64
	Header    segment.Header
	Batch     []byte // valid until the next call to Next
	VerifyErr error
}

// newBatchWalk walks the batches of the .log at path, size bytes of r.
// For a file named like a segment (named, base its base offset), the
// scanner also checks that offsets follow on from base, as recovery's
// scan does: a batch that does not is damage that stops the walk.
func newBatchWalk(r io.ReaderAt, size int64, path string, base int64, named bool) *batchWalk {
	return &batchWalk{path: path, sc: segment.NewScanner(r, size, segment.ScanOptions{File: path, Window: 256 << 10, CheckOffsets: named, FirstOffset: base})}
}

// Next advances to the next batch; false at the end of the file or at
// damage (see Err).
func (w *batchWalk) Next() bool {
	if w.err != nil || !w.sc.Next() {
		return false
	}
	b, err := w.sc.Batch()
	if err != nil {
		w.err, w.errAt = err, w.sc.Pos()
		return false
	}
	w.Pos, w.Header, w.Batch = w.sc.Pos(), w.sc.Header(), b
	_, w.VerifyErr = segment.Verify(b, segment.DefaultLimits)
	return true
}

// Err returns the damage or I/O error that stopped the walk.
func (w *batchWalk) Err() error {
	if w.err != nil {
		return w.err
	}
	return w.sc.Err()
}

// End returns the position after the last batch returned: where the walk
// stopped.
func (w *batchWalk) End() int64 {
	if w.err != nil {
		return w.errAt
	}
	return w.sc.End()
}

// segmentBase returns the base offset in a segment file's name.
func segmentBase(path string) (int64, bool) {
	name := filepath.Base(path)
	for _, suf := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		if strings.HasSuffix(name, suf) {
			return segment.ParseFileName(name, suf)
		}
	}
	return 0, false
}

// siblingPath returns the path of the segment file with another suffix.
func siblingPath(path, suffix string) string {
	for _, suf := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		if strings.HasSuffix(path, suf) {
			return strings.TrimSuffix(path, suf) + suffix
		}
	}
	return path + suffix
}

// maxIndexFileBytes bounds what is read of an index file: far above any
// configured MaxIndexBytes, far below what would hurt.
const maxIndexFileBytes = 1 << 30

// fileErr words an error about a file for an operator: a missing file
// says missing.
func fileErr(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return missingError(path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", path)
	}
	return fmt.Errorf("%s: %w", path, unwrapPathErr(err))
}

// missingError is a file that does not exist.
type missingError string

// Error names the file.
func (m missingError) Error() string { return string(m) + ": missing (no such file or directory)" }

// Unwrap makes errors.Is(err, fs.ErrNotExist) hold.
func (m missingError) Unwrap() error { return fs.ErrNotExist }

// readSmallFile reads a whole file, read-only, refusing one over
// maxIndexFileBytes. It reads to the end of the file rather than to the
// size it had when opened: a writer trims an active index to its used
// entries when it rolls or closes, maybe while this reads. Errors name the
// path.
func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileErr(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileErr(path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Size() > maxIndexFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d this tool reads", path, fi.Size(), maxIndexFileBytes)
	}
	b := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := b.ReadFrom(io.LimitReader(f, maxIndexFileBytes+1)); err != nil {
		return nil, fmt.Errorf("%s: read: %w", path, err)
	}
	if b.Len() > maxIndexFileBytes {
		return nil, fmt.Errorf("%s: more than the %d bytes this tool reads", path, maxIndexFileBytes)
	}
	// A writer that trimmed the file while it was read leaves bytes read
	// past its new end: keep what the file holds now.
	if fi, err := f.Stat(); err == nil && fi.Size() < int64(b.Len()) {
		b.Truncate(int(fi.Size()))
	}
	return b.Bytes(), nil
}

// openLogFile opens a .log read-only and returns it with its size.
func openLogFile(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fileErr(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fileErr(path, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: is a directory", path)
	}
	return f, fi.Size(), nil
}

// readerAtBytes is a byte slice read like a file.
type readerAtBytes []byte

// ReadAt reads len(p) bytes at off, like a file.
func (b readerAtBytes) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, fmt.Errorf("read at %d: %w", off, os.ErrInvalid)
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
