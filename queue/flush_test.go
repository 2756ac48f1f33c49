package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/queue"
)

func TestFlushDiscardsWaitingUnreadAndLeasedItems(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	put(t, q, "a", "b", "c", "d")
	leased, err := q.Open(context.Background())
	require.NoError(t, err)
	aborted, err := q.Open(context.Background())
	require.NoError(t, err)
	require.NoError(t, q.Abort(aborted.Lease)) // "b" waits to be handed out again

	n, err := q.Flush()
	require.NoError(t, err)
	assert.Equal(t, int64(4), n, "a leased, b waiting, c and d unread")

	_, err = q.Get(polled())
	assert.ErrorIs(t, err, context.Canceled, "nothing is left to hand out")
	assert.ErrorIs(t, q.Confirm(leased.Lease), queue.ErrUnknownLease, "the flush ended the lease")
	st := q.Stats()
	assert.Equal(t, int64(4), st.Head)
	assert.Equal(t, int64(4), st.Committed, "Flush commits before it returns")
	assert.Zero(t, st.Pending)
	assert.Zero(t, st.Open)
	assert.Zero(t, st.Bytes)
	assert.Equal(t, uint64(4), st.Flushed)

	// Items put after the flush are handed out, after a restart too.
	put(t, q, "e")
	q = e.restart(q, queue.Options{})
	it, err := q.Get(polled())
	require.NoError(t, err)
	assert.Equal(t, "e", string(it.Value))
}

func TestGetWaitingAcrossFlushGetsTheNextPut(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	got := make(chan string, 1)
	go func() {
		it, err := q.Get(context.Background())
		assert.NoError(t, err)
		got <- string(it.Value)
	}()
	require.Eventually(t, func() bool { return len(queueGoroutines()) > 0 }, 10*time.Second, time.Millisecond)
	_, err := q.Flush()
	require.NoError(t, err)
	put(t, q, "after")
	assert.Equal(t, "after", <-got)
}

func TestStatsBytesCountValuesNotDone(t *testing.T) {
	e := newEnv(t)
	q := e.open(queue.Options{})
	assert.Zero(t, q.Stats().Bytes)
	put(t, q, "aa", "bbbb", "cccccccc")
	assert.Equal(t, int64(14), q.Stats().Bytes, "unread items count")

	it, err := q.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(14), q.Stats().Bytes, "a leased item still counts")
	require.NoError(t, q.Confirm(it.Lease))
	assert.Equal(t, int64(12), q.Stats().Bytes)

	it, err = q.Open(context.Background())
	require.NoError(t, err)
	require.NoError(t, q.Abort(it.Lease))
	assert.Equal(t, int64(12), q.Stats().Bytes, "an aborted item counts again, once")

	_, err = q.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(8), q.Stats().Bytes)

	// Expired items stop counting when skipped.
	_, err = q.Put([]byte("dddddddddddddddd"), time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(24), q.Stats().Bytes)
	e.clock.Advance(2 * time.Second)
	_, err = q.Sweep()
	require.NoError(t, err)
	assert.Equal(t, int64(24), q.Stats().Bytes, "the sweep stops at the unexpired item at the head")
	_, err = q.Get(context.Background())
	require.NoError(t, err)
	_, err = q.Get(polled())
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, q.Stats().Bytes, "the expired item was skipped")

	// After a restart the backlog is counted again from the log, and items
	// confirmed above the head are left out.
	put(t, q, "x", "yy", "zzz")
	it, err = q.Open(context.Background())
	require.NoError(t, err)
	it2, err := q.Open(context.Background())
	require.NoError(t, err)
	require.NoError(t, q.Confirm(it2.Lease)) // "yy" confirmed above the open "x"
	_ = it
	q = e.restart(q, queue.Options{})
	assert.Equal(t, int64(4), q.Stats().Bytes, "x and zzz")
}
