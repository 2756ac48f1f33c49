package broker

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

// testBroker is a Server on 127.0.0.1:0 over a data directory, with the
// store and offsets store it runs on.
type testBroker struct {
	t       testing.TB
	dir     string
	opts    Options
	store   *storage.Store
	offsets *offsets.Store
	srv     *Server
	addr    string
	served  chan error
}

func startBroker(t testing.TB, dir string, opts Options) *testBroker {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.MinSessionTimeout == 0 {
		opts.MinSessionTimeout = 100 * time.Millisecond
	}
	b := &testBroker{t: t, dir: dir, opts: opts}
	var err error
	b.store, err = storage.OpenStore(dir, storage.StoreOptions{})
	require.NoError(t, err)
	b.offsets, err = offsets.Open(offsets.Dir(dir), offsets.Options{})
	require.NoError(t, err)
	b.srv, err = New(b.store, b.offsets, opts)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.addr = ln.Addr().String()
	b.served = make(chan error, 1)
	go func() { b.served <- b.srv.Serve(ln) }()
	t.Cleanup(b.stop)
	return b
}

// stop shuts the server down and closes the stores (idempotent).
func (b *testBroker) stop() {
	if b.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(b.t, b.srv.Shutdown(ctx))
	require.ErrorIs(b.t, <-b.served, ErrServerClosed)
	require.NoError(b.t, b.offsets.Close())
	require.NoError(b.t, b.store.Close())
	b.srv = nil
}

// restart stops the broker and starts it again on the same directory.
func (b *testBroker) restart() *testBroker {
	b.stop()
	return startBroker(b.t, b.dir, b.opts)
}

// client returns a kgo client of the broker, closed with the test.
func (b *testBroker) client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr)}, opts...)...)
	require.NoError(b.t, err)
	b.t.Cleanup(cl.Close)
	return cl
}

// request sends one request with a kgo client and returns its response.
func roundTrip[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	require.NoError(t, err)
	return resp.(R)
}

// rawConn is a TCP connection that speaks the framing by hand.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func (b *testBroker) raw() *rawConn {
	nc, err := net.Dial("tcp", b.addr)
	require.NoError(b.t, err)
	b.t.Cleanup(func() { nc.Close() })
	return &rawConn{t: b.t, nc: nc}
}

// send writes a request of the given key and version with body.
func (r *rawConn) send(key, version int16, corr int32, flexible bool, body []byte) {
	b := make([]byte, 4, 64+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if flexible {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := r.nc.Write(b)
	require.NoError(r.t, err)
}

// recv reads one response frame: its correlation id and the rest.
func (r *rawConn) recv() (int32, []byte, error) {
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(r.nc, size[:]); err != nil {
		return 0, nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.nc, body); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(body)), body[4:], nil
}
