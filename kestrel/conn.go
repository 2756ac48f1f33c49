package kestrel

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/seglog/seglog/queue"
)

// stopGrace is how long a stopping connection may still take to write
// the reply of the request it was executing: a client that does not read
// cannot hold Close up longer.
const stopGrace = 5 * time.Second

// swallowFactor times MaxItemSize is the largest refused value whose
// bytes a connection reads and drops to go on.
const swallowFactor = 64

// conn is one client connection: its reads, its replies in the order of
// its requests, and its open reads.
type conn struct {
	s   *Server
	nc  net.Conn
	dec *Decoder
	w   *bufio.Writer
	// open holds the connection's open reads per queue, oldest first:
	// close confirms and abort hands back the oldest. Only the
	// connection's goroutine touches it.
	open map[string][]openRead

	// mu guards stopping, watchSt and the read deadline against Close.
	mu       sync.Mutex
	stopping bool
	watchSt  watchState
}

// watchState is where a connection's watch (of a waiting get) is.
type watchState int

const (
	notWatching watchState = iota
	watching               // reads have no deadline
	unwatching             // reads return at once, until the watch ended
)

// openRead is an item handed out to this connection under a lease.
type openRead struct {
	q     *queue.Queue
	lease queue.LeaseID
}

func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{
		s: s, nc: nc,
		open: make(map[string][]openRead),
	}
	c.w = bufio.NewWriterSize(c, 16<<10)
	c.dec = NewDecoder(c, s.opts.MaxItemSize, int64(s.opts.MaxItemSize)*swallowFactor)
	return c
}

// Read reads the connection for the decoder. With an idle timeout each
// read may wait that long for bytes, so that a request that keeps coming,
// however slowly, is not cut; the reads of a watch have no deadline, and
// those of a stopping connection return at once.
func (c *conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	var d time.Time
	switch {
	case c.stopping || c.watchSt == unwatching:
		d = time.Unix(1, 0)
	case c.watchSt == watching:
	case c.s.opts.IdleTimeout > 0:
		d = time.Now().Add(c.s.opts.IdleTimeout)
	}
	_ = c.nc.SetReadDeadline(d)
	c.mu.Unlock()
	return c.nc.Read(p)
}

// stop makes the connection end after the request it is executing: a
// read waiting for the next request returns at once.
func (c *conn) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopping = true
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	_ = c.nc.SetWriteDeadline(time.Now().Add(stopGrace))
}

// flush writes the buffered replies.
func (c *conn) flush() error {
	if c.w.Buffered() == 0 {
		return nil
	}
	return c.w.Flush()
}

// writeChunk is the most a reply write sends under one deadline.
const writeChunk = 64 << 10

// Write writes replies to the connection, for the reply buffer (a flush,
// or a value larger than the buffer). With an idle timeout, a client
// that takes none of the bytes for that long is dropped: the deadline
// moves on before each chunk of writeChunk bytes, so a slow reader of a
// large value is not. A stopping connection keeps the deadline stop set.
func (c *conn) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c.mu.Lock()
		if t := c.s.opts.IdleTimeout; t > 0 && !c.stopping {
			_ = c.nc.SetWriteDeadline(time.Now().Add(t))
		}
		c.mu.Unlock()
		m, err := c.nc.Write(p[n:min(len(p), n+writeChunk)])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// watch calls cancel when the client leaves (its stream ends or fails)
// while a get waits: it reads ahead of the request, without a deadline
// (a waiting get is not idle). The function it returns stops the watch
// and waits for it; the next Read sets the read deadline again.
func (c *conn) watch(cancel func()) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return func() {}
	}
	c.watchSt = watching
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c.dec.Gone() {
			cancel()
		}
	}()
	return func() {
		c.mu.Lock()
		c.watchSt = unwatching
		_ = c.nc.SetReadDeadline(time.Unix(1, 0))
		c.mu.Unlock()
		<-done
		c.mu.Lock()
		c.watchSt = notWatching
		c.mu.Unlock()
	}
}

// serve reads and executes requests in order until the client leaves,
// fails, idles out or asks to quit, or the server stops; then it aborts
// the connection's open reads and closes it.
func (c *conn) serve() {
	s := c.s
	s.counters.connections.Add(1)
	s.counters.current.Add(1)
	remote := c.nc.RemoteAddr().String()
	s.log.Debug("kestrel: connection", "remote", remote)
	defer func() {
		n := c.abortAll()
		s.counters.current.Add(-1)
		_ = c.nc.Close()
		s.log.Debug("kestrel: connection closed", "remote", remote, "aborted_open_reads", n)
	}()
	for {
		if !c.dec.Buffered() {
			// Pipelined requests are answered together: the replies go
			// out when no request is waiting in the buffer.
			if err := c.flush(); err != nil {
				return
			}
		}
		if c.isStopping() {
			return
		}
		req, err := c.dec.Decode()
		if err != nil {
			var pe *ProtocolError
			if errors.As(err, &pe) {
				c.reply(pe.Reply)
				if pe.Fatal {
					_ = c.flush()
					return
				}
				continue
			}
			if errors.Is(err, os.ErrDeadlineExceeded) && !c.isStopping() {
				s.log.Debug("kestrel: idle connection closed", "remote", remote, "idle_timeout", s.opts.IdleTimeout)
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !c.isStopping() {
				s.log.Debug("kestrel: connection read", "remote", remote, "err", err)
			}
			return
		}
		if !c.handle(req) {
			_ = c.flush()
			return
		}
		if c.isStopping() {
			_ = c.flush()
			return
		}
	}
}

func (c *conn) isStopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopping
}

// reply writes one line and "\r\n". A write error shows at the next
// flush, which ends the connection.
func (c *conn) reply(line string) {
	_, _ = c.w.WriteString(line)
	_, _ = c.w.WriteString("\r\n")
}

// abortAll hands back every open read of the connection and returns how
// many there were.
func (c *conn) abortAll() int {
	n := 0
	for name, reads := range c.open {
		for _, r := range reads {
			if err := r.q.Abort(r.lease); err != nil && !gone(err) {
				c.s.log.Warn("kestrel: abort of a dropped connection's open read", "queue", name, "err", err)
			}
			n++
		}
		delete(c.open, name)
	}
	c.s.counters.openDropped.Add(uint64(n))
	return n
}

// gone reports an error of a lease or queue that no longer exists (the
// queue was flushed, deleted, or the server is closing): nothing is left
// to confirm or abort.
func gone(err error) bool {
	return errors.Is(err, queue.ErrUnknownLease) || errors.Is(err, queue.ErrClosed) || errors.Is(err, queue.ErrLeaseExpired)
}
