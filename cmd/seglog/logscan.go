package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
)

// logScanner walks the batches of a .log read through an io.ReaderAt,
// read-only, with the library's decoders: segment.ParseHeader for each
// header and segment.Verify for each whole batch. Memory is bounded by the
// largest batch the limits allow.
//
// Damage that stops the walk (a header that does not parse, a batch that
// runs past the end of the file) is Err, a *segment.CorruptError with the
// position. A batch whose header is sound but whose checksum is not is
// returned with VerifyErr set, and the walk goes on: its length field
// still frames the next batch.
type logScanner struct {
	r    io.ReaderAt
	size int64
	path string
	lim  segment.Limits

	pos int64
	buf []byte
	err error

	// Current batch.
	Pos       int64
	Header    segment.Header
	Batch     []byte // valid until the next call to Next
	VerifyErr error
}

func newLogScanner(r io.ReaderAt, size int64, path string) *logScanner {
	return &logScanner{r: r, size: size, path: path, lim: segment.DefaultLimits}
}

// Next advances to the next batch; false at the end of the file or at
// damage (see Err).
func (s *logScanner) Next() bool {
	if s.err != nil || s.pos >= s.size {
		return false
	}
	pos := s.pos
	left := s.size - pos
	if left < segment.HeaderSize {
		s.err = &segment.CorruptError{File: s.path, Pos: pos, Err: fmt.Errorf("%w: %d bytes at the end of the file, less than a %d-byte batch header (a torn write?)", segment.ErrCorrupt, left, segment.HeaderSize)}
		return false
	}
	if cap(s.buf) < segment.HeaderSize {
		s.buf = make([]byte, segment.HeaderSize, 64<<10)
	}
	hb := s.buf[:segment.HeaderSize]
	if _, err := s.r.ReadAt(hb, pos); err != nil {
		s.err = fmt.Errorf("read %s at byte %d: %w", s.path, pos, err)
		return false
	}
	h, err := segment.ParseHeader(hb, s.lim)
	if err != nil {
		s.err = &segment.CorruptError{File: s.path, Pos: pos, Err: err}
		return false
	}
	n := int64(h.Size())
	if n > left {
		s.err = &segment.CorruptError{File: s.path, Pos: pos, Err: fmt.Errorf("%w: batch of %d bytes runs past the end of the file (%d bytes left)", segment.ErrCorrupt, n, left)}
		return false
	}
	if int64(cap(s.buf)) < n {
		// Grow, keeping the header already read into the old buffer.
		nb := make([]byte, n)
		copy(nb, hb)
		s.buf = nb
	}
	b := s.buf[:n]
	if _, err := s.r.ReadAt(b[segment.HeaderSize:], pos+segment.HeaderSize); err != nil {
		s.err = fmt.Errorf("read %s at byte %d: %w", s.path, pos+segment.HeaderSize, err)
		return false
	}
	_, verr := segment.Verify(b, s.lim)
	s.Pos, s.Header, s.Batch, s.VerifyErr = pos, h, b, verr
	s.pos = pos + n
	return true
}

// Err returns the damage or I/O error that stopped the walk.
func (s *logScanner) Err() error { return s.err }

// End returns the position after the last batch returned.
func (s *logScanner) End() int64 { return s.pos }

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

// indexChecker checks a segment's two indexes against its batches, fed
// one batch at a time as the .log is scanned:
//   - the files decode (whole entries) and their used entries (before the
//     first all-zero one; an active index is preallocated with zeros)
//     strictly increase in both fields, with nothing but zeros after;
//   - every offset-index entry is the position of a batch start whose
//     base offset is the entry's offset;
//   - every time-index entry names the base offset of a batch, and its
//     timestamp is that batch's max timestamp and the largest timestamp of
//     the segment up to that batch (what a time lookup relies on).
type indexChecker struct {
	oPath, tPath string
	offs         []index.OffsetPosition
	times        []index.TimeOffset
	byPos        map[int64]int
	byOff        map[int64]int
	oSeen, tSeen []bool
	maxTS        int64
	haveMax      bool
	problems     []string
}

// loadIndexChecker reads the indexes of the segment whose .log is logPath
// and logSize bytes long. Files that do not exist or do not decode are
// problems, not errors, except that a segment never appended to (an empty
// .log) needs no index files: the log creates them with its first batch.
func loadIndexChecker(logPath string, base, logSize int64) *indexChecker {
	c := &indexChecker{
		oPath: siblingPath(logPath, segment.IndexSuffix),
		tPath: siblingPath(logPath, segment.TimeIndexSuffix),
		byPos: map[int64]int{},
		byOff: map[int64]int{},
	}
	missingOK := func(err error) bool { return logSize == 0 && errors.Is(err, os.ErrNotExist) }
	if b, err := readSmallFile(c.oPath); err != nil {
		if !missingOK(err) {
			c.problemf("%v", err)
		}
	} else {
		all, err := index.DecodeOffsetEntries(b, base)
		if err != nil {
			c.problemf("%s: %v", c.oPath, err)
		}
		used, tailErr := usedOffsetEntries(all, base)
		if tailErr != "" {
			c.problemf("%s: %s", c.oPath, tailErr)
		}
		c.offs = used
		for i, e := range used {
			if i > 0 && (e.Offset <= used[i-1].Offset || e.Position <= used[i-1].Position) {
				c.problemf("%s: entry %d {offset %d, position %d} does not follow entry %d {offset %d, position %d}", c.oPath, i, e.Offset, e.Position, i-1, used[i-1].Offset, used[i-1].Position)
			}
			c.byPos[e.Position] = i
		}
	}
	if b, err := readSmallFile(c.tPath); err != nil {
		if !missingOK(err) {
			c.problemf("%v", err)
		}
	} else {
		all, err := index.DecodeTimeEntries(b, base)
		if err != nil {
			c.problemf("%s: %v", c.tPath, err)
		}
		used, tailErr := usedTimeEntries(all, base)
		if tailErr != "" {
			c.problemf("%s: %s", c.tPath, tailErr)
		}
		c.times = used
		for i, e := range used {
			if i > 0 && (e.Offset <= used[i-1].Offset || e.Timestamp <= used[i-1].Timestamp) {
				c.problemf("%s: entry %d {timestamp %d, offset %d} does not follow entry %d {timestamp %d, offset %d}", c.tPath, i, e.Timestamp, e.Offset, i-1, used[i-1].Timestamp, used[i-1].Offset)
			}
			c.byOff[e.Offset] = i
		}
	}
	c.oSeen = make([]bool, len(c.offs))
	c.tSeen = make([]bool, len(c.times))
	return c
}

func (c *indexChecker) problemf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// batch checks the entries that refer to the batch at pos.
func (c *indexChecker) batch(pos int64, h segment.Header) {
	if !c.haveMax || h.MaxTimestamp > c.maxTS {
		c.maxTS, c.haveMax = h.MaxTimestamp, true
	}
	if i, ok := c.byPos[pos]; ok {
		c.oSeen[i] = true
		if e := c.offs[i]; e.Offset != h.BaseOffset {
			c.problemf("%s: entry %d {offset %d, position %d}: the batch at position %d has base offset %d", c.oPath, i, e.Offset, e.Position, pos, h.BaseOffset)
		}
	}
	if i, ok := c.byOff[h.BaseOffset]; ok {
		c.tSeen[i] = true
		e := c.times[i]
		switch {
		case e.Timestamp != h.MaxTimestamp:
			c.problemf("%s: entry %d {timestamp %d, offset %d}: that batch's max timestamp is %d", c.tPath, i, e.Timestamp, e.Offset, h.MaxTimestamp)
		case e.Timestamp != c.maxTS:
			c.problemf("%s: entry %d {timestamp %d, offset %d}: an earlier batch has the larger timestamp %d", c.tPath, i, e.Timestamp, e.Offset, c.maxTS)
		}
	}
}

// dropPastEnd sets aside the entries that refer to data past what was
// scanned: a position at or after scanned (bytes), an offset at or after
// next (the offset after the last batch scanned). It returns how many
// there were. Those entries are what a writer appending meanwhile, or
// interrupted by a crash, leaves at the end of its active segment.
func (c *indexChecker) dropPastEnd(scanned, next int64) int {
	n := 0
	for i, seen := range c.oSeen {
		if !seen && c.offs[i].Position >= scanned {
			c.oSeen[i] = true
			n++
		}
	}
	for i, seen := range c.tSeen {
		if !seen && c.times[i].Offset >= next {
			c.tSeen[i] = true
			n++
		}
	}
	return n
}

// finish reports the entries that matched no batch; scanned is how many
// bytes of the log were scanned (up to any damage).
func (c *indexChecker) finish(scanned int64) {
	for i, seen := range c.oSeen {
		if !seen {
			e := c.offs[i]
			what := "is not the start of a batch"
			if e.Position >= scanned {
				what = fmt.Sprintf("is past the end of the valid log data (%d bytes)", scanned)
			}
			c.problemf("%s: entry %d {offset %d, position %d}: position %s", c.oPath, i, e.Offset, e.Position, what)
		}
	}
	for i, seen := range c.tSeen {
		if !seen {
			e := c.times[i]
			c.problemf("%s: entry %d {timestamp %d, offset %d}: offset %d is not the base offset of a batch in the log", c.tPath, i, e.Timestamp, e.Offset, e.Offset)
		}
	}
}

// usedOffsetEntries returns the entries before the first all-zero one and
// complains when anything but zeros follows it.
func usedOffsetEntries(all []index.OffsetPosition, base int64) ([]index.OffsetPosition, string) {
	for i, e := range all {
		if e.Offset == base && e.Position == 0 {
			for j := i + 1; j < len(all); j++ {
				if all[j].Offset != base || all[j].Position != 0 {
					return all[:i], fmt.Sprintf("entry %d is all zero (end of the used entries) but entry %d {offset %d, position %d} follows it", i, j, all[j].Offset, all[j].Position)
				}
			}
			return all[:i], ""
		}
	}
	return all, ""
}

func usedTimeEntries(all []index.TimeOffset, base int64) ([]index.TimeOffset, string) {
	for i, e := range all {
		if e.Offset == base && e.Timestamp == 0 {
			for j := i + 1; j < len(all); j++ {
				if all[j].Offset != base || all[j].Timestamp != 0 {
					return all[:i], fmt.Sprintf("entry %d is all zero (end of the used entries) but entry %d {timestamp %d, offset %d} follows it", i, j, all[j].Timestamp, all[j].Offset)
				}
			}
			return all[:i], ""
		}
	}
	return all, ""
}

// maxIndexFileBytes bounds what is read of an index file: far above any
// configured MaxIndexBytes, far below what would hurt.
const maxIndexFileBytes = 1 << 30

// readSmallFile reads a whole file, read-only, refusing one over
// maxIndexFileBytes. It reads to the end of the file rather than to the
// size it had when opened: a writer trims an active index to its used
// entries when it rolls or closes, maybe while this reads. Errors name the
// path.
func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathErr(err))
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
	return b.Bytes(), nil
}

// openLogFile opens a .log read-only and returns it with its size.
func openLogFile(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, unwrapPathErr(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w", path, unwrapPathErr(err))
	}
	if fi.IsDir() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: is a directory", path)
	}
	return f, fi.Size(), nil
}

// isCorrupt reports whether err is damage in the data (as opposed to an
// I/O error).
func isCorrupt(err error) bool {
	var ce *segment.CorruptError
	return errors.As(err, &ce) || errors.Is(err, segment.ErrCorrupt) || errors.Is(err, index.ErrCorrupt)
}
