package kestrel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/storage"
)

// Defaults of Options.
const (
	// DefaultMaxItemSize is the largest value a set stores, as
	// memcached's default item size.
	DefaultMaxItemSize = 1 << 20
	// DefaultMaxOpenReads is how many reads one connection may hold open
	// on one queue: Kestrel's default of one.
	DefaultMaxOpenReads = 1
	// DefaultLeaseTimeout is the queues' lease timeout: an open read
	// belongs to its connection and ends with it, not with a clock, so
	// the lease of the queue package is set out of reach.
	DefaultLeaseTimeout = 100 * 365 * 24 * time.Hour
	// Version is what the version command answers and stats reports:
	// numbers first, major.minor.micro, as memcache's, which client
	// libraries parse (libmemcached fails on anything else).
	Version = "1.0.0-seglog-kestrel"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// MaxItemSize is the largest value a set stores (default
	// DefaultMaxItemSize). A larger one is answered "SERVER_ERROR object
	// too large for cache"; its bytes are skipped when they are at most
	// 64 times MaxItemSize, else the connection is closed.
	MaxItemSize int
	// MaxOpenReads is how many reads one connection may hold open on one
	// queue (default DefaultMaxOpenReads).
	MaxOpenReads int
	// IdleTimeout closes a connection that sends nothing for that long,
	// between requests or inside one, or that takes none of its replies'
	// bytes for that long (0: never). A get waiting on t= is not idle.
	IdleTimeout time.Duration
	// EnableShutdown lets the shutdown command stop the server. Without
	// it, shutdown is refused.
	EnableShutdown bool
	// Queue configures every queue the server opens; its LeaseTimeout
	// defaults to DefaultLeaseTimeout instead of the queue package's.
	Queue queue.Options
	// Logger receives connection and failure events (nil: slog.Default).
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxItemSize == 0 {
		o.MaxItemSize = DefaultMaxItemSize
	}
	if o.MaxOpenReads == 0 {
		o.MaxOpenReads = DefaultMaxOpenReads
	}
	if o.Queue.LeaseTimeout == 0 {
		o.Queue.LeaseTimeout = DefaultLeaseTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.MaxItemSize < 0 || o.MaxItemSize > 1<<30:
		return o, fmt.Errorf("%w: MaxItemSize %d: want 1 to 1 GiB", ErrInvalidOptions, o.MaxItemSize)
	case o.MaxOpenReads < 0:
		return o, fmt.Errorf("%w: MaxOpenReads %d is negative", ErrInvalidOptions, o.MaxOpenReads)
	case o.IdleTimeout < 0:
		return o, fmt.Errorf("%w: IdleTimeout %v is negative", ErrInvalidOptions, o.IdleTimeout)
	}
	return o, nil
}

// Errors.
var (
	// ErrInvalidOptions reports Options that cannot be used.
	ErrInvalidOptions = errors.New("kestrel: invalid options")
	// ErrClosed is returned by Serve on a server closed before it ran,
	// and by a second Close.
	ErrClosed = errors.New("kestrel: server closed")
)

// Server serves the memcache text protocol over the queues of one data
// directory. See the package doc.
type Server struct {
	ln     net.Listener
	opts   Options
	log    *slog.Logger
	queues *registry
	start  time.Time

	// ctx is cancelled by Close: waiting gets end.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards conns and closed.
	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup // the accept loop and every connection

	shutdown     chan struct{} // closed by the shutdown command
	shutdownOnce sync.Once
	closeOnce    sync.Once
	closeErr     error
	served       atomic.Bool

	counters counters
}

// New returns a server that will accept connections on ln (Serve) and
// keep its queues in store and ost: queue Q is the topic Q with one
// partition and group queue.Group's position on it (queue.Open). The
// store and ost stay the caller's: Close does not close them, and they
// must outlive the server.
func New(ln net.Listener, store *storage.Store, ost *offsets.Store, opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if ln == nil || store == nil || ost == nil {
		return nil, fmt.Errorf("%w: New needs a listener, a store and an offsets store", ErrInvalidOptions)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		ln: ln, opts: opts, log: opts.Logger, start: time.Now(),
		queues: newRegistry(store, ost, opts.Queue),
		ctx:    ctx, cancel: cancel,
		conns:    make(map[*conn]struct{}),
		shutdown: make(chan struct{}),
	}
	return s, nil
}

// Listen listens on addr (host:port; port 0: any free port) and returns
// New's server over it; the listener is closed if New fails.
func Listen(addr string, store *storage.Store, ost *offsets.Store, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s, err := New(ln, store, ost, opts)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	return s, nil
}

// Addr returns the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections, each served by a goroutine of its own, until
// ctx is done, Close is called, or a shutdown command (when enabled)
// arrives; then it stops as Close does and returns the error of that
// stop (nil after a clean one), whoever started it. Serve may be called
// once.
func (s *Server) Serve(ctx context.Context) error {
	if !s.served.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: Serve called twice", ErrInvalidOptions)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()
	accepted := make(chan struct{})
	go func() {
		defer s.wg.Done()
		defer close(accepted)
		s.acceptLoop()
	}()
	s.log.Info("kestrel: listening", "addr", s.ln.Addr().String())
	select {
	case <-ctx.Done():
	case <-s.shutdown:
		s.log.Info("kestrel: shutdown requested by a client")
	case <-s.ctx.Done():
	case <-accepted:
	}
	s.stop()
	return s.closeErr
}

func (s *Server) acceptLoop() {
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.isClosed() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of file descriptors and the like: wait a little,
				// as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("kestrel: accept", "err", err, "retry_in", backoff)
				select {
				case <-time.After(backoff):
				case <-s.ctx.Done():
					return
				}
				continue
			}
			s.log.Error("kestrel: accept failed; the listener stops", "err", err)
			return
		}
		backoff = 0
		c := s.newConn(nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// requestShutdown is the shutdown command: Serve stops the server.
func (s *Server) requestShutdown() {
	s.shutdownOnce.Do(func() { close(s.shutdown) })
}

// Close stops accepting, lets each connection finish the request it is
// executing (a waiting get ends with END), aborts every open read and
// closes the connections, waits for every goroutine of the server, and
// closes its queues (their positions committed; see queue.Close). It
// returns the queues' first error. A second Close returns ErrClosed.
func (s *Server) Close() error {
	if !s.stop() {
		return ErrClosed
	}
	return s.closeErr
}

// stop stops the server once (see Close); it reports whether this call
// did, and returns when the server has stopped either way.
func (s *Server) stop() bool {
	first := false
	s.closeOnce.Do(func() {
		first = true
		s.mu.Lock()
		s.closed = true
		conns := make([]*conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		s.cancel()
		err := s.ln.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		for _, c := range conns {
			c.stop()
		}
		s.wg.Wait()
		s.closeErr = errors.Join(err, s.queues.closeAll())
		s.log.Info("kestrel: stopped", "addr", s.ln.Addr().String())
	})
	return first
}
