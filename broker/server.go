package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/retention"
	"github.com/seglog/seglog/storage"
)

// Defaults of Options.
const (
	// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultPartitions is Kafka's num.partitions.
	DefaultPartitions = 1
	// DefaultMaxSessionTimeout is Kafka's group.max.session.timeout.ms.
	DefaultMaxSessionTimeout = 30 * time.Minute
	// DefaultMinSessionTimeout is Kafka's group.min.session.timeout.ms.
	DefaultMinSessionTimeout = 6 * time.Second
)

// Options configure a Server. The zero value serves with Kafka's defaults
// and creates topics on first use.
type Options struct {
	// Logger receives the server's logs; nil: slog.Default().
	Logger *slog.Logger
	// Advertise is the host:port clients are told to connect to (in
	// Metadata and FindCoordinator); "": the address of the listener a
	// request came in on.
	Advertise string
	// MaxRequestBytes caps the size of one request; a bigger one closes
	// the connection (as Kafka does). 0: DefaultMaxRequestBytes.
	MaxRequestBytes int
	// IdleTimeout closes a connection that sends nothing for this long.
	// 0: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// NoAutoCreateTopics turns off creating a topic when a Metadata
	// request names one that does not exist (on by default, as in Kafka).
	NoAutoCreateTopics bool
	// DefaultPartitions is the partition count of topics created on first
	// use or by a CreateTopics asking for -1. 0: DefaultPartitions.
	DefaultPartitions int
	// MinSessionTimeout and MaxSessionTimeout bound a group member's
	// session timeout (0: the defaults above).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay holds the first rebalance of an empty group
	// back for this long, so that members starting together join one
	// generation (Kafka's group.initial.rebalance.delay.ms). 0: none.
	InitialRebalanceDelay time.Duration
	// Metrics, when set, counts requests and their latency per API.
	Metrics *Metrics
	// Retention, when set, runs a retention cleaner with these options
	// over the store, with the offsets store's commits as the consumed
	// progress, from New until Shutdown or Close (as a Kafka broker
	// runs its log retention). When its OnRun is nil, a run that deleted
	// or failed is logged.
	Retention *retention.Options
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.DefaultPartitions <= 0 {
		o.DefaultPartitions = DefaultPartitions
	}
	if o.MinSessionTimeout <= 0 {
		o.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if o.MaxSessionTimeout <= 0 {
		o.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("broker: server closed")

// Server is a Kafka broker over one Store and its offsets store. It does
// not own them: the caller opens them before New and closes them after
// Shutdown or Close returned.
type Server struct {
	store   *storage.Store
	offsets *offsets.Store
	opts    Options
	log     *slog.Logger

	meta    *clusterMeta // cluster id, node id, topic ids, producer ids
	groups  *coordinator
	cleaner *retention.Cleaner // nil without Options.Retention

	buffers bufferPool // the bodies of produce requests, for reuse

	longPolls atomic.Int64 // fetches waiting for records (for tests)

	// ctx is cancelled by Shutdown and Close: long polls and joins
	// waiting for a rebalance return at once.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards listeners, conns and closed.
	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	closed    bool
	wg        sync.WaitGroup // Serve loops and connections
}

// New returns a Server over store and offs. It reads (or creates) the
// cluster id and node id in the store's root, and gives every topic
// without one a topic id, persisted in its partition directories. With
// Options.Retention, it starts the retention cleaner.
func New(store *storage.Store, offs *offsets.Store, opts Options) (*Server, error) {
	if store == nil || offs == nil {
		return nil, errors.New("broker: New needs a store and an offsets store")
	}
	opts = opts.withDefaults()
	meta, err := openClusterMeta(store)
	if err != nil {
		return nil, err
	}
	var cleaner *retention.Cleaner
	if opts.Retention != nil {
		ropts := *opts.Retention
		if ropts.OnRun == nil {
			ropts.OnRun = logRetention(opts.Logger)
		}
		if cleaner, err = retention.New(store, offs, ropts); err != nil {
			return nil, fmt.Errorf("broker: retention: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{store: store, offsets: offs, opts: opts, log: opts.Logger, meta: meta, cleaner: cleaner,
		ctx: ctx, cancel: cancel, listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{}}
	s.groups = newCoordinator(s)
	if cleaner != nil {
		cleaner.Start()
	}
	return s, nil
}

// logRetention logs each cleaner run that deleted or failed.
func logRetention(log *slog.Logger) func(retention.Report, error) {
	return func(rep retention.Report, err error) {
		if err != nil {
			log.Error("retention run failed", "err", err)
			return
		}
		if len(rep.Deletions) > 0 || len(rep.Failures) > 0 {
			log.Info("retention run", "segments", len(rep.Deletions), "bytes", rep.Bytes(), "failures", len(rep.Failures))
		}
	}
}

// ClusterID is the cluster id persisted in the data directory.
func (s *Server) ClusterID() string { return s.meta.clusterID }

// Cleaner is the retention cleaner the server runs (Options.Retention),
// for its metrics; nil without one.
func (s *Server) Cleaner() *retention.Cleaner { return s.cleaner }

// Run serves ln (Serve) until ctx ends or Serve fails, then shuts the
// server down (Shutdown), cutting the connections still busy after
// timeout. It returns nil after a clean stop: what Serve failed with, or
// that connections had to be cut.
func (s *Server) Run(ctx context.Context, ln net.Listener, timeout time.Duration) error {
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		served <- err
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	if err := s.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("connections cut after %s: %w", timeout, err))
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Serve accepts connections on ln and serves each on goroutines of its
// own until Shutdown or Close, then returns ErrServerClosed. ln is
// closed when Serve returns.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				// Out of descriptors: wait, as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "delay", delay)
				select {
				case <-time.After(delay):
				case <-s.ctx.Done():
					return ErrServerClosed
				}
				continue
			}
			return fmt.Errorf("broker: accept: %w", err)
		}
		delay = 0
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
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

// Shutdown stops accepting connections, lets every connection finish the
// request it is handling (a long-poll fetch answers at once with what it
// has) and write its response, then closes them. If ctx ends first, the
// remaining connections are closed at once. The group coordinator's
// timers stop, and the request buffers kept for reuse are let go. It
// returns ctx's error if it had to cut connections.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.closeConns()
		<-done
	}
	s.groups.close()
	s.buffers.release()
	return errors.Join(err, s.closeCleaner())
}

// Close closes the listeners and every connection at once, in-flight
// requests or not, waits for their goroutines and lets go of the
// request buffers kept for reuse.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.closeConns()
	s.wg.Wait()
	s.groups.close()
	s.buffers.release()
	return s.closeCleaner()
}

// closeCleaner stops the retention cleaner, if any, and waits for it.
func (s *Server) closeCleaner() error {
	if s.cleaner == nil {
		return nil
	}
	return s.cleaner.Close()
}

func (s *Server) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.nc.Close()
	}
}

// advertised returns the host and port a client is told to use, for a
// request that came in on local.
func (s *Server) advertised(local net.Addr) (string, int32) {
	addr := s.opts.Advertise
	if addr == "" && local != nil {
		addr = local.String()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 9092
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return host, 9092
	}
	return host, int32(p)
}
