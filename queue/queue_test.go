package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

func TestGetInOrderAndPoll(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	put(t, q, "a", "b", "c")
	for i, want := range []string{"a", "b", "c"} {
		it, err := q.Get(context.Background())
		require.NoError(t, err)
		assert.Equal(t, want, string(it.Value))
		assert.Equal(t, int64(i), it.Offset)
		assert.Zero(t, it.Lease, "Get hands out no lease")
		assert.Equal(t, 1, it.Deliveries)
	}
	// Empty: a done context makes Get a poll; a deadline is a timeout.
	_, err := q.Get(polled())
	assert.ErrorIs(t, err, context.Canceled)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now())
	defer cancel()
	_, err = q.Get(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	st := q.Stats()
	assert.Equal(t, int64(3), st.Head)
	assert.Equal(t, int64(3), st.Committed, "Get commits before it returns")
	assert.Equal(t, uint64(3), st.Got)
	assert.Zero(t, st.Pending)
	pos, err := e.ost.Fetch(queue.Group, "jobs", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(3), pos.Offset)
}

func TestGetWaitsForPut(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	got := make(chan queue.Item, 1)
	go func() {
		it, err := q.Get(context.Background())
		assert.NoError(t, err)
		got <- it
	}()
	put(t, q, "late")
	it := <-got
	assert.Equal(t, "late", string(it.Value))
}

func TestGetWaitsForItemAppendedToTheLogDirectly(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	l, err := e.store.Log("jobs", 0)
	require.NoError(t, err)
	got := make(chan queue.Item, 1)
	go func() {
		it, err := q.Open(context.Background())
		assert.NoError(t, err)
		got <- it
	}()
	_, err = l.Append(storage.Record{Value: []byte("from a producer")})
	require.NoError(t, err)
	it := <-got
	assert.Equal(t, "from a producer", string(it.Value))
	assert.NotZero(t, it.Lease)
}

func TestOpenConfirm(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{LeaseTimeout: 10 * time.Second})
	put(t, q, "a", "b")
	it, err := q.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "a", string(it.Value))
	assert.NotZero(t, it.Lease)
	assert.Equal(t, e.clock.Now().Add(10*time.Second), it.Deadline)
	st := q.Stats()
	assert.Equal(t, 1, st.Open)
	assert.Equal(t, int64(0), st.Head)

	require.NoError(t, q.Confirm(it.Lease))
	st = q.Stats()
	assert.Equal(t, 0, st.Open)
	assert.Equal(t, int64(1), st.Head)
	assert.Equal(t, int64(1), st.Committed, "Confirm commits before it returns")
	assert.Equal(t, uint64(1), st.Confirmed)

	it2, err := q.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "b", string(it2.Value))
	assert.NotEqual(t, it.Lease, it2.Lease)
}

// TestLeaseErrors: Confirm and Abort of a lease that is not open.
func TestLeaseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first func(q *queue.Queue, id queue.LeaseID) error // nil: none
		then  func(q *queue.Queue, id queue.LeaseID) error
		want  error
	}{
		{"double confirm", (*queue.Queue).Confirm, (*queue.Queue).Confirm, queue.ErrUnknownLease},
		{"abort after confirm", (*queue.Queue).Confirm, (*queue.Queue).Abort, queue.ErrUnknownLease},
		{"double abort", (*queue.Queue).Abort, (*queue.Queue).Abort, queue.ErrUnknownLease},
		{"confirm after abort", (*queue.Queue).Abort, (*queue.Queue).Confirm, queue.ErrUnknownLease},
		{"confirm of a lease never issued", nil, func(q *queue.Queue, id queue.LeaseID) error { return q.Confirm(id + 100) }, queue.ErrUnknownLease},
		{"confirm of lease 0 (Get's)", nil, func(q *queue.Queue, _ queue.LeaseID) error { return q.Confirm(0) }, queue.ErrUnknownLease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			q := e.open(queue.Options{})
			put(t, q, "a")
			it, err := q.Open(context.Background())
			require.NoError(t, err)
			if tc.first != nil {
				require.NoError(t, tc.first(q, it.Lease))
			}
			assert.ErrorIs(t, tc.then(q, it.Lease), tc.want)
		})
	}
}

func TestOpenAbortRedelivers(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	put(t, q, "a", "b")
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	b, err := q.Open(context.Background())
	require.NoError(t, err)
	require.NoError(t, q.Abort(a.Lease))

	// The aborted item comes back first, with a new lease.
	again, err := q.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, a.Offset, again.Offset)
	assert.Equal(t, "a", string(again.Value))
	assert.Equal(t, 2, again.Deliveries)
	assert.NotEqual(t, a.Lease, again.Lease)
	assert.ErrorIs(t, q.Confirm(a.Lease), queue.ErrUnknownLease, "the aborted lease is gone")

	require.NoError(t, q.Confirm(again.Lease))
	require.NoError(t, q.Confirm(b.Lease))
	st := q.Stats()
	assert.Equal(t, uint64(1), st.Aborted)
	assert.Equal(t, uint64(3), st.Delivered)
	assert.Equal(t, uint64(1), st.Redelivered)
	assert.Equal(t, int64(2), st.Head)
}

func TestLeaseExpiryRedelivers(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{LeaseTimeout: 10 * time.Second})
	put(t, q, "a", "b")
	a, err := q.Open(context.Background())
	require.NoError(t, err)

	e.clock.Advance(9 * time.Second)
	b, err := q.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "b", string(b.Value), "a is still leased")

	e.clock.Advance(time.Second) // a's deadline
	again, err := q.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, a.Offset, again.Offset, "expired lease: handed out again")
	assert.Equal(t, 2, again.Deliveries)

	// Confirm after expiry does not count; the new holder's does.
	assert.ErrorIs(t, q.Confirm(a.Lease), queue.ErrLeaseExpired)
	assert.ErrorIs(t, q.Abort(a.Lease), queue.ErrLeaseExpired)
	require.NoError(t, q.Confirm(again.Lease))
	require.NoError(t, q.Confirm(b.Lease))
	st := q.Stats()
	assert.Equal(t, uint64(1), st.LeasesExpired)
	assert.Equal(t, int64(2), st.Head)
}

// TestConfirmAtDeadline: a lease is expired from its deadline on, even
// before anyone takes its item again, and the item then comes back.
func TestConfirmAtDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		advance time.Duration
		want    error
	}{
		{"just before", 10*time.Second - time.Nanosecond, nil},
		{"at the deadline", 10 * time.Second, queue.ErrLeaseExpired},
		{"after", time.Minute, queue.ErrLeaseExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			q := e.open(queue.Options{LeaseTimeout: 10 * time.Second})
			put(t, q, "a")
			it, err := q.Open(context.Background())
			require.NoError(t, err)
			e.clock.Advance(tc.advance)
			err = q.Confirm(it.Lease)
			if tc.want == nil {
				require.NoError(t, err)
				_, err := q.Open(polled())
				assert.ErrorIs(t, err, context.Canceled, "confirmed: not handed out again")
				return
			}
			assert.ErrorIs(t, err, tc.want)
			again, err := q.Open(polled())
			require.NoError(t, err)
			assert.Equal(t, it.Offset, again.Offset)
		})
	}
}

// TestWaitingOpenWokenByLeaseExpiry: an Open waiting on an empty queue
// gets the item of a lease that expires meanwhile.
func TestWaitingOpenWokenByLeaseExpiry(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{LeaseTimeout: 10 * time.Second})
	put(t, q, "a")
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	armed := e.clock.armedCount()
	got := make(chan queue.Item, 1)
	go func() {
		it, err := q.Open(context.Background())
		assert.NoError(t, err)
		got <- it
	}()
	e.clock.waitArmed(armed+1, 1) // the waiting Open's timer for a's deadline
	e.clock.Advance(10 * time.Second)
	it := <-got
	assert.Equal(t, a.Offset, it.Offset)
	assert.Equal(t, 2, it.Deliveries)
}

// TestWaitingOpenWokenByAbort: an Open waiting on an empty queue gets an
// aborted item.
func TestWaitingOpenWokenByAbort(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{LeaseTimeout: time.Hour})
	put(t, q, "a")
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	armed := e.clock.armedCount()
	got := make(chan queue.Item, 1)
	go func() {
		it, err := q.Open(context.Background())
		assert.NoError(t, err)
		got <- it
	}()
	e.clock.waitArmed(armed+1, 1) // it waits
	require.NoError(t, q.Abort(a.Lease))
	assert.Equal(t, a.Offset, (<-got).Offset)
}

// TestWaitingGetWhoseContextEndedTakesNoItemAfter: a waiting Get whose
// context ends before an item comes back returns the context's error
// and leaves the item, whichever it sees first when it wakes (a server
// closing ends its waiting gets, then hands open reads back).
func TestWaitingGetWhoseContextEndedTakesNoItemAfter(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{LeaseTimeout: time.Hour})
	for range 100 {
		put(t, q, "a")
		a, err := q.Open(context.Background())
		require.NoError(t, err)
		armed := e.clock.armedCount()
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() {
			_, err := q.Get(ctx)
			got <- err
		}()
		e.clock.waitArmed(armed+1, 1) // it waits
		cancel()
		require.NoError(t, q.Abort(a.Lease))
		require.ErrorIs(t, <-got, context.Canceled, "the Get took the item that came back after its context ended")
		it, err := q.Open(context.Background())
		require.NoError(t, err)
		require.Equal(t, a.Offset, it.Offset)
		require.NoError(t, q.Confirm(it.Lease))
	}
}

// TestOutOfOrderConfirms: the head moves over the contiguous confirmed
// prefix only; the confirmed-above set is committed with it and survives
// a restart.
func TestOutOfOrderConfirms(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	put(t, q, "0", "1", "2", "3", "4", "5")
	var its []queue.Item
	for range 5 {
		it, err := q.Open(context.Background())
		require.NoError(t, err)
		its = append(its, it)
	}
	type state struct {
		head, above int64
		meta        string
	}
	check := func(step string, want state) {
		t.Helper()
		st := q.Stats()
		assert.Equal(t, want.head, st.Head, step)
		assert.Equal(t, want.head, st.Committed, step)
		assert.Equal(t, want.above, st.ConfirmedAbove, step)
		pos, err := e.ost.Fetch(queue.Group, "jobs", 0)
		require.NoError(t, err)
		assert.Equal(t, want.head, pos.Offset, step)
		assert.Equal(t, want.meta, pos.Metadata, step)
	}
	require.NoError(t, q.Confirm(its[2].Lease))
	check("confirm 2", state{0, 1, "q1 2+1"})
	require.NoError(t, q.Confirm(its[4].Lease))
	check("confirm 4", state{0, 2, "q1 2+1 1+1"})
	require.NoError(t, q.Confirm(its[3].Lease))
	check("confirm 3", state{0, 3, "q1 2+3"})
	require.NoError(t, q.Confirm(its[0].Lease))
	check("confirm 0", state{1, 3, "q1 1+3"})

	// Restart with 1 open: 1 and 5 are handed out, 2, 3, 4 never again.
	q = e.restart(q, queue.Options{})
	st := q.Stats()
	assert.Equal(t, int64(1), st.Head)
	assert.Equal(t, int64(3), st.ConfirmedAbove)
	assert.Equal(t, []string{"1", "5"}, drain(t, q))
}

// TestRestartThenConfirmHead: after a restart with items confirmed above
// the head, confirming the head moves it past them before the reader got
// there; the reader must not hand them out.
func TestRestartThenConfirmHead(t *testing.T) {
	for _, window := range []int{1, 3, queue.DefaultWindow} {
		t.Run(fmt.Sprintf("window %d", window), func(t *testing.T) {
			e := newEnv(t)
			q := e.open(queue.Options{})
			put(t, q, "0", "1", "2", "3", "4")
			var its []queue.Item
			for range 3 {
				it, err := q.Open(context.Background())
				require.NoError(t, err)
				its = append(its, it)
			}
			require.NoError(t, q.Confirm(its[2].Lease))
			require.NoError(t, q.Confirm(its[1].Lease))

			q = e.restart(q, queue.Options{Window: window})
			it, err := q.Open(context.Background())
			require.NoError(t, err)
			require.Equal(t, "0", string(it.Value))
			require.NoError(t, q.Confirm(it.Lease))
			assert.Equal(t, int64(3), q.Stats().Head)
			it, err = q.Get(context.Background())
			require.NoError(t, err)
			assert.Equal(t, "3", string(it.Value), "1 and 2 were confirmed")
			peeked, err := q.Peek(10)
			require.NoError(t, err)
			require.Len(t, peeked, 1)
			assert.Equal(t, "4", string(peeked[0].Value))
			pos, err := e.ost.Fetch(queue.Group, "jobs", 0)
			require.NoError(t, err)
			assert.Equal(t, int64(4), pos.Offset)
			assert.Empty(t, pos.Metadata)
		})
	}
}

// TestWindow: at most Window items in flight; a confirm at the head makes
// room.
func TestWindow(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{Window: 2})
	put(t, q, "a", "b", "c")
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	b, err := q.Open(context.Background())
	require.NoError(t, err)
	_, err = q.Open(polled())
	assert.ErrorIs(t, err, context.Canceled, "window full")
	require.NoError(t, q.Confirm(b.Lease))
	_, err = q.Open(polled())
	assert.ErrorIs(t, err, context.Canceled, "b is above the head: still in the window")

	got := make(chan queue.Item, 1)
	go func() {
		it, err := q.Open(context.Background())
		assert.NoError(t, err)
		got <- it
	}()
	require.NoError(t, q.Confirm(a.Lease))
	assert.Equal(t, "c", string((<-got).Value))
}

func TestTTLSkippedAndCounted(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	for _, m := range []struct {
		v   string
		ttl time.Duration
	}{{"short", time.Second}, {"forever", 0}, {"long", time.Hour}, {"short2", 2 * time.Second}, {"last", 0}} {
		_, err := q.Put([]byte(m.v), m.ttl)
		require.NoError(t, err)
	}
	e.clock.Advance(2 * time.Second) // short and short2 expire (at their expiry, inclusive)
	var got []string
	for {
		it, err := q.Get(polled())
		if err != nil {
			require.ErrorIs(t, err, context.Canceled)
			break
		}
		got = append(got, string(it.Value))
		if string(it.Value) == "long" {
			assert.Equal(t, e.clock.Now().Add(time.Hour-2*time.Second), it.ExpiresAt)
		}
	}
	assert.Equal(t, []string{"forever", "long", "last"}, got)
	st := q.Stats()
	assert.Equal(t, uint64(2), st.Expired)
	assert.Zero(t, st.Swept)
	assert.Equal(t, int64(5), st.Head)
	assert.Equal(t, int64(5), st.Committed)
}

// TestExpiresAtHeader: what the header's value means.
func TestExpiresAtHeader(t *testing.T) {
	now := newFakeClock().Now().UnixMilli()
	for _, tc := range []struct {
		name    string
		headers []segment.RecordHeader
		expired bool
	}{
		{"none", nil, false},
		{"past", hdr(strconv.FormatInt(now-1, 10)), true},
		{"now", hdr(strconv.FormatInt(now, 10)), true},
		{"future", hdr(strconv.FormatInt(now+1, 10)), false},
		{"not a number", hdr("soon"), false},
		{"empty", hdr(""), false},
		{"zero", hdr("0"), false},
		{"last one counts", append(hdr(strconv.FormatInt(now+1, 10)), hdr(strconv.FormatInt(now-1, 10))...), true},
		{"other header", []segment.RecordHeader{{Key: []byte("ttl"), Value: []byte("1")}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			q := e.open(queue.Options{})
			_, err := q.Append(queue.Message{Value: []byte("x"), Headers: tc.headers})
			require.NoError(t, err)
			_, err = q.Get(polled())
			if tc.expired {
				assert.ErrorIs(t, err, context.Canceled)
				assert.Equal(t, uint64(1), q.Stats().Expired)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func hdr(v string) []segment.RecordHeader {
	return []segment.RecordHeader{{Key: []byte(queue.ExpiresAtHeader), Value: []byte(v)}}
}

// TestExpiredWhileLeased: an item that expires while leased can still be
// confirmed; aborted after its expiry, it is skipped.
func TestExpiredWhileLeased(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{LeaseTimeout: time.Hour})
	_, err := q.Put([]byte("a"), time.Second)
	require.NoError(t, err)
	_, err = q.Put([]byte("b"), time.Second)
	require.NoError(t, err)
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	b, err := q.Open(context.Background())
	require.NoError(t, err)
	e.clock.Advance(time.Second)
	require.NoError(t, q.Confirm(a.Lease))
	require.NoError(t, q.Abort(b.Lease))
	_, err = q.Open(polled())
	assert.ErrorIs(t, err, context.Canceled)
	st := q.Stats()
	assert.Equal(t, uint64(1), st.Expired)
	assert.Equal(t, int64(2), st.Head)
}

func TestSweep(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{LeaseTimeout: time.Hour})
	for _, m := range []struct {
		v   string
		ttl time.Duration
	}{{"e0", time.Second}, {"e1", time.Second}, {"keep", time.Hour}, {"e3", time.Second}} {
		_, err := q.Put([]byte(m.v), m.ttl)
		require.NoError(t, err)
	}
	n, err := q.Sweep()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing expired yet")
	assert.Equal(t, int64(0), q.Stats().Head)

	e.clock.Advance(time.Second)
	n, err = q.Sweep()
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the expired head; it stops at an item that has not expired")
	st := q.Stats()
	assert.Equal(t, int64(2), st.Head)
	assert.Equal(t, int64(2), st.Committed, "the sweep commits")
	assert.Equal(t, uint64(2), st.Swept)
	assert.Equal(t, uint64(2), st.Expired)

	// An open lease at the head stops the sweep too.
	keep, err := q.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "keep", string(keep.Value))
	n, err = q.Sweep()
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, q.Confirm(keep.Lease))
	n, err = q.Sweep()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, int64(4), q.Stats().Committed)
}

// TestSweepReclaimsExpiredLeases: the sweep hands an expired lease's
// item back, and discards it when the item expired too.
func TestSweepReclaimsExpiredLeases(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{LeaseTimeout: time.Second})
	_, err := q.Put([]byte("a"), 2*time.Second)
	require.NoError(t, err)
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	e.clock.Advance(2 * time.Second)
	n, err := q.Sweep()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	st := q.Stats()
	assert.Equal(t, uint64(1), st.LeasesExpired)
	assert.Equal(t, int64(1), st.Committed)
	assert.ErrorIs(t, q.Confirm(a.Lease), queue.ErrLeaseExpired)
}

// TestSweepOnTimer: the background sweep runs every SweepInterval by the
// queue's clock.
func TestSweepOnTimer(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{SweepInterval: time.Minute})
	_, err := q.Put([]byte("a"), time.Second)
	require.NoError(t, err)
	put(t, q, "b")
	e.clock.waitArmed(1, 1) // the sweep's timer
	e.clock.Advance(time.Minute)
	e.clock.waitArmed(2, 1) // re-armed: the sweep ran
	st := q.Stats()
	assert.Equal(t, uint64(1), st.Sweeps)
	assert.Equal(t, uint64(1), st.Swept)
	assert.Equal(t, int64(1), st.Committed)
	require.NoError(t, q.Close())
	assert.Empty(t, leftoverQueueGoroutines(), "Close stops the sweep")
}

func TestRestart(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	put(t, q, "a", "b", "c", "d", "e")
	a, err := q.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, "a", string(a.Value))
	b, err := q.Open(context.Background())
	require.NoError(t, err)
	c, err := q.Open(context.Background())
	require.NoError(t, err)
	require.NoError(t, q.Confirm(c.Lease))
	d, err := q.Open(context.Background())
	require.NoError(t, err)
	require.NoError(t, q.Abort(d.Lease))
	_ = b // open at Close: dropped, handed out again

	q = e.restart(q, queue.Options{})
	st := q.Stats()
	assert.Equal(t, int64(1), st.Head)
	assert.Equal(t, int64(1), st.Committed)
	assert.Equal(t, int64(3), st.Pending, "b, d, e")
	assert.Equal(t, []string{"b", "d", "e"}, drain(t, q))
}

// TestRestartCommitsSkips: items skipped as expired by Open are committed
// by Close (a crash before would only make the next queue skip them again).
func TestRestartCommitsSkips(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	_, err := q.Put([]byte("old"), time.Second)
	require.NoError(t, err)
	put(t, q, "new")
	e.clock.Advance(time.Second)
	it, err := q.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "new", string(it.Value))
	assert.Equal(t, int64(-1), q.Stats().Committed, "the skip is not committed by Open (nothing is yet)")
	q = e.restart(q, queue.Options{}) // Close commits the skip
	assert.Equal(t, int64(1), q.Stats().Committed)
	assert.Equal(t, []string{"new"}, drain(t, q))
}

func TestPeek(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	put(t, q, "a", "b")
	_, err := q.Put([]byte("gone"), time.Second)
	require.NoError(t, err)
	put(t, q, "c")
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	b, err := q.Open(context.Background())
	require.NoError(t, err)
	require.NoError(t, q.Abort(b.Lease))
	e.clock.Advance(time.Second)

	values := func(its []queue.Item) []string {
		var out []string
		for _, it := range its {
			out = append(out, string(it.Value))
		}
		return out
	}
	its, err := q.Peek(10)
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "c"}, values(its), "not a (leased), not gone (expired)")
	its, err = q.Peek(1)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, values(its))
	assert.Equal(t, 1, q.Stats().Open, "Peek hands nothing out")
	require.NoError(t, q.Confirm(a.Lease))
}

func TestClose(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{SweepInterval: time.Second})
	put(t, q, "a")
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	armed := e.clock.armedCount()

	// Waiting calls return ErrClosed.
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := q.Get(context.Background())
			errs <- err
		}()
	}
	e.clock.waitArmed(armed+2, 3) // two waiting Gets and the sweep
	require.NoError(t, q.Close())
	for range 2 {
		assert.ErrorIs(t, <-errs, queue.ErrClosed)
	}
	assert.Empty(t, leftoverQueueGoroutines(), "no goroutine of the queue after Close")

	for name, call := range map[string]func() error{
		"Get":     func() error { _, err := q.Get(context.Background()); return err },
		"Open":    func() error { _, err := q.Open(context.Background()); return err },
		"Confirm": func() error { return q.Confirm(a.Lease) },
		"Abort":   func() error { return q.Abort(a.Lease) },
		"Put":     func() error { _, err := q.Put([]byte("x"), 0); return err },
		"Peek":    func() error { _, err := q.Peek(1); return err },
		"Sweep":   func() error { _, err := q.Sweep(); return err },
		"Close":   q.Close,
	} {
		assert.ErrorIs(t, call(), queue.ErrClosed, name)
	}
}

// TestLogClosedWhileWaiting: a waiting Get reports its log's closing.
func TestLogClosedWhileWaiting(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	errs := make(chan error, 1)
	go func() {
		_, err := q.Get(context.Background())
		errs <- err
	}()
	e.closeStores()
	assert.ErrorIs(t, <-errs, storage.ErrClosed)
	require.NoError(t, q.Close())
}

// TestCommitFailure: a failed commit fails the queue.
func TestCommitFailure(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	put(t, q, "a", "b")
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	require.NoError(t, e.ost.Close())
	err = q.Confirm(a.Lease)
	assert.ErrorIs(t, err, offsets.ErrClosed)
	_, err = q.Open(polled())
	assert.ErrorIs(t, err, offsets.ErrClosed, "the queue failed")
	assert.ErrorIs(t, q.Stats().Err, offsets.ErrClosed)
	assert.NoError(t, q.Close(), "nothing more to commit")
	e.ost, err = offsets.Open(e.dir+"/offsets", offsets.Options{})
	require.NoError(t, err)
	q = e.open(queue.Options{})
	assert.Equal(t, []string{"a", "b"}, drain(t, q), "the failed confirm did not count")
}

func TestNewPositions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offset  int64
		meta    string
		wantErr error
		want    []string
	}{
		{"reset by seglog offsets (no metadata)", 2, "", nil, []string{"c", "d"}},
		{"with a confirmed-above set", 1, "q1 1+1", nil, []string{"b", "d"}},
		{"past the end", 9, "", nil, nil},
		{"metadata of another tool", 0, "hello", queue.ErrCorrupt, nil},
		{"bad run", 0, "q1 0+1", queue.ErrCorrupt, nil},
		{"bad number", 0, "q1 1+x", queue.ErrCorrupt, nil},
		{"no run", 0, "q1", queue.ErrCorrupt, nil},
		{"overflow", 1, "q1 9223372036854775806+1", queue.ErrCorrupt, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			q := e.open(queue.Options{})
			put(t, q, "a", "b", "c", "d")
			require.NoError(t, q.Close())
			require.NoError(t, e.ost.Commit(queue.Group, "jobs", 0, tc.offset, tc.meta))
			q, err := queue.Open(e.store, e.ost, "jobs", queue.Options{Clock: e.clock, SweepInterval: -1})
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			defer q.Close()
			assert.Equal(t, tc.want, drain(t, q))
		})
	}
}

func TestInvalid(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.store.CreateTopic("jobs", 1, storage.TopicConfig{}))
	l, err := e.store.Log("jobs", 0)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		key  queue.Key
		opts queue.Options
	}{
		{"no group", queue.Key{Topic: "jobs"}, queue.Options{}},
		{"no topic", queue.Key{Group: "g"}, queue.Options{}},
		{"negative partition", queue.Key{Group: "g", Topic: "jobs", Partition: -1}, queue.Options{}},
		{"window too large", queue.Key{Group: "g", Topic: "jobs"}, queue.Options{Window: queue.MaxWindow + 1}},
		{"negative window", queue.Key{Group: "g", Topic: "jobs"}, queue.Options{Window: -1}},
		{"negative lease", queue.Key{Group: "g", Topic: "jobs"}, queue.Options{LeaseTimeout: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := queue.New(l, e.ost, tc.key, tc.opts)
			assert.ErrorIs(t, err, queue.ErrInvalidOptions)
		})
	}
	_, err = queue.Open(e.store, e.ost, "../x", queue.Options{})
	assert.ErrorIs(t, err, storage.ErrInvalidTopic)
	require.NoError(t, e.store.CreateTopic("wide", 3, storage.TopicConfig{}))
	_, err = queue.Open(e.store, e.ost, "wide", queue.Options{})
	assert.ErrorIs(t, err, storage.ErrTopicExists, "a queue is a topic of one partition")

	q := e.open(queue.Options{})
	_, err = q.Put([]byte("x"), -time.Second)
	assert.ErrorIs(t, err, queue.ErrInvalidOptions)
	_, err = q.Append()
	assert.ErrorIs(t, err, queue.ErrInvalidOptions)
}

// TestNewSubscribes: a new queue holds its whole topic for retention.
func TestNewSubscribes(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	put(t, q, "a")
	off, ok := e.ost.MinCommitted("jobs", 0)
	assert.True(t, ok)
	assert.Equal(t, int64(0), off)
	_, err := q.Get(context.Background())
	require.NoError(t, err)
	off, ok = e.ost.MinCommitted("jobs", 0)
	assert.True(t, ok)
	assert.Equal(t, int64(1), off)
}

// TestRetentionDeletesUnreadItems: items that retention deletes before
// they are handed out are counted as lost, at run time and at open.
func TestRetentionDeletesUnreadItems(t *testing.T) {
	dir := t.TempDir()
	// One item per segment: a Reader's buffer holds one segment's batches.
	store, err := storage.OpenStore(dir, storage.StoreOptions{Log: storage.Options{SegmentBytes: 150}})
	require.NoError(t, err)
	defer store.Close()
	ost, err := offsets.Open(dir+"/offsets", offsets.Options{})
	require.NoError(t, err)
	defer ost.Close()
	clock := newFakeClock()
	q, err := queue.Open(store, ost, "jobs", queue.Options{Clock: clock, SweepInterval: -1})
	require.NoError(t, err)
	for i := range 20 {
		_, err := q.Put(fmt.Appendf(nil, "item-%02d-%s", i, "padding-padding-padding"), 0)
		require.NoError(t, err)
	}
	first, err := q.Open(context.Background())
	require.NoError(t, err)
	l, err := store.Log("jobs", 0)
	require.NoError(t, err)
	res, err := l.DeleteSegmentsBefore(10)
	require.NoError(t, err)
	require.Positive(t, res.Segments)
	start := res.StartOffset

	it, err := q.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, start, it.Offset, "goes on at the log start")
	st := q.Stats()
	assert.Equal(t, start-1, st.Lost)
	assert.Equal(t, int64(0), st.Head, "the first item is still leased")
	require.NoError(t, q.Confirm(first.Lease))
	assert.Equal(t, start, q.Stats().Head, "the head passes the lost items")
	require.NoError(t, q.Confirm(it.Lease))
	assert.Equal(t, start+1, q.Stats().Committed)
	require.NoError(t, q.Close())

	// At open: the committed position is below the log start.
	require.NoError(t, ost.Commit(queue.Group, "jobs", 0, 0, ""))
	q, err = queue.Open(store, ost, "jobs", queue.Options{Clock: clock, SweepInterval: -1})
	require.NoError(t, err)
	defer q.Close()
	assert.Equal(t, start, q.Stats().Lost)
	it, err = q.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, start, it.Offset)
}

// TestConcurrentConsumers: consumers that open, confirm, abort and let
// leases expire at random, concurrently, finish every item exactly once.
func TestConcurrentConsumers(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{LeaseTimeout: time.Second, Window: 64})
	const items = 2000
	var (
		mu        sync.Mutex
		confirmed = map[int64]int{}
		stranded  []queue.LeaseID // leases left to expire
	)
	var wg sync.WaitGroup
	producer := func() {
		defer wg.Done()
		for i := range items {
			_, err := q.Put([]byte(strconv.Itoa(i)), 0)
			assert.NoError(t, err)
		}
	}
	wg.Add(1)
	go producer()
	done := make(chan struct{})
	var finish sync.Once
	var consumers sync.WaitGroup
	for c := range 4 {
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for {
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					select {
					case <-done:
					case <-ctx.Done():
					}
					cancel()
				}()
				it, err := q.Open(ctx)
				cancel()
				if err != nil {
					assert.ErrorIs(t, err, context.Canceled)
					return
				}
				if strconv.Itoa(int(it.Offset)) != string(it.Value) {
					t.Errorf("offset %d holds %q", it.Offset, it.Value)
				}
				switch r := rng.IntN(10); {
				case r == 0:
					// The clock runs fast: the lease may have expired
					// already, as Confirm below allows.
					if err := q.Abort(it.Lease); !errors.Is(err, queue.ErrLeaseExpired) {
						assert.NoError(t, err)
					}
				case r == 1:
					mu.Lock()
					stranded = append(stranded, it.Lease)
					mu.Unlock()
				default:
					err := q.Confirm(it.Lease)
					if errors.Is(err, queue.ErrLeaseExpired) {
						continue
					}
					assert.NoError(t, err)
					mu.Lock()
					confirmed[it.Offset]++
					n := len(confirmed)
					mu.Unlock()
					if n == items {
						finish.Do(func() { close(done) })
					}
				}
			}
		}()
	}
	// Expire the stranded leases now and then until every item is done.
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			e.clock.Advance(100 * time.Millisecond)
			runtimeYield()
		}
	}()
	consumers.Wait()
	wg.Wait()
	assert.Len(t, confirmed, items)
	for off, n := range confirmed {
		if n != 1 {
			t.Errorf("offset %d confirmed %d times", off, n)
		}
	}
	st := q.Stats()
	assert.Equal(t, int64(items), st.Head)
	assert.Equal(t, int64(items), st.Committed)
	assert.Zero(t, st.ConfirmedAbove)
	mu.Lock()
	for _, id := range stranded {
		assert.ErrorIs(t, q.Confirm(id), queue.ErrLeaseExpired)
	}
	mu.Unlock()
	ids := make([]int, 0, len(confirmed))
	for off := range confirmed {
		ids = append(ids, int(off))
	}
	sort.Ints(ids)
	assert.Equal(t, items-1, ids[len(ids)-1])
}

func runtimeYield() { time.Sleep(time.Millisecond) }
