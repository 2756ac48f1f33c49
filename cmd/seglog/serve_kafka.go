package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/seglog/seglog/broker"
	"github.com/seglog/seglog/consumer"
	"github.com/seglog/seglog/metrics"
	"github.com/seglog/seglog/retention"
)

// defaultKafkaAddr is Kafka's port on the loopback interface.
const defaultKafkaAddr = "127.0.0.1:9092"

// kafkaFlags is seglog serve's Kafka listener (package broker): a
// one-node broker, the default protocol of seglog serve. With it run the
// retention cleaner and, with --metrics, the Prometheus endpoint.
type kafkaFlags struct {
	flags             *pflag.FlagSet
	listen, advertise string
	maxRequestBytes   int64
	idleTimeout       time.Duration
	autoCreate        bool
	partitions        int
	rebalanceDelay    time.Duration
	metricsAddr       string
	retentionInterval time.Duration
	shutdownTimeout   time.Duration
}

func (k *kafkaFlags) addFlags(f *pflag.FlagSet) {
	k.flags = f
	f.StringVar(&k.listen, "listen", defaultKafkaAddr, "serve Kafka clients on `ADDR` (port 0: any free port; \"\": no Kafka listener); the Kafka listener runs when --listen is given or no other listener is")
	f.StringVar(&k.advertise, "advertise", "", "host:port Kafka clients are told to connect to (default: the address they connected to)")
	sizeFlag(f, &k.maxRequestBytes, "max-request-bytes", broker.DefaultMaxRequestBytes, "largest Kafka request accepted; a bigger one closes its connection (Kafka's socket.request.max.bytes)")
	durationFlag(f, &k.idleTimeout, "idle-timeout", broker.DefaultIdleTimeout, "close a Kafka connection that sends nothing for this long")
	f.BoolVar(&k.autoCreate, "auto-create-topics", true, "create a topic when a Kafka client asks for one that does not exist")
	f.IntVar(&k.partitions, "default-partitions", broker.DefaultPartitions, "partitions of a topic created on first use")
	durationFlag(f, &k.rebalanceDelay, "group-initial-rebalance-delay", 0, "hold a new consumer group's first rebalance back this long, so members starting together join one generation")
	f.StringVar(&k.metricsAddr, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (off when empty)")
	durationFlag(f, &k.retentionInterval, "retention-interval", retention.DefaultInterval, "how often the retention cleaner runs (topic configs say what it deletes)")
	durationFlag(f, &k.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM, how long Kafka requests in flight may take before connections are cut")
}

// enabled: --listen given (not empty). seglog serve also starts it when
// no listener is enabled and --listen was not given: Kafka is the
// default protocol.
func (k *kafkaFlags) enabled() bool { return k.listen != "" && k.flags.Changed("listen") }

// byDefault reports whether the listener runs when no other does.
func (k *kafkaFlags) byDefault() bool { return !k.flags.Changed("listen") }

func (k *kafkaFlags) check() error {
	switch {
	case k.partitions < 1:
		return fmt.Errorf("--default-partitions %d: want at least 1", k.partitions)
	case k.maxRequestBytes < 1<<10 || k.maxRequestBytes > 1<<30:
		return fmt.Errorf("--max-request-bytes %d: want 1 KiB to 1 GiB", k.maxRequestBytes)
	case k.retentionInterval <= 0:
		return fmt.Errorf("--retention-interval must be positive")
	case k.idleTimeout < 0 || k.shutdownTimeout < 0:
		return fmt.Errorf("--idle-timeout and --shutdown-timeout: want 0 or more")
	}
	return nil
}

func (k *kafkaFlags) start(d *served) (server, string, error) {
	log := d.log.With("listener", "kafka")
	var bm *broker.Metrics
	if k.metricsAddr != "" {
		bm = broker.NewMetrics()
	}
	srv, err := broker.New(d.store, d.ost, broker.Options{
		Logger: log, Advertise: k.advertise, MaxRequestBytes: int(k.maxRequestBytes), IdleTimeout: k.idleTimeout,
		NoAutoCreateTopics: !k.autoCreate, DefaultPartitions: k.partitions, InitialRebalanceDelay: k.rebalanceDelay, Metrics: bm,
		Retention: &retention.Options{Interval: k.retentionInterval},
	})
	if err != nil {
		return nil, "", err
	}
	ks := &kafkaServer{srv: srv, shutdownTimeout: k.shutdownTimeout}
	if ks.ln, err = net.Listen("tcp", k.listen); err != nil {
		_ = ks.Close()
		return nil, "", fmt.Errorf("--listen: %w", err)
	}
	if k.metricsAddr != "" {
		c := metrics.New(d.store, metrics.Options{Offsets: d.ost, Cleaner: srv.Cleaner(), Fsync: d.fsync})
		if ks.metrics, err = metrics.Listen(k.metricsAddr, c, bm); err != nil {
			_ = ks.Close()
			return nil, "", fmt.Errorf("--metrics: %w", err)
		}
		log.Info("serving metrics", "addr", "http://"+ks.metrics.Addr().String()+"/metrics")
	}
	// seglog consume --group joins groups through the broker while it
	// serves.
	ks.dir = d.store.Root()
	addr := k.advertise
	if addr == "" {
		addr = ks.ln.Addr().String()
	}
	if err := consumer.AnnounceBroker(ks.dir, addr); err != nil {
		_ = ks.Close()
		return nil, "", fmt.Errorf("record the Kafka listener: %w", err)
	}
	log.Info("serving Kafka clients", "addr", ks.ln.Addr().String(), "cluster", srv.ClusterID())
	return ks, "kafka " + ks.ln.Addr().String(), nil
}

// kafkaServer is the broker (with its retention cleaner) and its metrics
// endpoint.
type kafkaServer struct {
	srv             *broker.Server
	ln              net.Listener
	metrics         *metrics.Endpoint // nil without --metrics
	dir             string            // where the listener is recorded; "": not yet
	shutdownTimeout time.Duration
}

// Serve serves until ctx ends, then stops gracefully: no new
// connections, requests in flight answered (a waiting fetch at once),
// for at most the shutdown timeout.
func (k *kafkaServer) Serve(ctx context.Context) error {
	scraped := make(chan error, 1)
	if k.metrics != nil {
		go func() { scraped <- k.metrics.Serve() }()
	}
	err := k.srv.Run(ctx, k.ln, k.shutdownTimeout)
	_ = k.Close() // the rest: the metrics endpoint, the record of the listener
	if k.metrics != nil {
		<-scraped
	}
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	return nil
}

// Close stops everything at once (a server that never served, or the
// rest of one that did).
func (k *kafkaServer) Close() error {
	if k.dir != "" {
		consumer.WithdrawBroker(k.dir)
	}
	errs := []error{k.srv.Close()}
	if k.metrics != nil {
		errs = append(errs, k.metrics.Close())
	}
	if k.ln != nil {
		k.ln.Close()
	}
	return errors.Join(errs...)
}
