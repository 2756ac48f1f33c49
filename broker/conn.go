package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// One connection. Kafka's framing: every request and response is a 4-byte
// big-endian size and that many bytes. A request starts with its header
// (api key, api version, correlation id, client id, and tagged fields in
// flexible versions); a response with the correlation id (and tagged
// fields in flexible versions, except ApiVersions).
//
// Two goroutines per connection: the reader reads and parses the next
// request while the handler runs the one before, and hands requests over
// one at a time; the handler runs them in the order they came and writes
// each response before it takes the next, so responses leave in request
// order, which clients that pipeline rely on (as Kafka serves a
// connection: one request at a time). A produce with acks=0 has no
// response.
//
// Limits, and what breaks a connection (each is logged, never silent):
//   - a request bigger than Options.MaxRequestBytes: the connection is
//     closed before its body is read, as Kafka does (its size cannot be
//     answered: nothing of it was parsed);
//   - an API key or version the server does not serve (except ApiVersions,
//     answered with UNSUPPORTED_VERSION and the ranges served, as Kafka
//     does), or a body that does not parse: closed, as Kafka does;
//   - nothing received for Options.IdleTimeout (between requests or
//     within one): closed;
//   - a produce with acks=0 that failed: closed, so the client learns of
//     it (Kafka's rule);
//   - a failed write of a response;
//   - the client closing its end (or a failed read).
//
// When the reader stops on one of these (the idle timeout aside, and
// Shutdown, which lets the request in flight finish), a request in
// flight that waits (a long-poll fetch, a JoinGroup
// or SyncGroup waiting for the rebalance) stops waiting, so that the
// connection and its goroutines are let go at once, not when the wait
// would have ended.

var errTooManyFiles = syscall.EMFILE

// request is one parsed request.
type request struct {
	key, version int16
	corr         int32
	clientID     string
	flexibleHdr  bool // the response header carries tagged fields
	msg          kmsg.Request
	at           time.Time // when its size was read
	body         []byte    // returned to the server's buffers once answered (produce only)
}

const produceKey = 0

type conn struct {
	s       *Server
	nc      net.Conn
	log     *slog.Logger
	reqs    chan *request
	closing atomic.Bool // Shutdown: read no more requests
	buf     []byte      // the response being written
	// ctx ends with the server's, or when the client is gone (its
	// connection read EOF or failed): a request waiting for records or
	// for a rebalance then stops waiting for a client that cannot be
	// answered, and the connection is let go at once.
	ctx    context.Context
	cancel context.CancelFunc
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	return &conn{s: s, nc: nc, log: s.log.With("remote", nc.RemoteAddr().String()), reqs: make(chan *request), ctx: ctx, cancel: cancel}
}

// stopReading makes the reader stop after the request it is reading
// (Shutdown): the handler finishes what it has.
func (c *conn) stopReading() {
	c.closing.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

// serve runs the connection until either side ends it.
func (c *conn) serve() {
	defer c.nc.Close()
	defer c.cancel()
	if tc, ok := c.nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c.log.Debug("connection accepted")
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(c.reqs)
		c.readLoop()
	}()
	for req := range c.reqs {
		err := c.handle(req)
		c.s.buffers.put(req.body)
		if err != nil {
			level := slog.LevelWarn
			if clientGone(err) {
				level = slog.LevelInfo
			}
			c.log.Log(context.Background(), level, "closing connection", "api", kmsg.NameForKey(req.key), "version", req.version, "client", req.clientID, "err", err)
			c.nc.Close() // the reader returns
			for range c.reqs {
			}
			break
		}
	}
	<-readerDone
	c.log.Debug("connection closed")
}

// readLoop reads requests until the connection ends or a request breaks
// it.
func (c *conn) readLoop() {
	br := bufio.NewReaderSize(activeReader{c}, 64<<10)
	var size [4]byte
	for !c.closing.Load() {
		c.extendDeadline()
		if _, err := io.ReadFull(br, size[:]); err != nil {
			c.readEnded(err, true)
			return
		}
		at := c.s.opts.Now()
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 0 || int(n) > c.s.opts.MaxRequestBytes {
			c.log.Warn("closing connection: request size over the limit (--max-request-bytes)", "size", uint32(n), "limit", c.s.opts.MaxRequestBytes)
			c.cancel() // a request in flight stops waiting: the connection ends
			return
		}
		body, err := c.s.buffers.read(br, int(n))
		if err != nil {
			c.readEnded(err, false)
			return
		}
		req, err := c.parse(body)
		if err != nil {
			c.log.Warn("closing connection", "err", err)
			c.cancel()
			return
		}
		req.at = at
		if req.key == produceKey {
			// Nothing of a produce request outlives its handling: the
			// log copies the records (groups keep slices of their
			// requests, so only produce bodies are reused).
			req.body = body
		}
		c.reqs <- req
	}
}

// activeReader reads the connection, and moves its read deadline on
// whenever bytes arrive: a connection is idle when nothing arrives for
// Options.IdleTimeout, not when a request takes longer than that to
// arrive (a big produce over a slow link), as Kafka counts idleness.
type activeReader struct{ c *conn }

func (r activeReader) Read(p []byte) (int, error) {
	n, err := r.c.nc.Read(p)
	if n > 0 {
		r.c.extendDeadline()
	}
	return n, err
}

// extendDeadline sets the read deadline Options.IdleTimeout ahead, unless
// Shutdown stopped the reading: stopReading sets closing, then a
// deadline of now, so a deadline set here after it is set back to now.
func (c *conn) extendDeadline() {
	c.nc.SetReadDeadline(time.Now().Add(c.s.opts.IdleTimeout))
	if c.closing.Load() {
		c.nc.SetReadDeadline(time.Now())
	}
}

// extendWriteDeadline sets the write deadline Options.IdleTimeout ahead.
func (c *conn) extendWriteDeadline() {
	c.nc.SetWriteDeadline(time.Now().Add(c.s.opts.IdleTimeout))
}

// readEnded logs why the reader stopped: a client closing between
// requests is normal, anything else is worth a line. Unless the server
// is shutting down or the connection idled, the client is gone: the
// request in flight, if any, is not waited for.
func (c *conn) readEnded(err error, between bool) {
	var ne net.Error
	if c.closing.Load() {
		c.log.Debug("connection closed by shutdown")
		return
	}
	if errors.As(err, &ne) && ne.Timeout() {
		c.log.Info("closing idle connection", "idle", c.s.opts.IdleTimeout)
		return
	}
	c.cancel()
	switch {
	case between && errors.Is(err, io.EOF):
		c.log.Debug("connection closed by the client")
	case errors.Is(err, net.ErrClosed):
	default:
		c.log.Info("connection read failed", "err", err)
	}
}

// parse reads a request's header and body. An API or version not served
// is an error, except ApiVersions (answered by the handler).
func (c *conn) parse(body []byte) (*request, error) {
	r := kbin.Reader{Src: body}
	req := &request{key: r.Int16(), version: r.Int16(), corr: r.Int32()}
	if cid := r.NullableString(); cid != nil {
		req.clientID = *cid
	}
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("request header: %w", err)
	}
	api, ok := apis[req.key]
	if req.key == apiVersionsKey {
		// A version outside the range (above it, or negative) is not
		// parsed: the handler answers it in v0, as Kafka does.
		req.msg = kmsg.NewPtrApiVersionsRequest()
		if req.version < api.min || req.version > api.max {
			req.msg.SetVersion(0)
			return req, nil // v0 answer; the body is of an unknown version
		}
		req.msg.SetVersion(req.version)
	} else {
		if !ok || req.version < api.min || req.version > api.max {
			return nil, fmt.Errorf("unsupported request: %s (key %d) version %d, client %q", kmsg.NameForKey(req.key), req.key, req.version, req.clientID)
		}
		req.msg = kmsg.RequestForKey(req.key)
		req.msg.SetVersion(req.version)
	}
	if req.msg.IsFlexible() {
		kmsg.SkipTags(&r)
		req.flexibleHdr = req.key != apiVersionsKey
	}
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("request header: %w", err)
	}
	if err := readRequest(req.msg, r.Src); err != nil {
		return nil, fmt.Errorf("malformed %s v%d request from client %q: %w", kmsg.NameForKey(req.key), req.version, req.clientID, err)
	}
	return req, nil
}

// readRequest decodes a request body with kmsg; a panic of the decoder
// (it has none known) is an error, not a crash.
func readRequest(msg kmsg.Request, body []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoder panic: %v", p)
		}
	}()
	return msg.ReadFrom(body)
}

// handle runs one request and writes its response. An error closes the
// connection.
func (c *conn) handle(req *request) error {
	api := apis[req.key]
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	rep, err := c.run(ctx, api.handle, req)
	if m := c.s.opts.Metrics; m != nil {
		m.observe(req.key, c.s.opts.Now().Sub(req.at), err)
	}
	if err != nil {
		return err
	}
	if rep.msg == nil {
		return nil // acks=0
	}
	return c.write(req, rep)
}

// run calls a handler; a panic in it (a bug: none is known) closes this
// connection with the stack logged instead of ending the server.
func (c *conn) run(ctx context.Context, h handler, req *request) (rep reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panic", "api", kmsg.NameForKey(req.key), "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return h(ctx, c, req)
}

// reply is a handler's answer: a response, and the file regions that
// stand in for the record batches of a fetch response (see splice).
type reply struct {
	msg     kmsg.Response // nil: no response (a produce with acks=0)
	regions []spliced
}

// write frames and writes a response. Regions are sent after the bytes
// before them, with sendfile.
func (c *conn) write(req *request, rep reply) error {
	c.extendWriteDeadline()
	if req.key != apiVersionsKey {
		rep.msg.SetVersion(req.msg.GetVersion()) // ApiVersions may answer in v0
	}
	b := append(c.buf[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(req.corr))
	if req.flexibleHdr {
		b = append(b, 0) // no tagged fields
	}
	b = rep.msg.AppendTo(b)
	c.buf = b
	if len(rep.regions) == 0 {
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		_, err := c.nc.Write(b)
		if err != nil {
			return fmt.Errorf("write response: %w", err)
		}
		return nil
	}
	return c.writeSpliced(b, rep.regions, req.msg.IsFlexible())
}

// clientGone reports a write that failed because the client closed its
// end: worth a line, not a warning.
func clientGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}
