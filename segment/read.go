package segment

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"syscall"

	"github.com/seglog/seglog/vfs"
)

// logReader reads the .log through pread (from the map when there is
// one). The caller holds s.mu.
type logReader struct{ s *Segment }

func (r logReader) ReadAt(p []byte, off int64) (int, error) {
	if err := r.s.pread(p, off); err != nil {
		return 0, fmt.Errorf("segment: read %s at %d: %w", r.s.LogPath(), off, err)
	}
	return len(p), nil
}

// scan starts sc over the .log's first size bytes, reading headers from
// the map when there is one. With a Window (a sequential scan: recovery,
// the tail) it reads with pread, which does not fault the whole file into
// this process. The caller holds s.mu.
func (s *Segment) scan(sc *Scanner, size int64, opts ScanOptions) {
	opts.File, opts.Limits = s.LogPath(), s.opts.Limits
	if opts.Window > 0 {
		sc.Reset(s.log, size, opts)
		return
	}
	sc.Reset(logReader{s}, size, opts)
}

// readHeader reads and checks the batch header at pos of a log of size
// bytes, and that the whole batch lies within it.
func (s *Segment) readHeader(pos, size int64) (Header, error) {
	var sc Scanner
	s.scan(&sc, size, ScanOptions{Start: pos})
	if !sc.Next() {
		if err := sc.Err(); err != nil {
			return Header{}, err
		}
		return Header{}, &CorruptError{File: s.LogPath(), Pos: pos, Err: fmt.Errorf("%w: no batch at the end of the file (%d)", ErrCorrupt, size)}
	}
	return sc.Header(), nil
}

// seekOffset advances sc to the batch that holds offset; io.EOF if none.
func seekOffset(sc *Scanner, offset int64) error {
	for sc.Next() {
		if sc.Header().LastOffset() >= offset {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}

// Find returns the position and header of the batch that holds offset: an
// index lookup, then a forward scan of batch headers. It returns io.EOF
// when offset is at or past NextOffset.
func (s *Segment) Find(offset int64) (int64, Header, error) {
	if err := s.acquire(); err != nil {
		return 0, Header{}, err
	}
	defer s.mu.RUnlock()
	return s.findLocked(offset)
}

func (s *Segment) findLocked(offset int64) (int64, Header, error) {
	size := s.size.Load()
	if offset >= s.next.Load() {
		return size, Header{}, io.EOF
	}
	// One pread of an index interval finds the batch (see ReadBatches).
	var sc Scanner
	s.scan(&sc, size, ScanOptions{Start: s.oidx.Lookup(offset).Position, Window: s.opts.IndexIntervalBytes + 2*HeaderSize})
	if err := seekOffset(&sc, offset); err != nil {
		return sc.End(), Header{}, err
	}
	return sc.Pos(), sc.Header(), nil
}

// FindTime returns the position and header of the first batch whose max
// timestamp is at or after ts, and io.EOF when there is none.
func (s *Segment) FindTime(ts int64) (int64, Header, error) {
	if err := s.acquire(); err != nil {
		return 0, Header{}, err
	}
	defer s.mu.RUnlock()
	// Entries with a timestamp below ts say that every record up to their
	// offset is older than ts: start after the last of them.
	from := s.base
	if ts > math.MinInt64 {
		if e, ok := s.tidx.Lookup(ts - 1); ok {
			from = e.Offset
		}
	}
	size := s.size.Load()
	pos, _, err := s.findLocked(from)
	if err != nil {
		return pos, Header{}, err
	}
	var sc Scanner
	s.scan(&sc, size, ScanOptions{Start: pos})
	for sc.Next() {
		if h := sc.Header(); h.MaxTimestamp >= ts {
			return sc.Pos(), h, nil
		}
	}
	if err := sc.Err(); err != nil {
		return sc.End(), Header{}, err
	}
	return size, Header{}, io.EOF
}

// FirstBatch returns the header of the segment's first batch, read from
// the .log; ok is false for an empty segment.
func (s *Segment) FirstBatch() (h Header, ok bool, err error) {
	if err := s.acquire(); err != nil {
		return Header{}, false, err
	}
	defer s.mu.RUnlock()
	size := s.size.Load()
	if size <= 0 {
		return Header{}, false, nil
	}
	var sc Scanner
	s.scan(&sc, size, ScanOptions{File: s.LogPath()})
	if !sc.Next() {
		return Header{}, false, sc.Err()
	}
	return sc.Header(), true, nil
}

// ReadAt reads len(p) bytes at pos of the .log, which must lie within the
// published size.
func (s *Segment) ReadAt(p []byte, pos int64) (int, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	if pos < 0 || pos+int64(len(p)) > s.size.Load() {
		return 0, fmt.Errorf("segment: read of %d bytes at %d past the end (%d) of %s: %w", len(p), pos, s.size.Load(), s.LogPath(), io.EOF)
	}
	if err := s.pread(p, pos); err != nil {
		return 0, err
	}
	return len(p), nil
}

// DupFile returns a new descriptor of the segment's .log (dup(2)) and the
// published size, for a zero-copy send that must not hold the segment's
// lock while a slow socket drains: the descriptor stays readable after the
// segment is closed or deleted; the caller closes it. A truncation after
// the call shows as a short read.
func (s *Segment) DupFile() (*os.File, int64, error) {
	if err := s.acquire(); err != nil {
		return nil, 0, err
	}
	defer s.mu.RUnlock()
	osf := s.log.OSFile()
	if osf == nil {
		return nil, 0, fmt.Errorf("segment: %s has no OS file to duplicate", s.LogPath())
	}
	rc, err := osf.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	var fd int
	var dupErr error
	if err := rc.Control(func(sfd uintptr) { fd, dupErr = syscall.Dup(int(sfd)) }); err != nil {
		return nil, 0, err
	}
	if dupErr != nil {
		return nil, 0, fmt.Errorf("segment: dup %s: %w", s.LogPath(), dupErr)
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), s.LogPath()), s.size.Load(), nil
}

// Region pins the segment's open .log for a short read: fn gets the
// file, and the segment cannot be closed, truncated or deleted until fn
// returns. Do not wait on anything slow in fn (see DupFile).
func (s *Segment) Region(fn func(f vfs.File, size int64) error) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	return fn(s.log, s.size.Load())
}

// ReadBatches reads whole batches starting with the one that holds offset,
// stopping before a batch whose base offset is at or past limit, at most
// maxBytes in all but always the first batch. It reuses dst's memory and
// returns the batches at its start. It locates the first batch with reads
// of one index interval, then preads the batches: a copy from the page
// cache that faults no page into this process's page tables, so reads of
// any pattern leave its RSS as it was. It returns io.EOF when offset is at
// or past NextOffset or limit.
func (s *Segment) ReadBatches(dst []byte, offset int64, maxBytes int, limit int64) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	size := s.size.Load()
	if offset >= s.next.Load() || offset >= limit {
		return nil, io.EOF
	}
	maxBytes = max(maxBytes, 1)
	opts := ScanOptions{File: s.LogPath(), Limits: s.opts.Limits, Start: s.oidx.Lookup(offset).Position}
	var sc Scanner
	opts.Window, opts.Buf = s.opts.IndexIntervalBytes+2*HeaderSize, dst
	s.scan(&sc, size, opts)
	if err := seekOffset(&sc, offset); err != nil {
		return nil, err
	}
	first := sc.Pos()
	n := max(int64(sc.Header().Size()), min(int64(maxBytes), size-first))
	var buf []byte
	var err error
	if w, ok := sc.buffered(first, n); ok {
		// Small reads: the window that found the batch holds it.
		buf = sc.buf[:n]
		copy(buf, w)
	} else if buf, err = s.readInto(sc.buf, first, n); err != nil {
		return nil, err
	}
	sc.Reset(nil, n, ScanOptions{File: s.LogPath(), Limits: s.opts.Limits, Buf: buf})
	sc.Next() // the first batch, whole in buf: checked by seekOffset
	return buf[:takeBatches(&sc, maxBytes, limit)], nil
}

// takeBatches extends a read from sc's current batch over the batches that
// follow while they start below limit and fit in maxBytes; it returns the
// bytes from the current batch's start. A batch cut by the end of sc's
// input ends the read (a fetch's buffer holds part of the next batch).
func takeBatches(sc *Scanner, maxBytes int, limit int64) int64 {
	n, _ := spanBatches(sc, maxBytes, limit)
	return n
}

// spanBatches is takeBatches, also returning the offset after the last
// batch taken.
func spanBatches(sc *Scanner, maxBytes int, limit int64) (n, next int64) {
	first, end, next := sc.Pos(), sc.End(), sc.Header().NextOffset()
	for sc.Next() {
		if sc.Header().BaseOffset >= limit || sc.End()-first > int64(maxBytes) {
			break
		}
		end, next = sc.End(), sc.Header().NextOffset()
	}
	return end - first, next
}

// Span is where a read's batches lie in the .log, for a zero-copy send.
type Span struct {
	Position    int64 // of the first batch
	Length      int64 // bytes of whole batches
	FirstOffset int64 // base offset of the first batch
	NextOffset  int64 // offset after the last batch
}

// Span locates the batches a ReadBatches with the same arguments would
// return, reading only their headers.
func (s *Segment) Span(offset int64, maxBytes int, limit int64) (Span, error) {
	if err := s.acquire(); err != nil {
		return Span{}, err
	}
	defer s.mu.RUnlock()
	if offset >= s.next.Load() || offset >= limit {
		return Span{}, io.EOF
	}
	var sc Scanner
	s.scan(&sc, s.size.Load(), ScanOptions{Start: s.oidx.Lookup(offset).Position})
	if err := seekOffset(&sc, offset); err != nil {
		return Span{}, err
	}
	sp := Span{Position: sc.Pos(), FirstOffset: sc.Header().BaseOffset}
	sp.Length, sp.NextOffset = spanBatches(&sc, max(maxBytes, 1), limit)
	return sp, nil
}

// readInto preads n bytes at pos into dst's memory.
func (s *Segment) readInto(dst []byte, pos, n int64) ([]byte, error) {
	if int64(cap(dst)) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	if _, err := s.log.ReadAt(dst, pos); err != nil {
		return nil, fmt.Errorf("segment: read %s at %d: %w", s.LogPath(), pos, err)
	}
	return dst, nil
}

// NoRecordError says that the batch holding an offset has no data record
// at or after it: a control batch (transaction markers, which record
// readers skip), or a compacted batch whose last records are gone. The
// next record, if any, is at Next or later.
type NoRecordError struct {
	Offset, Next int64
}

func (e *NoRecordError) Error() string {
	return fmt.Sprintf("segment: no data record at or after offset %d in its batch (next batch at %d)", e.Offset, e.Next)
}

// ReadRecord returns the record at offset: the first data record at or
// after it in the batch that holds it (the same record unless the batch's
// offsets are not dense), or a *NoRecordError when there is none (a
// control batch). In an uncompressed batch of at
// least an index interval it preads only that record, at the position the
// Budget's point cache keeps for it (see pointCache); the first point read
// of a batch reads the batch whole, verifies it and caches where its
// records are. Segments without a
// Budget, and compressed batches, read the batch whole, verify and decode
// it. The record's slices alias the returned buffer, which is buf's memory
// when it is large enough. It returns io.EOF when offset is at or past
// NextOffset.
func (s *Segment) ReadRecord(buf []byte, offset int64) (Record, []byte, error) {
	if err := s.acquire(); err != nil {
		return Record{}, buf, err
	}
	defer s.mu.RUnlock()
	// A batch that starts at the offset's index entry (a batch of at
	// least an index interval) is found in the point cache without a
	// read.
	at := s.oidx.Lookup(offset).Position
	b := s.opts.Budget
	if b != nil && offset < s.next.Load() {
		if e, ok := b.points.get(pointKey{s, at, s.cuts.Load()}); ok && e.h.BaseOffset <= offset && offset <= e.h.LastOffset() {
			return s.readPoint(buf, at, e.h, e.starts, offset)
		}
	}
	pos, h, err := s.findLocked(offset)
	if err != nil {
		return Record{}, buf, err
	}
	if h.IsControl() {
		return Record{}, buf, &NoRecordError{Offset: offset, Next: h.NextOffset()}
	}
	batch, err := s.readInto(buf, pos, int64(h.Size()))
	if err != nil {
		return Record{}, buf, err
	}
	var it RecordIter
	if err := it.Reset(batch, s.opts.Limits); err != nil {
		return Record{}, batch, &CorruptError{File: s.LogPath(), Pos: pos, Err: err}
	}
	if b != nil && pos == at && h.Codec() == CodecNone && h.Offsets() == int64(h.RecordCount) {
		if starts, err := recordStarts(batch[h.HeaderLen():], h); err == nil {
			b.points.put(pointKey{s, pos, s.cuts.Load()}, pointBatch{h, starts})
		}
	}
	for it.Next() {
		if r := it.Record(); r.Offset >= offset {
			return *r, batch, nil
		}
	}
	if err := it.Err(); err != nil {
		return Record{}, batch, &CorruptError{File: s.LogPath(), Pos: pos, Err: err}
	}
	if h.Offsets() != int64(h.RecordCount) {
		return Record{}, batch, &NoRecordError{Offset: offset, Next: h.NextOffset()}
	}
	return Record{}, batch, &CorruptError{File: s.LogPath(), Pos: pos, Err: fmt.Errorf("%w: offset %d not in its batch", ErrCorrupt, offset)}
}

// readPoint preads the record at offset of the uncompressed batch at pos,
// whose records start at starts (relative to the end of its header), and
// decodes it, checking its lengths and offset.
func (s *Segment) readPoint(buf []byte, pos int64, h Header, starts []uint32, offset int64) (Record, []byte, error) {
	k := offset - h.BaseOffset
	if k < 0 || k >= int64(len(starts)-1) {
		return Record{}, buf, &CorruptError{File: s.LogPath(), Pos: pos, Err: fmt.Errorf("%w: offset %d not among the batch's %d records", ErrCorrupt, offset, len(starts)-1)}
	}
	lo, hi := int64(starts[k]), int64(starts[k+1])
	buf, err := s.readInto(buf, pos+int64(h.HeaderLen())+lo, hi-lo)
	if err != nil {
		return Record{}, buf, err
	}
	rec, err := decodePoint(buf, h, offset)
	if err != nil {
		return Record{}, buf, &CorruptError{File: s.LogPath(), Pos: pos, Err: err}
	}
	return rec, buf, nil
}

// decodePoint decodes b, one whole record (its length prefix included) of
// an uncompressed batch with header h, which must be the record at offset.
func decodePoint(b []byte, h Header, offset int64) (Record, error) {
	k := offset - h.BaseOffset
	it := RecordIter{hdr: h, data: b, i: int32(k), prev: k - 1}
	if err := it.decode(); err != nil {
		return Record{}, err
	}
	if it.rec.Offset != offset {
		return Record{}, fmt.Errorf("%w: record %d of the batch has offset %d", ErrCorrupt, k, it.rec.Offset)
	}
	rec := it.rec
	rec.Headers = slices.Clone(rec.Headers)
	return rec, nil
}

// recordStarts returns where each record of section, the uncompressed
// records of a batch with header h whose offsets are dense, starts (its
// length prefix), and where the last one ends: one more position than
// records.
func recordStarts(section []byte, h Header) ([]uint32, error) {
	// Every record takes at least one byte: a count beyond the section
	// is damage (and must not size the allocation).
	count := int(h.RecordCount)
	if count <= 0 || count > len(section) || len(section) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: bad record count %d", ErrCorrupt, h.RecordCount)
	}
	starts := make([]uint32, 0, count+1)
	p := 0
	for i := 0; i < count; i++ {
		n, w := binary.Uvarint(section[p:])
		if h.Version != VersionV1 {
			// Kafka's record length is a zigzag varint.
			n = n>>1 ^ -(n & 1)
		}
		if w <= 0 || n > uint64(len(section)-p-w) {
			return nil, fmt.Errorf("%w: record %d: bad length", ErrCorrupt, i)
		}
		starts = append(starts, uint32(p))
		p += w + int(n)
	}
	return append(starts, uint32(p)), nil
}
