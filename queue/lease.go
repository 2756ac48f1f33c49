package queue

import (
	"container/heap"
	"fmt"
	"slices"
)

// LeaseID identifies one handing-out of an item by Open. It is never zero;
// an item handed out again gets a new LeaseID.
type LeaseID uint64

// handOutLocked returns the caller's copy of it, under a new lease when
// leased.
func (q *Queue) handOutLocked(it *Item, now *clockReading, leased bool) Item {
	it.Deliveries++
	q.stats.Delivered++
	if it.Deliveries > 1 {
		q.stats.Redelivered++
	}
	out := *it
	if leased {
		q.lastID++
		l := &lease{id: q.lastID, item: it, deadline: now.now().Add(q.opts.LeaseTimeout)}
		q.leases[l.id] = l
		heap.Push(&q.deadlines, l)
		out.Lease, out.Deadline = l.id, l.deadline
	}
	return out
}

// leaseLocked returns the open lease id, or why it is not open. A lease
// found past its deadline is expired here.
func (q *Queue) leaseLocked(id LeaseID) (*lease, error) {
	if err := q.usableLocked(); err != nil {
		return nil, err
	}
	l, ok := q.leases[id]
	if !ok {
		if q.expired.has(id) {
			return nil, fmt.Errorf("%w: lease %d", ErrLeaseExpired, id)
		}
		return nil, fmt.Errorf("%w: lease %d is not open", ErrUnknownLease, id)
	}
	if !q.clock.Now().Before(l.deadline) {
		heap.Remove(&q.deadlines, l.idx)
		q.expireLeaseLocked(l)
		q.broadcastLocked()
		return nil, fmt.Errorf("%w: lease %d (offset %d) expired at %v", ErrLeaseExpired, id, l.item.Offset, l.deadline)
	}
	return l, nil
}

func (q *Queue) dropLeaseLocked(l *lease) {
	delete(q.leases, l.id)
	heap.Remove(&q.deadlines, l.idx)
}

// reclaimLocked hands the items of the leases expired at now back.
func (q *Queue) reclaimLocked(now *clockReading) {
	n := 0
	for len(q.deadlines) > 0 && !now.now().Before(q.deadlines[0].deadline) {
		q.expireLeaseLocked(heap.Pop(&q.deadlines).(*lease))
		n++
	}
	if n > 0 {
		q.broadcastLocked()
	}
}

// expireLeaseLocked ends a lease that is out of the deadline heap.
func (q *Queue) expireLeaseLocked(l *lease) {
	delete(q.leases, l.id)
	q.expired.add(l.id)
	q.stats.LeasesExpired++
	heap.Push(&q.ready, l.item)
}

// markDoneLocked records offset o as done (confirmed or expired) and
// advances the head over the done prefix.
func (q *Queue) markDoneLocked(o int64) {
	if o < q.pos {
		return // below the head: done already
	}
	q.done.add(o)
	q.seq++
	q.advanceLocked()
}

// advanceLocked moves the head over done offsets and lost ranges. The
// read position never stays below the head: after a restart the set holds
// runs above the read position, and when the head jumps over them the
// reader must not read them.
func (q *Queue) advanceLocked() {
	moved := false
	for {
		switch {
		case len(q.done) > 0 && q.done[0].lo == q.pos:
			q.pos = q.done[0].hi
			q.done = slices.Delete(q.done, 0, 1)
		case len(q.lost) > 0 && q.lost[0].lo == q.pos:
			q.pos = q.lost[0].hi
			q.lostLen -= q.lost[0].hi - q.lost[0].lo
			q.lost = slices.Delete(q.lost, 0, 1)
		default:
			if !moved {
				return
			}
			if q.reader != nil && q.next < q.pos {
				q.next = q.pos
				q.reader = q.log.NewReader(q.pos)
			}
			q.seq++
			q.broadcastLocked()
			return
		}
		moved = true
	}
}
