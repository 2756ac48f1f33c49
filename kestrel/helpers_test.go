package kestrel_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/kestrel"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

// server is a running Server over a fresh data directory.
type server struct {
	t     testing.TB
	dir   string
	srv   *kestrel.Server
	store *storage.Store
	ost   *offsets.Store
	done  chan error // Serve's result
	// served is Serve's result once wait read it.
	served    error
	hasServed bool
}

// wait returns Serve's result, waiting for Serve to return.
func (s *server) wait() error {
	if !s.hasServed {
		s.served, s.hasServed = <-s.done, true
	}
	return s.served
}

func startServer(t testing.TB, opts kestrel.Options) *server {
	t.Helper()
	s := &server{t: t, dir: t.TempDir()}
	s.start(opts)
	return s
}

func (s *server) start(opts kestrel.Options) {
	s.startWith(storage.SyncAlways, offsets.SyncAlways, opts)
}

// startWith starts the server with the logs and the offsets store under
// the given sync policies.
func (s *server) startWith(logSync storage.SyncPolicy, ostSync offsets.SyncPolicy, opts kestrel.Options) {
	t := s.t
	var err error
	s.store, err = storage.OpenStore(s.dir, storage.StoreOptions{Log: storage.Options{Sync: logSync}})
	require.NoError(t, err)
	s.ost, err = offsets.Open(offsets.Dir(s.dir), offsets.Options{Sync: ostSync})
	require.NoError(t, err)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.srv, err = kestrel.Listen("127.0.0.1:0", s.store, s.ost, opts)
	require.NoError(t, err)
	s.done, s.hasServed = make(chan error, 1), false
	go func() { s.done <- s.srv.Serve(context.Background()) }()
	// Serve is running once a connection is served.
	nc, err := net.Dial("tcp", s.addr())
	require.NoError(t, err)
	_, err = io.WriteString(nc, "version\r\n")
	require.NoError(t, err)
	_, err = bufio.NewReader(nc).ReadString('\n')
	require.NoError(t, err)
	require.NoError(t, nc.Close())
	t.Cleanup(s.stop)
}

// stop closes the server and the stores (once).
func (s *server) stop() {
	if s.srv == nil {
		return
	}
	err := s.srv.Close()
	if err != nil {
		require.ErrorIs(s.t, err, kestrel.ErrClosed)
	}
	require.NoError(s.t, s.wait())
	require.NoError(s.t, s.ost.Close())
	require.NoError(s.t, s.store.Close())
	s.srv = nil
}

// restart stops the server and starts a new one on the same directory.
func (s *server) restart(opts kestrel.Options) {
	s.stop()
	s.start(opts)
}

func (s *server) addr() string { return s.srv.Addr().String() }

// client is a raw protocol connection.
type client struct {
	t  testing.TB
	nc net.Conn
	r  *bufio.Reader
}

func (s *server) dial() *client {
	s.t.Helper()
	nc, err := net.Dial("tcp", s.addr())
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = nc.Close() })
	return &client{t: s.t, nc: nc, r: bufio.NewReader(nc)}
}

// send writes raw bytes.
func (c *client) send(raw string) {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, err := io.WriteString(c.nc, raw)
	require.NoError(c.t, err)
}

// line reads one reply line, without "\r\n".
func (c *client) line() string {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	l, err := c.r.ReadString('\n')
	require.NoError(c.t, err, "reading a reply")
	require.True(c.t, strings.HasSuffix(l, "\r\n"), "reply %q ends in \\r\\n", l)
	return strings.TrimSuffix(l, "\r\n")
}

// do sends one request and reads the reply lines up to and including a
// line that ends a reply (END, STORED, an error, ...).
func (c *client) do(raw string) []string {
	c.t.Helper()
	c.send(raw)
	return c.replies()
}

func (c *client) replies() []string {
	c.t.Helper()
	var out []string
	for {
		l := c.line()
		out = append(out, l)
		if strings.HasPrefix(l, "VALUE ") {
			out = append(out, c.value(l))
			continue
		}
		if !strings.HasPrefix(l, "STAT ") {
			return out
		}
	}
}

// value reads the value of a VALUE line's length and its "\r\n".
func (c *client) value(valueLine string) string {
	c.t.Helper()
	f := strings.Fields(valueLine)
	require.GreaterOrEqual(c.t, len(f), 4, "%q", valueLine)
	n, err := strconv.Atoi(f[3])
	require.NoError(c.t, err)
	buf := make([]byte, n+2)
	_, err = io.ReadFull(c.r, buf)
	require.NoError(c.t, err)
	require.Equal(c.t, "\r\n", string(buf[n:]))
	return string(buf[:n])
}

// set stores value in q and checks STORED.
func (c *client) set(q, value string) {
	c.t.Helper()
	require.Equal(c.t, []string{"STORED"}, c.do(setReq(q, value)))
}

func setReq(q, value string) string {
	return "set " + q + " 0 0 " + strconv.Itoa(len(value)) + "\r\n" + value + "\r\n"
}

// closed reports whether the server closed the connection: a read gets
// EOF (or a reset) within the deadline.
func (c *client) closed() bool {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := c.r.ReadByte()
	return err != nil && !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
