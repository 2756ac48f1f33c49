package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/seglog/seglog/broker"
	"github.com/seglog/seglog/metrics"
	"github.com/seglog/seglog/retention"
	"github.com/seglog/seglog/storage"
)

const serveDesc = `
Serve a data directory to Kafka clients: a single broker (node 0, leader of
every partition) speaking Kafka's protocol, for any Kafka client (Java,
librdkafka and kcat, franz-go, ...). Records are stored as the clients
encoded them and fetched back from the segment files with sendfile;
consumer groups split partitions (Kafka's classic group protocol) and
commit into the data directory's offset store, where 'seglog offsets'
shows them; idempotent producers are checked by each partition's producer
state. Topics are created on first use (--auto-create-topics) or with
CreateTopics (Kafka's topic configs: retention.ms, retention.bytes,
segment.bytes, segment.ms, flush.messages, flush.ms, compression.type,
seglog.sync, seglog.retention.consumed). Transactions are refused
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

With acks=1 or acks=-1 a produce is answered once the records are as
durable as the topic's sync policy makes them: a topic with
seglog.sync=always (or flush.messages=1) answers after the fsync.

The retention cleaner runs in the process every --retention-interval, with
each topic's own retention configs. --metrics serves Prometheus metrics
(the store's, the offset store's, the cleaner's, and request counts and
latency per Kafka API) at http://ADDR/metrics.

SIGTERM or SIGINT stops it gracefully: no new connections, requests in
flight finish and are answered (a waiting fetch answers at once), then the
store is closed cleanly.`

const serveExample = `
seglog serve --dir /var/lib/seglog
seglog serve --dir data --listen 0.0.0.0:9092 --advertise kafka.example:9092 --metrics 127.0.0.1:9100
kcat -b 127.0.0.1:9092 -P -t orders <<<'hello'
kcat -b 127.0.0.1:9092 -G my-group orders`

// kafkaServeFlags configure the Kafka listener of seglog serve.
type kafkaServeFlags struct {
	listen, advertise string
	maxRequestBytes   int64
	idleTimeout       time.Duration
	autoCreate        bool
	partitions        int
	rebalanceDelay    time.Duration
}

func serveKafkaCommand(e *env) *cobra.Command {
	var dir, metricsAddr, logLevel string
	var k kafkaServeFlags
	var retentionInterval, shutdownTimeout time.Duration
	cmd := command(e, "serve", "serve a data directory to Kafka clients (a one-node Kafka broker)", serveDesc, serveExample,
		func(c *cli, pos []string) int {
			if code, bad := c.required(pos, "unexpected argument %q", "dir", dir); bad {
				return code
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return c.usageErr("--log-level %q: want debug, info, warn or error", logLevel)
			}
			logger := slog.New(slog.NewTextHandler(c.e.stderr, &slog.HandlerOptions{Level: level}))
			return runServe(c, dir, k, metricsAddr, retentionInterval, shutdownTimeout, logger)
		})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (created if missing)")
	f.StringVar(&k.listen, "listen", "127.0.0.1:9092", "address to accept Kafka clients on (port 0: any free port; the address is logged)")
	f.StringVar(&k.advertise, "advertise", "", "host:port clients are told to connect to (default: the address they connected to)")
	sizeFlag(f, &k.maxRequestBytes, "max-request-bytes", broker.DefaultMaxRequestBytes, "largest request accepted; a bigger one closes its connection (Kafka's socket.request.max.bytes)")
	durationFlag(f, &k.idleTimeout, "idle-timeout", broker.DefaultIdleTimeout, "close a connection that sends nothing for this long")
	f.BoolVar(&k.autoCreate, "auto-create-topics", true, "create a topic when a client asks for one that does not exist")
	f.IntVar(&k.partitions, "default-partitions", broker.DefaultPartitions, "partitions of a topic created on first use")
	durationFlag(f, &k.rebalanceDelay, "group-initial-rebalance-delay", 0, "hold a new group's first rebalance back this long, so members starting together join one generation")
	f.StringVar(&metricsAddr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (off when empty)")
	durationFlag(f, &retentionInterval, "retention-interval", retention.DefaultInterval, "how often the retention cleaner runs (topic configs say what it deletes)")
	durationFlag(f, &shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long requests in flight may take before connections are cut")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// runServe runs the broker until a signal or the command's context ends.
func runServe(c *cli, dir string, k kafkaServeFlags, metricsAddr string, retentionInterval, shutdownTimeout time.Duration, logger *slog.Logger) (code int) {
	if k.partitions < 1 {
		return c.usageErr("--default-partitions %d: want at least 1", k.partitions)
	}
	if k.maxRequestBytes < 1<<10 || k.maxRequestBytes > 1<<30 {
		return c.usageErr("--max-request-bytes %d: want 1 KiB to 1 GiB", k.maxRequestBytes)
	}
	if retentionInterval <= 0 {
		return c.usageErr("--retention-interval must be positive")
	}
	fsync := metrics.NewFsyncHistogram(nil)
	store, openCode := openStore(c, dir, true, storage.StoreOptions{Log: storage.Options{OnFsync: fsync.Observe}})
	if store == nil {
		return openCode
	}
	defer func() {
		if err := store.Close(); err != nil {
			c.warn("close store: %v", err)
			code = exitFailure
		}
	}()
	offs, err := openOffsets(dir)
	if err != nil {
		return c.fail("offset store: %v", err)
	}
	defer func() {
		if err := offs.Close(); err != nil {
			c.warn("close offset store: %v", err)
		}
	}()
	var bm *broker.Metrics
	if metricsAddr != "" {
		bm = broker.NewMetrics()
	}
	srv, err := broker.New(store, offs, broker.Options{
		Logger: logger, Advertise: k.advertise, MaxRequestBytes: int(k.maxRequestBytes), IdleTimeout: k.idleTimeout,
		NoAutoCreateTopics: !k.autoCreate, DefaultPartitions: k.partitions, InitialRebalanceDelay: k.rebalanceDelay, Metrics: bm,
	})
	if err != nil {
		return c.fail("%v", err)
	}
	cleaner, err := retention.New(store, offs, retention.Options{Interval: retentionInterval, OnRun: func(rep retention.Report, err error) {
		if err != nil {
			logger.Error("retention run failed", "err", err)
			return
		}
		if len(rep.Deletions) > 0 || len(rep.Failures) > 0 {
			logger.Info("retention run", "segments", len(rep.Deletions), "bytes", rep.Bytes(), "failures", len(rep.Failures))
		}
	}})
	if err != nil {
		return c.fail("retention: %v", err)
	}
	cleaner.Start()
	defer cleaner.Close()

	ln, err := net.Listen("tcp", k.listen)
	if err != nil {
		return c.fail("listen: %v", err)
	}
	logger.Info("serving Kafka clients", "addr", ln.Addr().String(), "dir", dir, "cluster", srv.ClusterID())

	var msrv *http.Server
	if metricsAddr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.New(store, metrics.Options{Offsets: offs, Cleaner: cleaner, Fsync: fsync}), bm)
		mln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			ln.Close()
			return c.fail("metrics listen: %v", err)
		}
		msrv = &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
		logger.Info("serving metrics", "addr", "http://"+mln.Addr().String()+"/metrics")
		go msrv.Serve(mln)
	}

	ctx, stop := signal.NotifyContext(c.e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		served <- err
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	code = exitOK
	if err := srv.Shutdown(sctx); err != nil {
		c.warn("shutdown: connections cut after %s: %v", shutdownTimeout, err)
	}
	if err := <-served; !errors.Is(err, broker.ErrServerClosed) {
		c.warn("serve: %v", err)
		code = exitFailure
	}
	if msrv != nil {
		msrv.Shutdown(sctx)
	}
	if err := cleaner.Close(); err != nil {
		c.warn("retention: %v", err)
	}
	return code
}
