package segment

import (
	"errors"
	"io"
)

// OpenFollow opens, as a follower (read-only), the active segment of a log that another
// process is appending to: it changes nothing on disk. Its end is the last
// complete, valid batch found by scanning from the last index entry; a
// batch being written is simply not there yet. Refresh looks again.
func OpenFollow(dir string, base int64, opts Options) (*Segment, error) {
	s := newSegment(dir, base, opts)
	s.follow = true
	s.lastPos = -1
	s.size.Store(0)
	if _, err := s.Refresh(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Shrunk reports whether the writer truncated a followed segment (OpenFollow)
// under this view: the file is shorter than what the view has read, or the
// last batch it read is no longer there (truncated, then written again, or
// zeros: truncated, then preallocated again). A file longer than the data
// says nothing: the writer preallocates.
func (s *Segment) Shrunk() (bool, error) {
	size, err := s.acquireStat()
	if err != nil {
		return false, err
	}
	defer s.mu.RUnlock()
	if size < s.size.Load() {
		return true, nil
	}
	s.refreshMu.Lock()
	pos, sum := s.lastPos, s.lastSum
	s.refreshMu.Unlock()
	if pos < 0 {
		return false, nil
	}
	var hb [MaxHeaderSize]byte
	n, err := s.log.ReadAt(hb[:], pos)
	if n < HeaderSize || (err != nil && !errors.Is(err, io.EOF)) {
		return true, nil
	}
	h, err := ParseHeader(hb[:n], s.opts.Limits)
	return err != nil || h.Checksum != sum, nil
}

// Refresh extends a followed segment (OpenFollow) over the complete batches the
// writer has appended since, and reports whether it grew.
func (s *Segment) Refresh() (bool, error) {
	size, err := s.acquireStat()
	if err != nil {
		return false, err
	}
	defer s.mu.RUnlock()
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	pos, next := s.size.Load(), s.next.Load()
	if pos == 0 {
		if p, n, err := s.indexedStart(size); err == nil && p < size {
			pos, next = p, n
		}
	}
	// A batch being written, or one not ours to judge, ends the scan:
	// it is looked at again by the next Refresh.
	var sc Scanner
	// The writer preallocates: its file size is not its data's end, and
	// a zeroed header is where it has not written yet.
	s.scan(&sc, size, ScanOptions{Start: pos, Verify: true, CheckOffsets: true, FirstOffset: next, Window: tailWindow, zeroHeaderEnds: true})
	grew := false
	for sc.Next() {
		h := sc.Header()
		s.noteBatch(h)
		s.lastPos, s.lastSum = sc.Pos(), h.Checksum
		pos, next = sc.End(), h.NextOffset()
		grew = true
	}
	if grew {
		s.size.Store(pos)
		s.next.Store(next)
	}
	return grew, nil
}
