package queue

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// Item is an item handed out (or peeked at). Its Key, Value and Headers
// are shared with the queue, which hands the same bytes out again after an
// abort or an expired lease: do not modify them.
type Item struct {
	// Offset is the item's offset in the log: its identity, the same
	// each time it is handed out, across restarts too.
	Offset int64
	// Lease is the lease to Confirm or Abort (Open only; 0 for Get and
	// Peek).
	Lease LeaseID
	// Deadline is when the lease expires (Open only).
	Deadline time.Time
	// Deliveries counts how many times this Queue has handed the item
	// out, this time included: above 1 it was aborted or its lease
	// expired before. It starts again from 1 after a restart.
	Deliveries int
	// Timestamp is the record's timestamp (ms since the Unix epoch).
	Timestamp int64
	// ExpiresAt is the item's expiry (ExpiresAtHeader); zero: none.
	ExpiresAt time.Time

	Key     []byte
	Value   []byte
	Headers []segment.RecordHeader

	expiresMs int64 // ExpiresAt in ms; 0: none
}

func (it *Item) expiredAt(nowMs int64) bool { return it.expiresMs != 0 && it.expiresMs <= nowMs }

// Message is one item to Append.
type Message struct {
	Key     []byte
	Value   []byte
	Headers []segment.RecordHeader
	// TTL, when positive, makes the item expire TTL after Append (by the
	// queue's clock): Append adds an ExpiresAtHeader.
	TTL time.Duration
}

// Peek returns up to n of the items that Get or Open would hand out
// next, in that order, without handing them out (Lease is 0, Deliveries
// as handed out so far). Leased items are not among them; expired ones
// are left out.
func (q *Queue) Peek(n int) ([]Item, error) {
	if err := q.enter(); err != nil {
		return nil, err
	}
	defer q.inflight.Done()
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.usableLocked(); err != nil {
		return nil, err
	}
	nowMs := q.clock.Now().UnixMilli()
	ready := slices.Clone(q.ready)
	slices.SortFunc(ready, func(a, b *Item) int { return cmp.Compare(a.Offset, b.Offset) })
	var out []Item
	for _, it := range ready {
		if len(out) >= n {
			return out, nil
		}
		if !it.expiredAt(nowMs) {
			out = append(out, *it)
		}
	}
	r := q.log.NewReader(max(q.next, q.log.StartOffset()))
	for len(out) < n && r.Next() {
		rec := r.Record()
		if _, ok := q.done.contains(rec.Offset); ok {
			continue
		}
		if it := newItem(rec); !it.expiredAt(nowMs) {
			out = append(out, *it)
		}
	}
	if err := r.Err(); err != nil {
		return out, fmt.Errorf("queue %s: peek: %w", q.key.Topic, err)
	}
	return out, nil
}

// nextItemLocked returns the next item to hand out, or nil when there is
// none yet (or the window is full). It skips expired items.
func (q *Queue) nextItemLocked(now *clockReading) (*Item, error) {
	for {
		var it *Item
		if len(q.ready) > 0 {
			it = heap.Pop(&q.ready).(*Item)
		} else {
			if q.next-q.pos-q.lostLen >= int64(q.opts.Window) {
				return nil, nil
			}
			var err error
			if it, err = q.readLocked(); it == nil || err != nil {
				return nil, err
			}
		}
		if it.expiresMs == 0 || !it.expiredAt(now.now().UnixMilli()) {
			return it, nil
		}
		q.stats.Expired++
		q.finishLocked(it)
	}
}

// readLocked reads the next item from the log that is not done, or
// returns nil at the end of the log. When retention deleted the records
// at the read position, it records them as lost and goes on at the log
// start.
func (q *Queue) readLocked() (*Item, error) {
	for {
		if !q.reader.Next() {
			err := q.reader.Err()
			if err == nil {
				return nil, nil
			}
			if start := q.log.StartOffset(); errors.Is(err, storage.ErrOffsetOutOfRange) && q.next < start {
				q.unread, q.scanned = 0, start // what was counted below start is gone
				q.lost = append(q.lost, run{q.next, start})
				q.lostLen += start - q.next
				q.stats.Lost += start - q.next
				q.next = start
				q.reader = q.log.NewReader(start)
				q.advanceLocked()
				continue
			}
			return nil, fmt.Errorf("queue %s: read at offset %d: %w", q.key.Topic, q.next, err)
		}
		rec := q.reader.Record()
		q.next = rec.Offset + 1
		if r, ok := q.done.contains(rec.Offset); ok {
			if r.hi > q.next {
				q.next = r.hi
				q.reader = q.log.NewReader(r.hi)
			}
			continue
		}
		it := newItem(rec)
		q.held += int64(len(it.Value))
		if rec.Offset < q.scanned {
			q.unread -= int64(len(it.Value))
		}
		return it, nil
	}
}

// scanLocked counts the value bytes of the records not done in
// [max(scanned, next), end) into unread: the records appended since the
// last count. It reads them once; a failed read leaves the count for the
// next call.
func (q *Queue) scanLocked(end int64) {
	from := max(q.scanned, q.next, q.log.StartOffset())
	if from >= end {
		return
	}
	r := q.log.NewReader(from)
	var n, last int64 = 0, from
	for r.Next() {
		rec := r.Record()
		if rec.Offset >= end {
			break
		}
		last = rec.Offset + 1
		if _, ok := q.done.contains(rec.Offset); !ok {
			n += int64(len(rec.Value))
		}
	}
	if r.Err() != nil {
		return
	}
	q.unread += n
	q.scanned = last
}

// finishLocked marks an item that was read (handed out, waiting or
// expired) done.
func (q *Queue) finishLocked(it *Item) {
	q.held -= int64(len(it.Value))
	q.markDoneLocked(it.Offset)
}

// newItem copies a record (the Reader reuses its memory) into one
// allocation.
func newItem(rec *storage.Record) *Item {
	n := len(rec.Key) + len(rec.Value)
	for _, h := range rec.Headers {
		n += len(h.Key) + len(h.Value)
	}
	buf := make([]byte, 0, n)
	cp := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		at := len(buf)
		buf = append(buf, b...)
		return buf[at:len(buf):len(buf)]
	}
	it := &Item{Offset: rec.Offset, Timestamp: rec.Timestamp, Key: cp(rec.Key), Value: cp(rec.Value)}
	if len(rec.Headers) > 0 {
		it.Headers = make([]segment.RecordHeader, len(rec.Headers))
		for i, h := range rec.Headers {
			it.Headers[i] = segment.RecordHeader{Key: cp(h.Key), Value: cp(h.Value)}
			if string(h.Key) == ExpiresAtHeader {
				if ms, err := strconv.ParseInt(string(h.Value), 10, 64); err == nil && ms != 0 {
					it.expiresMs = ms
				} else {
					it.expiresMs = 0
				}
			}
		}
		if it.expiresMs != 0 {
			it.ExpiresAt = time.UnixMilli(it.expiresMs)
		}
	}
	return it
}
