package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/seglog/seglog/segment"
)

// wakeWaiters wakes every goroutine in Wait; cheap when there are none.
func (l *Log) wakeWaiters() {
	if l.waiters.Load() == 0 {
		return
	}
	ch := make(chan struct{})
	old := l.notify.Swap(&ch)
	close(*old)
}

// Wait blocks until the log holds a record at offset (EndOffset > offset),
// the context is done, or the log is closed (ErrClosed). It does not poll:
// appends wake it. A broker's long-poll fetch calls it with a deadline.
func (l *Log) Wait(ctx context.Context, offset int64) error {
	return l.waitFor(ctx, func() bool { return l.end.Load() > offset })
}

// waitFor blocks until cond holds, rechecking it whenever the end offset
// or the high watermark moves.
func (l *Log) waitFor(ctx context.Context, cond func() bool) error {
	l.waiters.Add(1)
	defer l.waiters.Add(-1)
	// A read-only log has no appends in this process to wake it: it looks
	// at the files every readOnlyPoll instead.
	var poll <-chan time.Time
	if l.opts.ReadOnly {
		t := time.NewTicker(readOnlyPoll)
		defer t.Stop()
		poll = t.C
	}
	for {
		ch := *l.notify.Load()
		if cond() {
			return nil
		}
		if l.closed.Load() {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-poll:
			if _, err := l.Refresh(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readOnlyPoll is how often Wait on a read-only log looks for new data.
const readOnlyPoll = 50 * time.Millisecond

// MaxReadBytes caps the maxBytes of one read.
const MaxReadBytes = 64 << 20

// errCaughtUp is what inSegment returns for a read at the end.
var errCaughtUp = errors.New("caught up")

// inSegment runs read on the segment that holds offset, for a read bounded
// by limit (exclusive; read gets the bound, lowered to the end offset).
// When the segment list changes under it (a roll, a deletion, a
// truncation) it looks again, and the range check decides: below the
// start or beyond the end is ErrOffsetOutOfRange, at the end errCaughtUp.
func (l *Log) inSegment(offset, limit int64, read func(seg *segment.Segment, limit int64) error) error {
	for attempt := 0; ; attempt++ {
		if l.closed.Load() {
			return ErrClosed
		}
		start, end := l.start.Load(), l.end.Load()
		if offset < start || offset > end {
			return fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, start, end)
		}
		if offset >= min(end, limit) {
			return errCaughtUp
		}
		segsPtr, gen := l.segs.Load(), l.truncGen.Load()
		segs := *segsPtr
		if offset < segs[0].Base() {
			continue // segments were deleted from the front meanwhile
		}
		i := segmentIndex(segs, offset)
		err := read(segs[i], min(end, limit))
		if err == nil {
			return nil
		}
		if errors.Is(err, io.EOF) && i < len(segs)-1 && l.segs.Load() == segsPtr && l.truncGen.Load() == gen {
			// A sealed segment, unchanged, that ends before the offset
			// the next one begins at: a hole (or damage), not the end.
			if herr := l.checkSealedEnd(segs[i], segs[i+1].Base()); herr != nil {
				return fmt.Errorf("storage: read %s at offset %d: %w", l.dir, offset, herr)
			}
		}
		retry := errors.Is(err, segment.ErrDeleted) || errors.Is(err, segment.ErrClosed) || errors.Is(err, io.EOF)
		if !retry || attempt >= 100 {
			return fmt.Errorf("storage: read %s at offset %d: %w", l.dir, offset, err)
		}
	}
}

// Read returns whole batches starting with the one that holds offset, at
// most maxBytes in all but always at least one whole batch, all from one
// segment. The first batch may begin before offset. At EndOffset it
// returns nothing and no error; below StartOffset or beyond EndOffset it
// returns ErrOffsetOutOfRange.
func (l *Log) Read(offset int64, maxBytes int) ([]byte, error) {
	return l.ReadInto(nil, offset, maxBytes)
}

// ReadInto is Read appending to dst[:0], to reuse a buffer.
func (l *Log) ReadInto(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	return l.readBounded(dst, offset, maxBytes, math.MaxInt64)
}

func (l *Log) readBounded(dst []byte, offset int64, maxBytes int, limit int64) ([]byte, error) {
	var data []byte
	err := l.inSegment(offset, limit, func(seg *segment.Segment, limit int64) (err error) {
		data, err = seg.ReadBatches(dst, offset, min(max(maxBytes, 1), MaxReadBytes), limit)
		return err
	})
	if err == errCaughtUp {
		return dst[:0], nil
	}
	l.counters.readBytes.Add(int64(len(data)))
	return data, err
}

// Reader reads records in order from an offset, across batches and
// segments:
//
//	r := log.NewReader(offset)
//	for r.Next() {
//		rec := r.Record()
//	}
//	if err := r.Err(); err != nil { ... }
//
// Next returns false at the end of the log with a nil Err: call Wait and
// then Next again to follow the log. A Record and its slices are valid
// until the next call to Next. A Reader is not safe for concurrent use.
type Reader struct {
	l        *Log
	next     int64
	limit    func() int64
	maxBytes int
	buf      []byte
	batches  segment.Scanner // over the batches of the last read
	it       segment.RecordIter
	inBatch  bool
	err      error
}

// NewReader returns a Reader positioned at offset.
func (l *Log) NewReader(offset int64) *Reader {
	return &Reader{l: l, next: offset, maxBytes: DefaultReadBytes}
}

// Offset returns the offset of the next record Next will return.
func (r *Reader) Offset() int64 { return r.next }

// Record returns the current record.
func (r *Reader) Record() *Record { return r.it.Record() }

// Err returns the error that stopped Next, or nil at the end of the log.
func (r *Reader) Err() error { return r.err }

// Next advances to the next record.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	for {
		if r.inBatch {
			for r.it.Next() {
				rec := r.it.Record()
				if rec.Offset < r.next {
					continue
				}
				if r.limit != nil && rec.Offset >= r.limit() {
					// A batch that straddles the high watermark: stop
					// here and read it again once the mark moves.
					r.inBatch = false
					r.batches.ResetBuffer(nil, segment.ScanOptions{})
					return false
				}
				r.next = rec.Offset + 1
				return true
			}
			r.inBatch = false
			if err := r.it.Err(); err != nil {
				r.err = fmt.Errorf("storage: %s: %w", r.l.dir, err)
				return false
			}
			// Past the batch's last offset, which a compaction may have
			// left without a record.
			r.next = max(r.next, r.it.Header().NextOffset())
		}
		if r.batches.Next() {
			if h := r.batches.Header(); h.IsControl() {
				// Transaction markers: a record reader skips them.
				r.next = max(r.next, h.NextOffset())
				continue
			}
			b, _ := r.batches.Batch() // in the buffer: no error
			if err := r.it.Reset(b, r.l.opts.Limits); err != nil {
				r.err = fmt.Errorf("storage: %s: batch at offset %d: %w", r.l.dir, r.batches.Header().BaseOffset, err)
				return false
			}
			r.inBatch = true
			continue
		}
		if err := r.batches.Err(); err != nil {
			r.err = fmt.Errorf("storage: %s: bad batch in read buffer: %w", r.l.dir, err)
			return false
		}
		limit := int64(math.MaxInt64)
		if r.limit != nil {
			limit = r.limit()
		}
		data, err := r.l.readBounded(r.buf, r.next, r.maxBytes, limit)
		if err != nil {
			r.err = err
			return false
		}
		if len(data) == 0 {
			return false // caught up
		}
		r.buf = data
		r.batches.ResetBuffer(data, segment.ScanOptions{File: r.l.dir, Limits: r.l.opts.Limits})
	}
}

// OffsetForTime returns the first offset whose record timestamp is at or
// after ts (milliseconds), using the time indexes. When every record is
// older it returns EndOffset: where a consumer starts to see only newer
// records.
func (l *Log) OffsetForTime(ts int64) (int64, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	for _, seg := range l.segments() {
		maxTS, _, ok, err := seg.MaxTimestamp()
		if errors.Is(err, segment.ErrDeleted) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if !ok || maxTS < ts {
			continue
		}
		_, h, err := seg.FindTime(ts)
		if errors.Is(err, io.EOF) || errors.Is(err, segment.ErrDeleted) {
			continue
		}
		if err != nil {
			return 0, err
		}
		r := l.NewReader(max(h.BaseOffset, l.StartOffset()))
		for r.Next() {
			if r.Record().Timestamp >= ts {
				return r.Record().Offset, nil
			}
		}
		if r.Err() != nil && !errors.Is(r.Err(), ErrOffsetOutOfRange) {
			return 0, r.Err()
		}
	}
	return l.EndOffset(), nil
}

// ReadRecord returns the record at offset: a point read that, in an
// uncompressed batch, copies only that record (see segment.ReadRecord: the
// batch checksum is not verified; Read and a Reader verify it). The
// record's slices alias the returned buffer, which reuses buf's memory when
// it is large enough; pass it back to the next call. Below StartOffset or
// at or beyond EndOffset it returns ErrOffsetOutOfRange.
//
// Control records (transaction markers) are skipped as a Kafka consumer
// skips them: at the offset of one, or of a record a compaction removed,
// it returns the next data record; with none before the end of the log,
// ErrOffsetOutOfRange.
func (l *Log) ReadRecord(buf []byte, offset int64) (Record, []byte, error) {
	for {
		var rec Record
		err := l.inSegment(offset, math.MaxInt64, func(seg *segment.Segment, _ int64) (err error) {
			rec, buf, err = seg.ReadRecord(buf, offset)
			return err
		})
		if err == errCaughtUp {
			return Record{}, buf, fmt.Errorf("%w: offset %d is the end of the log", ErrOffsetOutOfRange, offset)
		}
		var none *segment.NoRecordError
		if errors.As(err, &none) && none.Next > offset {
			offset = none.Next
			continue
		}
		return rec, buf, err
	}
}
