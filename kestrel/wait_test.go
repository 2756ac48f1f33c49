package kestrel_test

import (
	"fmt"
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
