package queue_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/storage"
)

// fakeClock is a Clock that moves only when Advance is called. Timers
// fire in Advance; waitTimers lets a test wait until a goroutine has set
// a timer, so no test sleeps.
type fakeClock struct {
	mu     sync.Mutex
	cond   *sync.Cond
	now    time.Time
	timers []*fakeTimer
	armed  int // timers ever set
}

type fakeTimer struct {
	c   *fakeClock
	due time.Time
	ch  chan time.Time
}

func newFakeClock() *fakeClock {
	c := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) queue.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, due: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.armed++
	if d <= 0 {
		t.ch <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	c.cond.Broadcast()
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, o := range t.c.timers {
		if o == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			t.c.cond.Broadcast()
			return true
		}
	}
	return false
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.due.After(c.now) {
			kept = append(kept, t)
		} else {
			t.ch <- c.now
		}
	}
	c.timers = kept
	c.cond.Broadcast()
}

// waitArmed blocks until at least n timers were ever set and at least
// pending are waiting to fire.
func (c *fakeClock) waitArmed(n, pending int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.armed < n || len(c.timers) < pending {
		c.cond.Wait()
	}
}

func (c *fakeClock) armedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armed
}

// env is a data directory with a store and an offsets store.
type env struct {
	t     testing.TB
	dir   string
	store *storage.Store
	ost   *offsets.Store
	clock *fakeClock
}

func newEnv(t testing.TB) *env {
	e := &env{t: t, dir: t.TempDir(), clock: newFakeClock()}
	e.reopenStores()
	t.Cleanup(e.closeStores)
	return e
}

func (e *env) reopenStores() {
	var err error
	e.store, err = storage.OpenStore(e.dir, storage.StoreOptions{})
	require.NoError(e.t, err)
	e.ost, err = offsets.Open(filepath.Join(e.dir, "offsets"), offsets.Options{})
	require.NoError(e.t, err)
}

func (e *env) closeStores() {
	if e.store != nil {
		_ = e.store.Close()
		_ = e.ost.Close()
		e.store, e.ost = nil, nil
	}
}

// open opens queue "jobs" with the fake clock and no background sweep
// unless opts say otherwise.
func (e *env) open(opts queue.Options) *queue.Queue {
	e.t.Helper()
	if opts.Clock == nil {
		opts.Clock = e.clock
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = -1
	}
	q, err := queue.Open(e.store, e.ost, "jobs", opts)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = q.Close() })
	return q
}

// restart closes q and the stores, as a clean shutdown, and reopens.
func (e *env) restart(q *queue.Queue, opts queue.Options) *queue.Queue {
	e.t.Helper()
	require.NoError(e.t, q.Close())
	e.closeStores()
	e.reopenStores()
	return e.open(opts)
}

func put(t testing.TB, q *queue.Queue, values ...string) {
	t.Helper()
	for _, v := range values {
		_, err := q.Put([]byte(v), 0)
		require.NoError(t, err)
	}
}

// polled is a context that is already done: Get and Open then poll.
func polled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// drain opens every item available now and returns their values; the
// leases stay open.
func drain(t testing.TB, q *queue.Queue) []string {
	t.Helper()
	var out []string
	for {
		it, err := q.Open(polled())
		if err != nil {
			require.ErrorIs(t, err, context.Canceled)
			return out
		}
		out = append(out, string(it.Value))
	}
}

// leftoverQueueGoroutines waits up to a deadline for the goroutines of
// closed queues to finish exiting and returns those still there. A
// goroutine that has signalled its exit (closed its done channel) is
// still listed until it returns, so a single look would race with it.
func leftoverQueueGoroutines() []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		gs := queueGoroutines()
		if len(gs) == 0 || time.Now().After(deadline) {
			return gs
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// queueGoroutines returns the stacks of goroutines running a Queue
// method (the sweep, a Log.Wait helper, a waiting call).
func queueGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "seglog/queue.(*Queue)") {
			out = append(out, g)
		}
	}
	return out
}
