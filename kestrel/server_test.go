package kestrel_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seglog/seglog/kestrel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMemcacheClientEnqueuesAndReliablyDequeues(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	mc := memcache.New(s.addr())
	mc.Timeout = 10 * time.Second
	defer mc.Close()

	for _, v := range []string{"one", "two", "three"} {
		require.NoError(t, mc.Set(&memcache.Item{Key: "jobs", Value: []byte(v), Flags: 42}))
	}
	it, err := mc.Get("jobs/open")
	require.NoError(t, err)
	assert.Equal(t, "one", string(it.Value))
	assert.Equal(t, uint32(42), it.Flags, "flags are kept")
	it, err = mc.Get("jobs/close/open")
	require.NoError(t, err)
	assert.Equal(t, "two", string(it.Value), "close confirmed one, open handed out two")
	_, err = mc.Get("jobs/abort")
	assert.ErrorIs(t, err, memcache.ErrCacheMiss, "abort answers END")
	it, err = mc.Get("jobs/peek")
	require.NoError(t, err)
	assert.Equal(t, "two", string(it.Value), "the aborted item is next again")
	it, err = mc.Get("jobs/open")
	require.NoError(t, err)
	assert.Equal(t, "two", string(it.Value))
	_, err = mc.Get("jobs/close")
	assert.ErrorIs(t, err, memcache.ErrCacheMiss)
	it, err = mc.Get("jobs")
	require.NoError(t, err)
	assert.Equal(t, "three", string(it.Value), "a plain get removes")
	_, err = mc.Get("jobs")
	assert.ErrorIs(t, err, memcache.ErrCacheMiss)
	_, err = mc.Get("jobs/t=20")
	assert.ErrorIs(t, err, memcache.ErrCacheMiss, "the wait ends with END")

	// The standard commands a client library sends.
	require.NoError(t, mc.Set(&memcache.Item{Key: "other", Value: []byte("x")}))
	got, err := mc.GetMulti([]string{"other/peek", "jobs/peek"})
	require.NoError(t, err)
	require.Contains(t, got, "other/peek", "VALUE echoes the key as sent")
	assert.Equal(t, "x", string(got["other/peek"].Value))
	require.NoError(t, mc.FlushAll())
	_, err = mc.Get("other")
	assert.ErrorIs(t, err, memcache.ErrCacheMiss)
	require.NoError(t, mc.Delete("other"))
	assert.ErrorIs(t, mc.Delete("never-made"), memcache.ErrCacheMiss)
	require.NoError(t, mc.Ping())
}

func TestRawSessionSetOpenClose(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	c.set("work", "hello")
	assert.Equal(t, []string{"VALUE work/open 0 5", "hello", "END"}, c.do("get work/open\r\n"))
	assert.Equal(t, []string{"END"}, c.do("get work/close\r\n"))
	assert.Equal(t, []string{"END"}, c.do("get work\r\n"), "confirmed: not handed out again")
	assert.Equal(t, []string{"VERSION " + kestrel.Version}, c.do("version\r\n"))
	c.set("work", "again")
	assert.Equal(t, []string{"VALUE work 0 5 1", "again", "END"}, c.do("gets work\r\n"), "gets adds the offset")
}

func TestDroppedConnectionHandsItsOpenReadBack(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	a := s.dial()
	a.set("q", "precious")
	assert.Equal(t, []string{"VALUE q/open 0 8", "precious", "END"}, a.do("get q/open\r\n"))

	b := s.dial()
	assert.Equal(t, []string{"END"}, b.do("get q/open\r\n"), "the open read is a's alone")
	require.NoError(t, a.nc.Close())
	// The abort happens when the server sees the connection end: wait for
	// the item with t=.
	assert.Equal(t, []string{"VALUE q/open/t=10000 0 8", "precious", "END"}, b.do("get q/open/t=10000\r\n"))
	assert.Equal(t, []string{"END"}, b.do("get q/close\r\n"))
	assert.Equal(t, []string{"END"}, b.do("get q/peek\r\n"), "confirmed by b")
}

func TestGetWaitsUpToTimeout(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	a, b := s.dial(), s.dial()
	a.send("get q/t=10000\r\n")
	// a waits inside the server; b's set wakes it.
	require.Eventually(t, func() bool {
		st := statsOf(t, b)
		return st["cmd_get"] == "1"
	}, 10*time.Second, time.Millisecond)
	b.set("q", "late")
	assert.Equal(t, []string{"VALUE q/t=10000 0 4", "late", "END"}, a.replies())

	start := time.Now()
	assert.Equal(t, []string{"END"}, a.do("get q/t=50\r\n"))
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "it waited the t= given")
	assert.Equal(t, []string{"END"}, a.do("get q/t=0\r\n"))
}

func TestPipelinedRequestsAreAnsweredInOrder(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	var req strings.Builder
	for i := range 50 {
		req.WriteString(setReq("p", fmt.Sprintf("item-%d", i)))
	}
	req.WriteString("get p/open\r\nbogus\r\nget p/close/open\r\nversion\r\nget p/peek\r\n")
	c.send(req.String())
	for range 50 {
		require.Equal(t, "STORED", c.line())
	}
	assert.Equal(t, []string{"VALUE p/open 0 6", "item-0", "END"}, c.replies())
	assert.Equal(t, []string{"ERROR"}, c.replies())
	assert.Equal(t, []string{"VALUE p/close/open 0 6", "item-1", "END"}, c.replies())
	assert.Equal(t, []string{"VERSION " + kestrel.Version}, c.replies())
	assert.Equal(t, []string{"VALUE p/peek 0 6", "item-2", "END"}, c.replies())
}

func TestBinaryValuesComeBackByteForByte(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	values := []string{"a\r\nb", "\r\n", "\r\nEND\r\n", "\x00\xff\r", "", "set x 0 0 1\r\n"}
	for _, v := range values {
		c.set("bin", v)
	}
	for _, v := range values {
		got := c.do("get bin\r\n")
		require.Len(t, got, 3)
		assert.Equal(t, v, got[1])
	}
}

func TestBadRequestsGetErrorsAndTheConnectionGoesOn(t *testing.T) {
	s := startServer(t, kestrel.Options{MaxItemSize: 16})
	c := s.dial()
	cases := []struct {
		req, reply string
	}{
		{"nonsense\r\n", "ERROR"},
		{"get bad/name!\r\n", "CLIENT_ERROR"},
		{"get ..\r\n", "CLIENT_ERROR"},
		{"set bad*name 0 0 1\r\nx\r\n", "CLIENT_ERROR"},
		{"get q/opne\r\n", "CLIENT_ERROR unknown option"},
		{"get q/peek/close\r\n", "CLIENT_ERROR options"},
		{"set q 0 0 2\r\nxyz\r\n", "CLIENT_ERROR bad data chunk"},
		{"set q 0 0 17\r\n" + strings.Repeat("x", 17) + "\r\n", "SERVER_ERROR object too large"},
		{"set q 0 0\r\n", "CLIENT_ERROR bad command line format"},
		{"get " + strings.Repeat("q", 5000) + "\r\n", "CLIENT_ERROR line too long"},
		{"shutdown\r\n", "CLIENT_ERROR shutdown is not enabled"},
		{"\x00\x00\x00\r\n", "ERROR"},
		{"\xff\xfe get q\r\n", "ERROR"},
		{"get q\x00\r\n", "CLIENT_ERROR"},
		{"   \n", "ERROR"},
		{"set q 0 0 -5\r\n", "CLIENT_ERROR bad command line format"},
		{"set q 0 0 99999999999999999999999\r\n", "CLIENT_ERROR bad command line format"},
		{"set q 0 0 3\r\nabcdefgh\r\n", "CLIENT_ERROR bad data chunk"},
		{"get " + strings.Repeat("x", 3000) + "\n", "CLIENT_ERROR line too long"},
	}
	for _, tc := range cases {
		got := c.do(tc.req)
		require.Len(t, got, 1, "%q", tc.req)
		assert.True(t, strings.HasPrefix(got[0], tc.reply), "%q: got %q, want %q...", tc.req, got[0], tc.reply)
		c.set("q", "still here")
		assert.Equal(t, []string{"VALUE q 0 10", "still here", "END"}, c.do("get q\r\n"))
	}
}

func TestValueTooLargeToSkipClosesTheConnection(t *testing.T) {
	s := startServer(t, kestrel.Options{MaxItemSize: 16})
	c := s.dial()
	assert.True(t, strings.HasPrefix(c.do("set q 0 0 100000000000\r\n")[0], "SERVER_ERROR object too large"))
	assert.True(t, c.closed())
}

func TestOpenReadRules(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	c.set("r", "a")
	c.set("r", "b")
	require.Equal(t, "a", c.do("get r/open\r\n")[1])
	assert.True(t, strings.HasPrefix(c.do("get r/open\r\n")[0], "CLIENT_ERROR 1 reads open"), "one open read per queue by default")
	assert.True(t, strings.HasPrefix(c.do("get r\r\n")[0], "CLIENT_ERROR a read is open"), "no removing get beside an open read")
	assert.Equal(t, []string{"VALUE r/peek 0 1", "b", "END"}, c.do("get r/peek\r\n"), "peek skips the open read")
	assert.Equal(t, []string{"END"}, c.do("get r/close\r\n"))
	assert.Equal(t, []string{"END"}, c.do("get r/close\r\n"), "nothing left to close")
	assert.Equal(t, []string{"END"}, c.do("get r/abort\r\n"), "nothing to abort")

	// With more open reads allowed, close and abort take the oldest.
	s2 := startServer(t, kestrel.Options{MaxOpenReads: 2})
	d := s2.dial()
	d.set("r", "x")
	d.set("r", "y")
	require.Equal(t, "x", d.do("get r/open\r\n")[1])
	require.Equal(t, "y", d.do("get r/open\r\n")[1])
	assert.Equal(t, []string{"END"}, d.do("get r/abort\r\n"))
	assert.Equal(t, []string{"END"}, d.do("get r/close\r\n"))
	assert.Equal(t, []string{"VALUE r/open 0 1", "x", "END"}, d.do("get r/open\r\n"), "x was aborted, y confirmed")
}

func TestAnItemIsNeverHandedToTwoOpenReaders(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	const n, readers = 200, 8
	p := s.dial()
	for i := range n {
		p.set("race", fmt.Sprintf("v%d", i))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range readers {
		c := s.dial()
		wg.Go(func() {
			first := true
			for {
				req := "get race/close/open\r\n"
				if first {
					req, first = "get race/open\r\n", false
				}
				got := c.do(req)
				if len(got) == 1 {
					return
				}
				mu.Lock()
				seen[got[1]]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, n)
	for v, k := range seen {
		assert.Equal(t, 1, k, "%s handed out %d times", v, k)
	}
}

func TestExptime(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	past := time.Now().Add(-time.Hour).Unix()
	future := time.Now().Add(time.Hour).Unix()
	for _, r := range []string{
		"set e 0 -1 4\r\nneg!\r\n",
		fmt.Sprintf("set e 0 %d 4\r\npast\r\n", past),
		fmt.Sprintf("set e 0 %d 6\r\nfuture\r\n", future),
		"set e 0 3600 8\r\nrelative\r\n",
		"set e 0 0 5\r\nnever\r\n",
	} {
		require.Equal(t, []string{"STORED"}, c.do(r))
	}
	for _, want := range []string{"future", "relative", "never"} {
		assert.Equal(t, want, c.do("get e\r\n")[1])
	}
	assert.Equal(t, []string{"END"}, c.do("get e\r\n"))
	st := statsOf(t, c)
	assert.Equal(t, "2", st["queue_e_expired_items"], "the two already expired were skipped")
}

func TestStatsReportEachQueue(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	c.set("s1", "12345")
	c.set("s1", "678")
	c.set("s2", "x")
	require.Len(t, c.do("get s1/open\r\n"), 3)
	st := statsOf(t, c)
	assert.Equal(t, "1", st["queue_s1_items"], "one waits, one is open")
	assert.Equal(t, "8", st["queue_s1_bytes"])
	assert.Equal(t, "1", st["queue_s1_open_transactions"])
	assert.Equal(t, "0", st["queue_s1_expired_items"])
	assert.Contains(t, st, "queue_s1_age")
	assert.Equal(t, "1", st["queue_s2_items"])
	assert.Equal(t, "2", st["curr_items"])
	assert.Equal(t, "3", st["total_items"])
	assert.Equal(t, "3", st["cmd_set"])
	assert.Equal(t, "1", st["get_hits"])
	assert.Equal(t, kestrel.Version, st["version"])
}

// statsOf runs stats on c and returns its figures by name.
func statsOf(t *testing.T, c *client) map[string]string {
	t.Helper()
	lines := c.do("stats\r\n")
	require.Equal(t, "END", lines[len(lines)-1])
	out := map[string]string{}
	for _, l := range lines[:len(lines)-1] {
		f := strings.Fields(l)
		require.Len(t, f, 3, "%q", l)
		require.Equal(t, "STAT", f[0])
		out[f[1]] = f[2]
	}
	return out
}

func TestDeleteAndFlush(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	c.set("d", "1")
	c.set("d", "2")
	require.Len(t, c.do("get d/open\r\n"), 3)
	assert.Equal(t, []string{"END"}, c.do("flush d\r\n"))
	assert.Equal(t, []string{"END"}, c.do("get d/close\r\n"), "the flushed open read is gone")
	assert.Equal(t, []string{"END"}, c.do("get d\r\n"))
	c.set("d", "3")
	assert.Equal(t, []string{"DELETED"}, c.do("delete d\r\n"))
	assert.Equal(t, []string{"NOT_FOUND"}, c.do("delete d\r\n"))
	assert.Equal(t, []string{"END"}, c.do("get d\r\n"), "a new, empty queue")
	c.set("d", "4")
	assert.Equal(t, "4", c.do("get d\r\n")[1])
}

func TestAQueueOnlySetBeforeARestartIsStillAQueue(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	c.set("only", "x")
	s.restart(kestrel.Options{})
	c = s.dial()
	assert.Equal(t, "1", statsOf(t, c)["queue_only_items"], "stats lists it")
	assert.Equal(t, []string{"OK"}, c.do("flush_all\r\n"))
	assert.Equal(t, []string{"END"}, c.do("get only\r\n"), "flush_all flushed it")
}

func TestItemsAndConfirmsOutliveARestart(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	c.set("keep", "a")
	c.set("keep", "b")
	c.set("keep", "c")
	require.Equal(t, "a", c.do("get keep/open\r\n")[1])
	require.Equal(t, "b", c.do("get keep/close/open\r\n")[1])
	s.restart(kestrel.Options{})
	c = s.dial()
	st := statsOf(t, c)
	assert.Equal(t, "2", st["queue_keep_items"], "b (open at the stop) and c")
	assert.Equal(t, "b", c.do("get keep\r\n")[1])
	assert.Equal(t, "c", c.do("get keep\r\n")[1])
}

func TestCloseEndsWaitingGetsAndConnections(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	a, b := s.dial(), s.dial()
	a.set("w", "x")
	require.Len(t, a.do("get w/open\r\n"), 3)
	b.send("get w/t=60000\r\n")
	require.Eventually(t, func() bool { return statsOf(t, a)["cmd_get"] == "2" }, 10*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- s.srv.Close() }()
	assert.Equal(t, []string{"END"}, b.replies(), "the waiting get ends with END")
	assert.True(t, b.closed())
	assert.True(t, a.closed())
	require.NoError(t, <-closed)
	require.NoError(t, s.wait(), "Serve returns the stop's result")
	assert.ErrorIs(t, s.srv.Close(), kestrel.ErrClosed)
	_, err := net.Dial("tcp", s.addr())
	assert.Error(t, err, "the listener is closed")

	// a's open read was aborted: the item is there after a restart.
	s.restart(kestrel.Options{})
	c := s.dial()
	assert.Equal(t, "x", c.do("get w\r\n")[1])
}

func TestShutdownCommandStopsTheServer(t *testing.T) {
	s := startServer(t, kestrel.Options{EnableShutdown: true})
	c := s.dial()
	c.send("shutdown\r\n")
	assert.True(t, c.closed(), "no reply: the connection closes")
	select {
	case err := <-s.done:
		require.NoError(t, err)
		s.served, s.hasServed = err, true
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
}

func TestIdleConnectionIsClosed(t *testing.T) {
	s := startServer(t, kestrel.Options{IdleTimeout: 50 * time.Millisecond})
	c := s.dial()
	c.set("i", "x")
	require.Len(t, c.do("get i/open\r\n"), 3)
	assert.True(t, c.closed())
	d := s.dial()
	assert.Equal(t, "x", d.do("get i\r\n")[1], "the idle connection's open read was handed back")
}

func TestServeStopsWithItsContext(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	require.NoError(t, s.srv.Close())
	require.NoError(t, s.wait())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := kestrel.New(ln, s.store, s.ost, kestrel.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	cancel()
	require.NoError(t, <-done)
	assert.True(t, errors.Is(srv.Close(), kestrel.ErrClosed))
}

func TestNewRefusesBadOptions(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for _, o := range []kestrel.Options{{MaxItemSize: -1}, {MaxItemSize: 2 << 30}, {MaxOpenReads: -1}, {IdleTimeout: -time.Second}} {
		_, err := kestrel.New(ln, s.store, s.ost, o)
		assert.ErrorIs(t, err, kestrel.ErrInvalidOptions, "%+v", o)
	}
	_, err = kestrel.New(nil, s.store, s.ost, kestrel.Options{})
	assert.ErrorIs(t, err, kestrel.ErrInvalidOptions)
}

func TestCloseDoesNotWaitForAClientThatDoesNotRead(t *testing.T) {
	s := startServer(t, kestrel.Options{MaxItemSize: 1 << 20})
	c := s.dial()
	c.set("big", strings.Repeat("x", 1<<20))
	// Ask for the value many times without reading: the replies fill the
	// socket buffers and the server's write blocks.
	c.send(strings.Repeat("get big/peek\r\n", 64))
	other := s.dial()
	last := -1
	require.Eventually(t, func() bool {
		n, _ := strconv.Atoi(statsOf(t, other)["cmd_peek"])
		stuck := n > 0 && n < 64 && n == last
		last = n
		return stuck
	}, 20*time.Second, 100*time.Millisecond, "the server's writes block: the client reads nothing")
	done := make(chan error, 1)
	go func() { done <- s.srv.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for a client that does not read")
	}
}
