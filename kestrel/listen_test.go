package kestrel_test

import (
	"net"
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
