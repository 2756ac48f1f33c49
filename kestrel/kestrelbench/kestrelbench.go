// Package kestrelbench holds `seglog bench kestrel`: the Kestrel memcache
// protocol server (package kestrel) measured over loopback, each figure
// beside the same work done in process with package queue's calls,
// measured in the same run:
//
//   - kestrel-set: sets from several connections until STORED, beside
//     queue.Put from as many goroutines;
//   - kestrel-get-reliable: reliable reads (get q/close/open, each
//     confirming the item before), beside queue.Open and Confirm.
//
// The logs and the offsets store sync every write. It lives beside the
// server, not in package bench: bench sits below the protocol servers and
// may not import them; cmd/seglog adds Group to the suite. Client is the
// minimal memcache text-protocol client the workload uses, for tests of
// servers too.
package kestrelbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/kestrel"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/storage"
)

// Group is seglog bench's "kestrel" group: the memcache protocol server
// over loopback beside the queue package's calls.
func Group() bench.ExtraGroup {
	return bench.ExtraGroup{Name: "kestrel", Workloads: func(c bench.Config) []bench.Workload {
		return []bench.Workload{kestrelBench{Conns: 4 * c.Producers, ValueSize: 256, Duration: c.Duration}}
	}}
}

// kestrelBench measures, in one data directory with the logs and the
// offsets store under SyncAlways: sets from Conns connections, then
// reliable gets (get q/close/open, each confirming the item before) from
// Conns connections, each for Duration over loopback, and beside each the
// same work as in-process queue calls (Put; Open and Confirm) from Conns
// goroutines, as its baseline.
type kestrelBench struct {
	Conns     int
	ValueSize int
	Duration  time.Duration
}

func (w kestrelBench) Name() string { return "kestrel" }

func (w kestrelBench) Run(ctx context.Context, env *bench.Env) ([]bench.Result, error) {
	dir, err := env.WorkDir("kestrel")
	if err != nil {
		return nil, err
	}
	store, err := storage.OpenStore(dir, storage.StoreOptions{Log: storage.Options{Sync: storage.SyncAlways}})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	ost, err := offsets.Open(offsets.Dir(dir), offsets.Options{})
	if err != nil {
		return nil, err
	}
	defer ost.Close()
	value := []byte(strings.Repeat("v", w.ValueSize))

	// In process: the baselines.
	q, err := queue.Open(store, ost, "inproc", queue.Options{LeaseTimeout: kestrel.DefaultLeaseTimeout})
	if err != nil {
		return nil, err
	}
	putBase, err := w.loop(ctx, env, func(int) (func() error, func(), error) {
		return func() error { _, err := q.Put(value, 0); return err }, func() {}, nil
	})
	if err != nil {
		return nil, errors.Join(err, q.Close())
	}
	getBase, err := w.loop(ctx, env, func(int) (func() error, func(), error) {
		return func() error {
			octx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			it, err := q.Open(octx)
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return errDry
			}
			if err != nil {
				return err
			}
			return q.Confirm(it.Lease)
		}, func() {}, nil
	})
	if err := errors.Join(err, q.Close()); err != nil {
		return nil, err
	}

	// Over loopback.
	srv, err := kestrel.Listen("127.0.0.1:0", store, ost, kestrel.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxItemSize: max(w.ValueSize, 1)})
	if err != nil {
		return nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	addr := srv.Addr().String()
	setReq := fmt.Sprintf("set net 0 0 %d\r\n%s\r\n", len(value), value)
	set, err := w.loop(ctx, env, func(int) (func() error, func(), error) {
		c, err := Dial(addr)
		if err != nil {
			return nil, nil, err
		}
		return func() error {
			_, ok, err := c.RoundTrip(setReq)
			if ok {
				return errors.New("kestrel: a set answered a VALUE")
			}
			return err
		}, c.Close, nil
	})
	var get bench.Baseline
	if err == nil {
		get, err = w.loop(ctx, env, func(int) (func() error, func(), error) {
			c, err := Dial(addr)
			if err != nil {
				return nil, nil, err
			}
			req := "get net/open/t=1000\r\n"
			return func() error {
				v, ok, err := c.RoundTrip(req)
				req = "get net/close/open/t=1000\r\n"
				switch {
				case err != nil:
					return err
				case !ok:
					return errDry
				case len(v) != len(value):
					return fmt.Errorf("kestrel: a value of %d bytes, %d set", len(v), len(value))
				}
				return nil
			}, c.Close, nil
		})
	}
	if err := errors.Join(err, srv.Close(), <-served); err != nil {
		return nil, err
	}
	return []bench.Result{
		w.result("kestrel-set", "set over loopback (until STORED)", set, putBase, "in-process queue.Put"),
		w.result("kestrel-get-reliable", "get /close/open over loopback", get, getBase, "in-process queue.Open + Confirm"),
	}, nil
}

// result makes the report's result of one network measurement, with the
// in-process one as its baseline.
func (w kestrelBench) result(name, of string, m, base bench.Baseline, baseName string) bench.Result {
	base.Name = baseName
	r := bench.Result{
		Name: name, Workload: "kestrel", LatencyOf: of,
		Records: m.Ops, Bytes: m.Ops * int64(w.ValueSize), Elapsed: m.Elapsed, Latency: m.Latency,
		Baseline: &base,
	}
	r.AddParam("connections", w.Conns)
	r.AddParam("value", w.ValueSize)
	r.AddParam("duration", w.Duration)
	r.AddParam("sync", "always (logs and offsets)")
	r.Finish()
	return r
}

// loop runs one operation from w.Conns workers for w.Duration and
// measures it; newWorker makes worker i's operation and its cleanup.
func (w kestrelBench) loop(ctx context.Context, env *bench.Env, newWorker func(i int) (op func() error, done func(), err error)) (bench.Baseline, error) {
	type worker struct {
		op   func() error
		done func()
	}
	workers := make([]worker, w.Conns)
	for i := range workers {
		op, done, err := newWorker(i)
		if err != nil {
			for _, wk := range workers[:i] {
				wk.done()
			}
			return bench.Baseline{}, err
		}
		workers[i] = worker{op, done}
	}
	hists := make([]*bench.Histogram, w.Conns)
	errs := make([]error, w.Conns)
	var wg sync.WaitGroup
	begin := time.Now()
	deadline := begin.Add(w.Duration)
	for i := range workers {
		hists[i] = bench.NewHistogram()
		wg.Go(func() {
			defer workers[i].done()
			for n := 0; ; n++ {
				t := time.Now()
				if t.After(deadline) || ctx.Err() != nil {
					return
				}
				if err := workers[i].op(); err != nil {
					if !errors.Is(err, errDry) {
						errs[i] = err
					}
					return
				}
				hists[i].Record(time.Since(t))
				if i == 0 && n%64 == 0 {
					env.Progress(int64(time.Since(begin)/time.Millisecond), int64(w.Duration/time.Millisecond))
				}
			}
		})
	}
	wg.Wait()
	b := bench.Baseline{Elapsed: time.Since(begin)}
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return b, err
	}
	h := bench.NewHistogram()
	for _, x := range hists {
		h.Merge(x)
	}
	b.Ops = h.Count()
	b.Latency = h.Latency()
	b.OpsPerSec = float64(b.Ops) / b.Elapsed.Seconds()
	return b, nil
}

// errDry ends a worker of the get measurement when the queue ran dry:
// the sets measured before filled it for less time than the gets run.
var errDry = errors.New("queue empty")

// Client is a minimal memcache text-protocol client: one connection, one
// request at a time. It is not safe for concurrent use.
type Client struct {
	nc net.Conn
	r  *bufio.Reader
}

// Dial connects a Client to the server at addr (host:port).
func Dial(addr string) (*Client, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Client{nc: nc, r: bufio.NewReader(nc)}, nil
}

// Send sends req and reads nothing back (a request the server answers
// by closing, such as shutdown).
func (c *Client) Send(req string) error {
	_ = c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	_, err := io.WriteString(c.nc, req)
	return err
}

// Close closes the connection.
func (c *Client) Close() { _ = c.nc.Close() }

// RoundTrip sends req (whole lines, with their \r\n) and reads one reply:
// a VALUE's value (ok true), or nothing for STORED and END. Any other
// reply is an error. Each round trip must end within 30 seconds.
func (c *Client) RoundTrip(req string) (value []byte, ok bool, err error) {
	_ = c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c.nc, req); err != nil {
		return nil, false, err
	}
	l, err := c.r.ReadString('\n')
	if err != nil {
		return nil, false, err
	}
	if l == "STORED\r\n" || l == "END\r\n" {
		return nil, false, nil
	}
	f := strings.Fields(l)
	if len(f) < 4 || f[0] != "VALUE" {
		return nil, false, fmt.Errorf("kestrel: %q answered %q", strings.SplitN(req, "\r\n", 2)[0], l)
	}
	n, err := strconv.Atoi(f[3])
	if err != nil || n < 0 {
		return nil, false, fmt.Errorf("kestrel: bad VALUE line %q", l)
	}
	value = make([]byte, n+2)
	if _, err := io.ReadFull(c.r, value); err != nil {
		return nil, false, err
	}
	if end, err := c.r.ReadString('\n'); err != nil || end != "END\r\n" {
		return nil, false, fmt.Errorf("kestrel: %q after a value (%v)", end, err)
	}
	return value[:n], true, nil
}
