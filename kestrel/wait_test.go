package kestrel_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/kestrel"
)

// waitConnections waits until stats reports n open connections (c's
// own included).
func waitConnections(t *testing.T, c *client, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return statsOf(t, c)["curr_connections"] == fmt.Sprint(n) },
		5*time.Second, time.Millisecond, "curr_connections reaches %d", n)
}

func TestAWaitingGetWhoseClientLeavesTakesNoItem(t *testing.T) {
	for _, req := range []string{"get q/t=60000\r\n", "get q/open/t=60000\r\n", "get q/t=60000\r\nversion\r\nget q/t=60000\r\n"} {
		t.Run(req, func(t *testing.T) {
			s := startServer(t, kestrel.Options{})
			a, b := s.dial(), s.dial()
			a.send(req)
			require.Eventually(t, func() bool { return statsOf(t, b)["cmd_get"] == "1" }, 5*time.Second, time.Millisecond)
			require.NoError(t, a.nc.Close())
			// The server lets a go while its get waits.
			waitConnections(t, b, 1)
			b.set("q", "precious")
			assert.Equal(t, []string{"VALUE q 0 8", "precious", "END"}, b.do("get q\r\n"), "the item is b's")
		})
	}
}

func TestRepliesBeforeAWaitingGetAreSentBeforeItWaits(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	c.send(setReq("q", "x") + "get q/open\r\nget other/t=60000\r\n")
	assert.Equal(t, "STORED", c.line(), "the set's reply does not wait for the get after it")
	assert.Equal(t, []string{"VALUE q/open 0 1", "x", "END"}, c.replies())
}

func TestThousandsOfConnectionsComeAndGo(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	for i := range 2000 {
		c := s.dial()
		if i%2 == 0 {
			c.send("get q/open/t=60000\r\n")
		} else {
			require.Equal(t, []string{"VERSION " + kestrel.Version}, c.do("version\r\n"))
		}
		require.NoError(t, c.nc.Close())
	}
	c := s.dial()
	waitConnections(t, c, 1)
}

func TestARequestPipelinedBehindAWaitingGetIsServedAfterIt(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	c.send("get q/t=100\r\nversion\r\n")
	assert.Equal(t, []string{"END"}, c.replies())
	assert.Equal(t, []string{"VERSION " + kestrel.Version}, c.replies())
}

func TestAWaitingGetIsNotIdle(t *testing.T) {
	s := startServer(t, kestrel.Options{IdleTimeout: 100 * time.Millisecond})
	c := s.dial()
	start := time.Now()
	assert.Equal(t, []string{"END"}, c.do("get q/t=500\r\n"))
	assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond)
	assert.Equal(t, []string{"VERSION " + kestrel.Version}, c.do("version\r\n"))
}

func TestALargeReplyAfterAWaitLongerThanTheIdleTimeoutIsSent(t *testing.T) {
	const idle = 200 * time.Millisecond
	s := startServer(t, kestrel.Options{IdleTimeout: idle})
	a, b := s.dial(), s.dial()
	// a's last reply was written; its get then waits longer than the
	// idle timeout before a value larger than the reply buffer comes.
	require.Equal(t, []string{"VERSION " + kestrel.Version}, a.do("version\r\n"))
	a.send("get q/t=10000\r\n")
	require.Eventually(t, func() bool { return statsOf(t, b)["cmd_get"] == "1" }, 5*time.Second, time.Millisecond)
	time.Sleep(2 * idle) // the wait outlasts the idle timeout
	big := strings.Repeat("v", 64<<10)
	s.dial().set("q", big) // b idled out meanwhile
	assert.Equal(t, []string{"VALUE q/t=10000 0 65536", big, "END"}, a.replies())
}

func TestAValueReadMoreSlowlyThanTheIdleTimeoutIsSentWhole(t *testing.T) {
	const idle, size = 400 * time.Millisecond, 8 << 20
	s := startServer(t, kestrel.Options{IdleTimeout: idle, MaxItemSize: size})
	c := s.dial()
	big := strings.Repeat("v", size)
	c.set("q", big)
	c.send("get q\r\n")
	// The client takes the reply a piece every eighth of the timeout:
	// the whole is slower than the timeout, no pause is that long.
	require.Equal(t, fmt.Sprintf("VALUE q 0 %d", size), c.line())
	buf := make([]byte, 256<<10)
	got := 0
	for got < size+2 {
		time.Sleep(idle / 8)
		require.NoError(t, c.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
		n, err := c.r.Read(buf[:min(len(buf), size+2-got)])
		require.NoError(t, err, "after %d bytes", got)
		got += n
	}
	assert.Equal(t, []string{"END"}, c.replies())
}
