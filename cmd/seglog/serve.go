package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seglog/seglog/metrics"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

// server is one protocol's listener, started by seglog serve over the
// opened data directory: Serve until its context ends (or it stops on
// its own), and then it is closed (everything it started has stopped)
// when Serve returns; Close stops one that never served.
type server interface {
	Serve(ctx context.Context) error
	Close() error
}

// served is what the listeners share: the data directory, opened once.
type served struct {
	store *storage.Store // the data directory is its Root
	ost   *offsets.Store
	log   *slog.Logger
	fsync *metrics.FsyncHistogram // the store's fsync latencies, for --metrics
}

// listenerFlags is one protocol of seglog serve: its flags, whether they
// enable it, and how it starts over the data directory. A listener that
// fails to start reports why in its error.
type listenerFlags interface {
	addFlags(f *pflag.FlagSet)
	enabled() bool
	check() error                            // the flags' values, before anything is opened: a usage error
	start(d *served) (server, string, error) // the server and the address it listens on
}

type serveFlags struct {
	dir      string
	syncName string
	kafka    *kafkaFlags // the default listener
	// listeners are the protocols, in the order they start.
	listeners []listenerFlags
}

func serveCommand(e *env) *cobra.Command {
	kafka := &kafkaFlags{}
	o := &serveFlags{kafka: kafka, listeners: []listenerFlags{kafka, &kestrelFlags{}}}
	cmd := command(e, "serve", "serve the data directory over the network (Kafka's protocol, Kestrel's memcache protocol)", func(c *cli, pos []string) int { return o.run(c, pos) })
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "the data directory (created if missing)")
	f.StringVar(&o.syncName, "sync", storage.SyncAlways.String(), "fsync policy of the logs: never, every-n, interval, always (a reply follows the fsync)")
	for _, l := range o.listeners {
		l.addFlags(f)
	}
	_ = cmd.MarkFlagDirname("dir")
	completeValues(cmd, "sync", syncNames)
	return cmd
}

func (o *serveFlags) run(c *cli, pos []string) int {
	if code, bad := c.required(pos, "unexpected argument %q (a listener's address goes after \"=\": --kestrel=ADDR)", "dir", o.dir); bad {
		return code
	}
	var on []listenerFlags
	for _, l := range o.listeners {
		if l.enabled() {
			on = append(on, l)
		}
	}
	if len(on) == 0 && o.kafka.byDefault() {
		on = append(on, o.kafka) // Kafka is the default protocol
	}
	if len(on) == 0 {
		return c.usageErr("no listener: give --listen or --kestrel")
	}
	for _, l := range on {
		if err := l.check(); err != nil {
			return c.usageErr("%v", err)
		}
	}
	policy, err := parseSync(o.syncName)
	if err != nil {
		return c.usageErr("%v", err)
	}
	fsync := metrics.NewFsyncHistogram(nil)
	opts := storage.StoreOptions{Log: storage.Options{FS: c.e.fs, Sync: policy, OnFsync: fsync.Observe}}
	return withStores(c, o.dir, true, opts, nil, func(store *storage.Store, ost *offsets.Store) int {
		return serveAll(c, &served{store: store, ost: ost, log: slog.New(slog.NewTextHandler(c.e.stderr, nil)), fsync: fsync}, on)
	})
}

// withStores opens the data directory's store with opts (creating the
// directory when create is set) and its offset store, runs fn on them and
// closes both; a failure to close fails the command. check, when not nil,
// is asked of the store before the offset store opens (and is created):
// its error fails the command.
func withStores(c *cli, dir string, create bool, opts storage.StoreOptions, check func(*storage.Store) error, fn func(*storage.Store, *offsets.Store) int) int {
	store, code := openStore(c, dir, create, opts)
	if store == nil {
		return code
	}
	var err error
	if check != nil {
		err = check(store)
	}
	var ost *offsets.Store
	if err == nil {
		ost, err = openOffsets(dir)
	}
	if err != nil {
		_ = store.Close()
		return c.fail("%v", err)
	}
	code = fn(store, ost)
	if err := errors.Join(ost.Close(), store.Close()); err != nil {
		return c.fail("closing %s: %v", dir, err)
	}
	return code
}

// serveAll starts the listeners and serves until SIGINT, SIGTERM, the
// command's context, or one listener stopping; then it stops them all.
func serveAll(c *cli, d *served, on []listenerFlags) int {
	ctx, stop := signal.NotifyContext(c.e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var servers []server
	for _, l := range on {
		s, addr, err := l.start(d)
		if err != nil {
			for _, s := range servers {
				_ = s.Close()
			}
			return c.fail("%v", err)
		}
		servers = append(servers, s)
		fmt.Fprintf(c.e.stderr, "%s: listening on %s\n", c.name, addr)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			errs[i] = s.Serve(ctx)
			cancel() // one stopping (a shutdown command) stops them all
		})
	}
	wg.Wait() // each Serve closed its server before returning
	if err := errors.Join(errs...); err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintf(c.e.stderr, "%s: stopped\n", c.name)
	return exitOK
}
