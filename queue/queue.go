package queue

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// Group is the consumer group under which Open commits every queue's
// position: topic = the queue's name, partition 0. seglog offsets
// --group __queue shows each queue's position and backlog.
const Group = "__queue"

// ExpiresAtHeader is the record header that gives an item an expiry: its
// value is the expiry time in milliseconds since the Unix epoch, in
// decimal ASCII (Put and Append write it from a TTL). An item whose
// expiry is at or before the queue clock's now is never handed out. When
// a record has several, the last counts; a value that is not a decimal
// integer is ignored (the item does not expire).
const ExpiresAtHeader = "expires-at"

// expiredMemory is how many expired lease ids Confirm and Abort remember
// to answer ErrLeaseExpired rather than ErrUnknownLease.
const expiredMemory = 4096

// Key says where a Queue commits its position in the offsets store.
type Key struct {
	Group     string
	Topic     string
	Partition int32
}

// Stats describe a Queue. Counters count since New.
type Stats struct {
	// Committed is the durable position: the last one committed to the
	// offsets store (-1 when nothing was ever committed).
	Committed int64
	// Head is the position in memory: every item below it is confirmed
	// or expired. It runs ahead of Committed until the next commit.
	Head int64
	// End is the log's end offset.
	End int64
	// Pending counts the items at or above Head that are neither
	// confirmed nor skipped: leased, waiting to be handed out (again),
	// and not read yet (expired items not yet skipped included).
	Pending int64
	// ConfirmedAbove counts the items confirmed (or skipped as expired)
	// above Head, which wait for the head to reach them.
	ConfirmedAbove int64
	// Bytes sums the value lengths of the Pending items. Stats reads
	// the records appended since the last call to count theirs.
	Bytes int64
	// Open counts the open leases.
	Open int
	// Delivered counts handings-out (Get and Open); Redelivered those of
	// an item handed out before (after an abort or an expired lease).
	Delivered, Redelivered uint64
	// Confirmed counts confirmed leases; Got the items taken by Get.
	Confirmed, Got uint64
	// Aborted counts aborted leases; LeasesExpired those that expired.
	Aborted, LeasesExpired uint64
	// Expired counts the items skipped because their expiry had passed,
	// at read time or by the sweep; Swept counts the latter.
	Expired, Swept uint64
	// Flushed counts the items discarded by Flush.
	Flushed uint64
	// Sweeps counts sweeps (background and Sweep calls).
	Sweeps uint64
	// Lost counts items that retention deleted from the log before the
	// queue handed them out.
	Lost int64
	// Commits counts commits of the position to the offsets store.
	Commits uint64
	// Err is the failure that stopped the queue (a failed commit), nil
	// while it works.
	Err error
}

// Queue hands out the items of one log in order, at least once (Open,
// Confirm) or at most once (Get), and commits its position durably. See
// the package doc. All methods are safe for concurrent use.
type Queue struct {
	log   *storage.Log
	ost   *offsets.Store
	key   Key
	opts  Options
	clock Clock

	// commitMu serializes commits to the offsets store and is held across
	// each: a commit takes the latest state, so commits never go back.
	commitMu sync.Mutex

	// mu guards every field below (and the reader).
	mu        sync.Mutex
	closed    bool
	err       error  // the failure: every later operation returns it
	pos       int64  // the head: every offset below it is done
	done      runSet // done offsets above pos (confirmed or expired)
	lost      []run  // ranges at or above pos deleted before they were read
	lostLen   int64  // offsets in lost
	next      int64  // the next offset to read from the log
	reader    *storage.Reader
	ready     itemHeap // read, not done, not leased: handed out first
	leases    map[LeaseID]*lease
	deadlines leaseHeap
	expired   *idRing
	lastID    LeaseID
	seq       uint64 // counts changes of (pos, done)
	synced    uint64 // the seq of the last successful commit
	committed int64  // the position of the last successful commit
	changed   chan struct{}
	waiters   int // Get and Open calls waiting on changed
	stats     Stats
	held      int64 // value bytes of the items read and not done (ready, leased)
	unread    int64 // value bytes of the records in [next, scanned) not done
	scanned   int64 // unread counts the records below it

	closing   chan struct{} // closed by Close
	inflight  sync.WaitGroup
	sweepDone chan struct{}
}

// Open opens the queue named name in a data directory: the items are the
// topic name (created with one partition when it does not exist), the
// position is committed in ost under group Group, topic name, partition 0.
// The store and ost stay the caller's: Close does not close them.
func Open(store *storage.Store, ost *offsets.Store, name string, opts Options) (*Queue, error) {
	if err := store.CreateTopic(name, 1, storage.TopicConfig{}); err != nil {
		return nil, fmt.Errorf("queue %s: %w", name, err)
	}
	l, err := store.Log(name, 0)
	if err != nil {
		return nil, fmt.Errorf("queue %s: %w", name, err)
	}
	return New(l, ost, Key{Group: Group, Topic: name, Partition: 0}, opts)
}

// New returns a queue over the items of log, whose position is committed
// in ost under key. It reads the committed position and the set of items
// confirmed above it, and starts there; with no commit yet it starts at
// the log start and subscribes key.Group to key.Topic (durably), so that
// the retention cleaner's consumed policy keeps every item until the
// queue has passed it. log and ost stay the caller's: Close does not close
// them. Open no second Queue on the same key.
func New(log *storage.Log, ost *offsets.Store, key Key, opts Options) (*Queue, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil || ost == nil || key.Group == "" || key.Topic == "" || key.Partition < 0 {
		return nil, fmt.Errorf("%w: New needs a log, an offsets store and a key with a group, a topic and a partition", ErrInvalidOptions)
	}
	q := &Queue{
		log: log, ost: ost, key: key, opts: opts, clock: opts.Clock,
		leases: make(map[LeaseID]*lease), expired: newIDRing(expiredMemory),
		changed: make(chan struct{}), closing: make(chan struct{}), sweepDone: make(chan struct{}),
		committed: -1,
	}
	p, err := ost.Fetch(key.Group, key.Topic, key.Partition)
	switch {
	case errors.Is(err, offsets.ErrNoCommit):
		q.pos = log.StartOffset()
		if err := ost.Subscribe(key.Group, key.Topic); err != nil {
			return nil, fmt.Errorf("queue %s: subscribe: %w", key.Topic, err)
		}
	case err != nil:
		return nil, fmt.Errorf("queue %s: read the position: %w", key.Topic, err)
	default:
		q.pos, q.committed = p.Offset, p.Offset
		if q.done, err = decodeMeta(p.Offset, p.Metadata); err != nil {
			return nil, fmt.Errorf("queue %s: position %d: %w", key.Topic, p.Offset, err)
		}
	}
	// Retention may have deleted items the queue had not finished, and a
	// truncation items it had: start within the log.
	start, end := log.StartOffset(), log.EndOffset()
	if q.pos < start {
		q.stats.Lost = start - q.pos - q.done.clamp(q.pos, start).size()
		q.pos = start
		q.seq++
	}
	if q.pos > end {
		q.pos = end
		q.seq++
	}
	q.done = q.done.clamp(q.pos, end)
	q.advanceLocked()
	q.next = q.pos
	q.reader = log.NewReader(q.next)
	if opts.SweepInterval > 0 {
		go q.sweepLoop()
	} else {
		close(q.sweepDone)
	}
	return q, nil
}

// Get hands out the next item and confirms it before returning it: at
// most once (a crash after Get returns loses the item for the caller).
// It waits for an item until ctx is done and then returns ctx.Err(); it
// looks for an item before it looks at ctx, so a ctx that is already done
// makes Get a poll. Items whose expiry has passed are skipped (and
// counted in Stats.Expired). The confirmation is committed as Confirm's
// is: when Get returns an item, that item is never handed out again.
func (q *Queue) Get(ctx context.Context) (Item, error) { return q.take(ctx, false) }

// Open hands out the next item under a lease of Options.LeaseTimeout:
// Confirm(it.Lease) finishes it, Abort(it.Lease) or the lease's expiry
// hands it out again (at least once). It waits like Get. Several leases
// may be open at once; items aborted or whose lease expired are handed out
// before items never handed out, lowest offset first.
func (q *Queue) Open(ctx context.Context) (Item, error) { return q.take(ctx, true) }

func (q *Queue) take(ctx context.Context, leased bool) (Item, error) {
	if err := q.enter(); err != nil {
		return Item{}, err
	}
	defer q.inflight.Done()
	for {
		q.mu.Lock()
		if err := q.usableLocked(); err != nil {
			q.mu.Unlock()
			return Item{}, err
		}
		now := clockReading{c: q.clock}
		q.reclaimLocked(&now)
		it, err := q.nextItemLocked(&now)
		if err != nil {
			q.mu.Unlock()
			return Item{}, err
		}
		if it != nil {
			out := q.handOutLocked(it, &now, leased)
			if leased {
				q.mu.Unlock()
				return out, nil
			}
			q.stats.Got++
			q.finishLocked(it)
			seq := q.seq
			q.mu.Unlock()
			if err := q.persist(seq); err != nil {
				return Item{}, err
			}
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			q.mu.Unlock()
			return Item{}, err
		}
		w := q.prepareWaitLocked(&now)
		q.mu.Unlock()
		if err := q.wait(ctx, w); err != nil {
			return Item{}, err
		}
	}
}

// Confirm finishes the item of an open lease: it is never handed out
// again. Confirm returns after the queue's state (the position and the
// items confirmed above it) is committed to the offsets store, durably
// under its SyncAlways policy, so a confirmed item is not handed out again
// after a crash either. Concurrent confirms share commits. A lease whose
// deadline has passed gives ErrLeaseExpired (even if its item was not
// handed out again yet); one that is not open, ErrUnknownLease. An error
// from the commit makes the queue fail (see the package doc): the item
// counts as unconfirmed and is handed out again after a reopen.
func (q *Queue) Confirm(id LeaseID) error {
	if err := q.enter(); err != nil {
		return err
	}
	defer q.inflight.Done()
	q.mu.Lock()
	l, err := q.leaseLocked(id)
	if err != nil {
		q.mu.Unlock()
		return err
	}
	q.dropLeaseLocked(l)
	q.stats.Confirmed++
	q.finishLocked(l.item)
	seq := q.seq
	q.mu.Unlock()
	return q.persist(seq)
}

// Abort gives the item of an open lease back: it is handed out again
// (before any item not handed out yet). Nothing is written. Errors are
// those of Confirm.
func (q *Queue) Abort(id LeaseID) error {
	if err := q.enter(); err != nil {
		return err
	}
	defer q.inflight.Done()
	q.mu.Lock()
	defer q.mu.Unlock()
	l, err := q.leaseLocked(id)
	if err != nil {
		return err
	}
	q.dropLeaseLocked(l)
	q.stats.Aborted++
	heap.Push(&q.ready, l.item)
	q.broadcastLocked()
	return nil
}

// Put appends one item, expiring ttl from now when ttl > 0, and returns
// its offset. See Append.
func (q *Queue) Put(value []byte, ttl time.Duration) (int64, error) {
	res, err := q.Append(Message{Value: value, TTL: ttl})
	return res.FirstOffset, err
}

// Append appends msgs to the log as one batch (all or none), timestamped
// with the queue's clock. It is as durable as the log's Options.Sync
// makes it (SyncAlways: fsynced before Append returns). A waiting Get or
// Open wakes. Items may also be appended to the log directly, by any
// producer: every record is an item.
func (q *Queue) Append(msgs ...Message) (storage.AppendResult, error) {
	if err := q.enter(); err != nil {
		return storage.AppendResult{}, err
	}
	defer q.inflight.Done()
	if len(msgs) == 0 {
		return storage.AppendResult{}, fmt.Errorf("%w: Append of no message", ErrInvalidOptions)
	}
	now := q.clock.Now()
	recs := make([]storage.Record, len(msgs))
	for i, m := range msgs {
		if m.TTL < 0 {
			return storage.AppendResult{}, fmt.Errorf("%w: negative TTL %v", ErrInvalidOptions, m.TTL)
		}
		hs := m.Headers
		if m.TTL > 0 {
			exp := strconv.AppendInt(nil, now.Add(m.TTL).UnixMilli(), 10)
			hs = append(slices.Clip(hs), segment.RecordHeader{Key: []byte(ExpiresAtHeader), Value: exp})
		}
		recs[i] = storage.Record{Timestamp: now.UnixMilli(), Key: m.Key, Value: m.Value, Headers: hs}
	}
	res, err := q.log.Append(recs...)
	if err != nil {
		return res, fmt.Errorf("queue %s: append: %w", q.key.Topic, err)
	}
	return res, nil
}

// Sweep does now what the background sweep does every SweepInterval, as
// Kestrel expired items on a timer: it hands the items of expired leases
// back, then discards the items at the head whose expiry has passed (an
// open lease at the head stops it, as does an item that has not expired),
// and commits the position when it changed. It returns how many items it
// discarded.
func (q *Queue) Sweep() (int, error) {
	if err := q.enter(); err != nil {
		return 0, err
	}
	defer q.inflight.Done()
	q.mu.Lock()
	if err := q.usableLocked(); err != nil {
		q.mu.Unlock()
		return 0, err
	}
	now := clockReading{c: q.clock}
	nowMs := now.now().UnixMilli()
	q.reclaimLocked(&now)
	q.stats.Sweeps++
	n := 0
	for {
		if len(q.ready) > 0 && q.ready[0].Offset == q.pos {
			if !q.ready[0].expiredAt(nowMs) {
				break
			}
			q.finishLocked(heap.Pop(&q.ready).(*Item))
			n++
			continue
		}
		if q.next != q.pos {
			break // the head is leased
		}
		it, err := q.readLocked()
		if err != nil {
			q.mu.Unlock()
			return n, err
		}
		if it == nil {
			break
		}
		if !it.expiredAt(nowMs) {
			heap.Push(&q.ready, it)
			break
		}
		q.finishLocked(it)
		n++
	}
	q.stats.Expired += uint64(n)
	q.stats.Swept += uint64(n)
	seq, dirty := q.seq, q.seq > q.synced
	q.mu.Unlock()
	if !dirty {
		return n, nil
	}
	return n, q.persist(seq)
}

// Flush discards every item not done, as Kestrel's flush emptied a
// queue: the items waiting to be handed out (again), those not read yet,
// and those under an open lease (the leases end: Confirm and Abort of
// them return ErrUnknownLease). The head moves to the log's end, and
// Flush returns after that position is committed as Confirm's is, so no
// discarded item is handed out again, after a crash either. It returns
// how many items it discarded.
func (q *Queue) Flush() (int64, error) {
	if err := q.enter(); err != nil {
		return 0, err
	}
	defer q.inflight.Done()
	q.mu.Lock()
	if err := q.usableLocked(); err != nil {
		q.mu.Unlock()
		return 0, err
	}
	end := q.log.EndOffset()
	n := max(0, end-q.pos-q.done.size()-q.lostLen)
	q.pos, q.done, q.lost, q.lostLen = end, nil, nil, 0
	q.next, q.reader = end, q.log.NewReader(end)
	q.ready, q.deadlines = nil, nil
	clear(q.leases)
	q.held, q.unread, q.scanned = 0, 0, end
	q.stats.Flushed += uint64(n)
	q.seq++
	seq := q.seq
	q.broadcastLocked()
	q.mu.Unlock()
	return n, q.persist(seq)
}

// Stats returns the queue's counters and positions.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.stats
	s.Committed = q.committed
	s.Head = q.pos
	s.End = q.log.EndOffset()
	s.Open = len(q.leases)
	s.ConfirmedAbove = q.done.size()
	s.Pending = max(0, s.End-q.pos-s.ConfirmedAbove-q.lostLen)
	s.Err = q.err
	if q.err == nil && !q.closed {
		q.scanLocked(s.End)
	}
	s.Bytes = q.held + q.unread
	return s
}

// Close stops the sweep and waits for it, makes waiting Get and Open
// calls return ErrClosed and waits for every call in progress (a Confirm
// in progress finishes its commit), then commits the position if items
// were skipped since the last commit. Open leases are dropped unconfirmed:
// their items are handed out again by the next Queue, as after a crash.
// It does not close the log or the offsets store. Later calls return
// ErrClosed.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	q.closed = true
	close(q.closing)
	q.mu.Unlock()
	<-q.sweepDone
	q.inflight.Wait()
	q.mu.Lock()
	seq, dirty := q.seq, q.err == nil && q.seq > q.synced
	q.mu.Unlock()
	var err error
	if dirty {
		err = q.persist(seq)
	}
	q.mu.Lock()
	q.leases, q.deadlines, q.ready = nil, nil, nil
	q.mu.Unlock()
	return err
}

// enter registers a call in progress, or returns ErrClosed.
func (q *Queue) enter() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.inflight.Add(1)
	return nil
}

func (q *Queue) usableLocked() error {
	if q.closed {
		return ErrClosed
	}
	return q.err
}
