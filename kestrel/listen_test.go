package kestrel_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/kestrel"
)

func TestListenReportsWhatStopsIt(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	_, err := kestrel.Listen(s.addr(), s.store, s.ost, kestrel.Options{})
	assert.Error(t, err, "an address in use")

	// Options New refuses: the listener Listen opened is closed again.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := probe.Addr().String()
	require.NoError(t, probe.Close())
	_, err = kestrel.Listen(addr, s.store, s.ost, kestrel.Options{MaxItemSize: -1})
	require.ErrorIs(t, err, kestrel.ErrInvalidOptions)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the address is free again")
	require.NoError(t, ln.Close())
}

// fdLimitListener fails its first accepts as a process out of file
// descriptors does.
type fdLimitListener struct {
	net.Listener
	fails chan syscall.Errno
}

func (l *fdLimitListener) Accept() (net.Conn, error) {
	select {
	case errno := <-l.fails:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
	default:
		return l.Listener.Accept()
	}
}

func TestServerOutOfFileDescriptorsGoesOnAccepting(t *testing.T) {
	s := startServer(t, kestrel.Options{})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &fdLimitListener{Listener: inner, fails: make(chan syscall.Errno, 2)}
	ln.fails <- syscall.EMFILE
	ln.fails <- syscall.ENFILE
	srv, err := kestrel.New(ln, s.store, s.ost, kestrel.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	nc, err := net.Dial("tcp", inner.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	c := &client{t: t, nc: nc, r: bufio.NewReader(nc)}
	assert.Equal(t, []string{"VERSION " + kestrel.Version}, c.do("version\r\n"), "served after the accepts failed")
	require.NoError(t, srv.Close())
	require.NoError(t, <-done)
}
