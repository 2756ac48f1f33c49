package kestrel_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/kestrel"
)

func TestAGetRefusedForOneKeyHandsOutNoItem(t *testing.T) {
	cases := []struct {
		name, setup, req, reply string
	}{
		{"a later key beside an open read", "get b/open\r\n", "get a b\r\n", "CLIENT_ERROR a read is open on b"},
		{"a later key over the open reads", "get b/open\r\n", "get a b/open\r\n", "CLIENT_ERROR 1 reads open on b"},
		{"the same queue opened twice", "", "get a/open a/open\r\n", "CLIENT_ERROR 1 reads open on a"},
		{"a later key with a bad name", "", "get a b!\r\n", "CLIENT_ERROR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, kestrel.Options{})
			c := s.dial()
			c.set("a", "x")
			c.set("b", "y")
			if tc.setup != "" {
				require.Len(t, c.do(tc.setup), 3)
			}
			got := c.do(tc.req)
			require.Len(t, got, 1, "the refused get hands out nothing: %q", got)
			assert.True(t, strings.HasPrefix(got[0], tc.reply), "%q", got[0])
			assert.Equal(t, []string{"VALUE a/peek 0 1", "x", "END"}, c.do("get a/peek\r\n"), "a's item is still there")
			assert.Equal(t, []string{"VALUE a 0 1", "x", "END"}, s.dial().do("get a\r\n"), "and not open on c")
		})
	}
}

func TestRequestsSplitAcrossWritesByteByByte(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	req := setReq("q", "hello") + "get q/open\r\nget q/close\r\nversion\n"
	for i := range len(req) {
		c.send(req[i : i+1])
	}
	assert.Equal(t, []string{"STORED"}, c.replies())
	assert.Equal(t, []string{"VALUE q/open 0 5", "hello", "END"}, c.replies())
	assert.Equal(t, []string{"END"}, c.replies())
	assert.Equal(t, []string{"VERSION " + kestrel.Version}, c.replies())
}

func TestIdleTimeoutCountsFromTheLastBytesRead(t *testing.T) {
	const idle = 500 * time.Millisecond
	s := startServer(t, kestrel.Options{IdleTimeout: idle})
	c := s.dial()
	// A value that keeps coming, more slowly than the idle timeout in all.
	v := strings.Repeat("x", 20)
	c.send("set q 0 0 20\r\n")
	for i := range v {
		time.Sleep(idle / 10)
		c.send(v[i : i+1])
	}
	c.send("\r\n")
	assert.Equal(t, []string{"STORED"}, c.replies())
	// One that stops coming is cut.
	c.send("set q 0 0 20\r\nxx")
	assert.True(t, c.closed())
}

func TestVersionIsOneClientLibrariesParse(t *testing.T) {
	// libmemcached (memcstat, memcping, and the libraries over it) reads
	// the version as major.minor.micro numbers, and fails on anything
	// else.
	s := startServer(t, kestrel.Options{})
	got := s.dial().do("version\r\n")
	require.Len(t, got, 1)
	assert.Regexp(t, `^VERSION [0-9]+\.[0-9]+\.[0-9]+`, got[0])
	assert.Equal(t, "VERSION "+kestrel.Version, got[0])
}

func TestALineTooLongThatIsNotAGetClosesTheConnection(t *testing.T) {
	// Its value would be read as commands: memcache closes such a
	// connection (it takes long get lines).
	s := startServer(t, kestrel.Options{})
	c := s.dial()
	c.set("q", "kept")
	c.send("set x 0 0 11 " + strings.Repeat(" ", 3000) + "\r\nflush_all\r\n\r\n")
	assert.Equal(t, "CLIENT_ERROR line too long", c.line())
	assert.True(t, c.closed())
	assert.Equal(t, []string{"VALUE q 0 4", "kept", "END"}, s.dial().do("get q\r\n"), "the value was not read as a flush_all")
}
