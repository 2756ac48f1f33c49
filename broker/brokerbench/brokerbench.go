// Package brokerbench holds `seglog bench broker`: the broker measured with
// a real Kafka client (franz-go's kgo) over loopback, 1 KiB records, each
// figure beside baselines measured in the same run:
//
//   - produce (acks=1 on a topic with the store's sync policy; acks=-1 on
//     a topic that fsyncs every append): the client's batches, read back
//     from the log afterwards, appended in process with Log.AppendBatch to
//     a fresh log of the same sync policy (the engine without the
//     network); target: the broker at least 60% of it.
//   - consume (a group-less kgo consumer from offset 0) and fetch (Fetch
//     requests, one at a time, each response read into one reused buffer
//     and its batches walked, not decoded: the broker's side without the
//     client library's allocations and record decoding): the same log's
//     bytes sent
//     through a plain loopback TCP connection with sendfile (the network
//     without the protocol); target: at least 80% of it.
//   - both: franz-go's in-memory fake cluster (pkg/kfake) serving the same
//     workload to the same client; target: the broker (writing to disk)
//     ahead of it.
//
// It lives beside the broker, not in package bench: bench sits below the
// broker (the broker imports nothing of bench, bench nothing of the
// broker); cmd/seglog adds Group to the suite.
package brokerbench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/broker"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// Group is the "broker" workload group: produce with acks=1 and acks=-1,
// then consume, each of a quarter of the suite's produce size.
func Group() bench.ExtraGroup {
	return bench.ExtraGroup{Name: "broker", Workloads: func(c bench.Config) []bench.Workload {
		n := c.Size / 4 / 1024
		return []bench.Workload{
			Produce{Label: "broker-produce-1k-acks1", Acks: 1, Records: n},
			Produce{Label: "broker-produce-1k-acks-1", Acks: -1, Sync: storage.SyncAlways, Records: n / 4},
			Consume{Label: "broker-consume-1k", Records: n},
			Consume{Label: "broker-fetch-1k", Records: n, Raw: true},
		}
	}}
}

const (
	topic      = "bench"
	recordSize = 1024
)

// server is a broker on 127.0.0.1:0 over a fresh store in dir.
type server struct {
	store  *storage.Store
	offs   *offsets.Store
	srv    *broker.Server
	addr   string
	served chan error
}

func startServer(dir string, sync storage.SyncPolicy) (*server, error) {
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	if err != nil {
		return nil, err
	}
	s := &server{store: store, served: make(chan error, 1)}
	cfg := storage.TopicConfig{}
	if sync != storage.SyncDefault {
		cfg.Sync = sync.String()
	}
	if err := store.CreateTopic(topic, 1, cfg); err != nil {
		store.Close()
		return nil, err
	}
	if s.offs, err = offsets.Open(offsets.Dir(dir), offsets.Options{}); err != nil {
		store.Close()
		return nil, err
	}
	if s.srv, err = broker.New(store, s.offs, broker.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
		s.offs.Close()
		store.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.close()
		return nil, err
	}
	s.addr = ln.Addr().String()
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

func (s *server) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := []error{s.srv.Shutdown(ctx)}
	if s.addr != "" {
		if err := <-s.served; !errors.Is(err, broker.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.offs.Close(), s.store.Close())
	return errors.Join(errs...)
}

// produceKgo sends n records of recordSize random bytes with kgo and
// returns the time from the first record to the last acknowledgement.
func produceKgo(ctx context.Context, addr string, acks int16, n int64) (time.Duration, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	if acks == 1 {
		// Without idempotence kgo sends one request at a time unless
		// told otherwise; with it, five (as here).
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	// Connected and the topic known before the clock starts.
	if err := cl.Ping(ctx); err != nil {
		return 0, err
	}
	value := make([]byte, recordSize)
	rand.Read(value)
	errc := make(chan error, 1)
	start := time.Now()
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	select {
	case err := <-errc:
		return 0, fmt.Errorf("produce: %w", err)
	default:
	}
	return elapsed, nil
}

// consumeKgo reads n records from offset 0 with kgo and returns the time
// it took.
func consumeKgo(ctx context.Context, addr string, n int64) (time.Duration, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(8<<20), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	var got int64
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return 0, fmt.Errorf("consume: %w", ferr)
		}
		got += int64(fs.NumRecords())
	}
	return time.Since(start), nil
}

// fetchVersion is the Fetch version fetchRaw speaks: the highest the
// broker serves (the one kgo picks), naming topics by ID.
const fetchVersion = 16

// fetchRaw sends Fetch requests from offset 0 until n records came back,
// walking the record batches' headers (Kafka's v2 layout: base offset at
// 0, last offset delta at 23, record count at 57) without decoding
// records. One request at a time on a connection of its own, each
// response read into one buffer reused from response to response, as the
// loopback copy's receiver reuses its buffer: the broker's side of a
// fetch, without a client library's allocation of every response (kgo
// allocates and zeroes a buffer the size of each one; the consume
// workload keeps that).
func fetchRaw(ctx context.Context, addr string, n int64) (time.Duration, error) {
	id, err := topicID(ctx, addr)
	if err != nil {
		return 0, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	var frame, buf []byte
	start := time.Now()
	var off, got int64
	for corr := int32(0); got < n; corr++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(fetchVersion)
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 500, 1, 64<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = off, 8<<20
		rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		// Size, key, version, correlation id, a null client id, no
		// header tags; then the body.
		frame = binary.BigEndian.AppendUint16(append(frame[:0], 0, 0, 0, 0), uint16(req.Key()))
		frame = binary.BigEndian.AppendUint16(frame, fetchVersion)
		frame = binary.BigEndian.AppendUint32(frame, uint32(corr))
		frame = append(frame, 0xff, 0xff, 0)
		frame = req.AppendTo(frame)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		if _, err := nc.Write(frame); err != nil {
			return 0, err
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return 0, err
		}
		k := int(binary.BigEndian.Uint32(size[:]))
		if k < 5 || k > 256<<20 {
			return 0, fmt.Errorf("fetch response of %d bytes", k)
		}
		if cap(buf) < k {
			buf = make([]byte, k)
		}
		buf = buf[:k]
		if _, err := io.ReadFull(nc, buf); err != nil {
			return 0, err
		}
		if rc := int32(binary.BigEndian.Uint32(buf)); rc != corr {
			return 0, fmt.Errorf("fetch response for request %d, want %d", rc, corr)
		}
		r := kbin.Reader{Src: buf[4:]}
		kmsg.SkipTags(&r)
		fr := req.ResponseKind().(*kmsg.FetchResponse)
		if err := fr.ReadFrom(r.Src); err != nil {
			return 0, fmt.Errorf("fetch response: %w", err)
		}
		if fr.ErrorCode != 0 {
			return 0, fmt.Errorf("fetch: %w", kerr.ErrorForCode(fr.ErrorCode))
		}
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return 0, fmt.Errorf("fetch: %d topics in the response", len(fr.Topics))
		}
		p := fr.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return 0, fmt.Errorf("fetch at %d: %w", off, kerr.ErrorForCode(p.ErrorCode))
		}
		for b := p.RecordBatches; len(b) >= 61; {
			size := 12 + int(binary.BigEndian.Uint32(b[8:12]))
			if size > len(b) {
				break // a partial batch at the end
			}
			off = int64(binary.BigEndian.Uint64(b)) + int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
			got += int64(int32(binary.BigEndian.Uint32(b[57:])))
			b = b[size:]
		}
	}
	return time.Since(start), nil
}

// topicID asks the broker (through kgo) for the topic's ID.
func topicID(ctx context.Context, addr string) ([16]byte, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return [16]byte{}, err
	}
	defer cl.Close()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = []kmsg.MetadataRequestTopic{mt}
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return [16]byte{}, err
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		return [16]byte{}, fmt.Errorf("metadata of %s: %v", topic, mresp.Topics)
	}
	return mresp.Topics[0].TopicID, nil
}

// storedBatches reads every batch of the topic's partition.
func storedBatches(store *storage.Store) ([][]byte, error) {
	l, err := store.Log(topic, 0)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for off := l.StartOffset(); off < l.EndOffset(); {
		b, err := l.Read(off, 4<<20)
		if err != nil {
			return nil, err
		}
		// Whole batches: each is its 12-byte prefix (base offset,
		// length) and that length.
		for len(b) >= 12 {
			n := 12 + int(binary.BigEndian.Uint32(b[8:12]))
			if n > len(b) {
				return nil, fmt.Errorf("batch at offset %d: %d bytes, %d read", off, n, len(b))
			}
			h, err := segment.ParseHeader(b[:n], segment.Limits{})
			if err != nil {
				return nil, err
			}
			out = append(out, b[:n])
			off, b = h.NextOffset(), b[n:]
		}
	}
	return out, nil
}

// appendInProcess appends the batches to a fresh log in dir and returns
// the time the appends took.
func appendInProcess(dir string, sync storage.SyncPolicy, batches [][]byte) (time.Duration, error) {
	l, err := storage.Open(dir, storage.Options{Sync: sync})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	for _, b := range batches {
		if _, err := l.AppendBatch(b); err != nil {
			l.Close()
			return 0, err
		}
	}
	elapsed := time.Since(start)
	return elapsed, l.Close()
}

// fakeCluster is kfake with the topic, one broker.
func fakeCluster() (*kfake.Cluster, string, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		return nil, "", err
	}
	return c, c.ListenAddrs()[0], nil
}

// Produce is a broker produce workload.
type Produce struct {
	Label   string
	Acks    int16              // 1 or -1
	Sync    storage.SyncPolicy // the topic's
	Records int64
}

// Name returns the result name.
func (w Produce) Name() string { return w.Label }

// Run measures the broker, the in-process append and kfake.
func (w Produce) Run(ctx context.Context, env *bench.Env) ([]bench.Result, error) {
	dir, err := env.WorkDir(w.Label)
	if err != nil {
		return nil, err
	}
	s, err := startServer(filepath.Join(dir, "broker"), w.Sync)
	if err != nil {
		return nil, err
	}
	elapsed, err := produceKgo(ctx, s.addr, w.Acks, w.Records)
	if err != nil {
		s.close()
		return nil, err
	}
	batches, err := storedBatches(s.store)
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	sync := w.Sync
	if sync == storage.SyncDefault {
		sync = storage.SyncNever
	}
	inproc, err := appendInProcess(filepath.Join(dir, "inprocess"), sync, batches)
	if err != nil {
		return nil, err
	}
	fake, addr, err := fakeCluster()
	if err != nil {
		return nil, err
	}
	fakeElapsed, err := produceKgo(ctx, addr, w.Acks, w.Records)
	fake.Close()
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	return results(w.Label, "produce", w.Records, elapsed, fakeElapsed, []bench.Param{
		{Name: "acks", Value: fmt.Sprint(w.Acks)}, {Name: "sync", Value: sync.String()}, {Name: "record", Value: "1KiB"},
		{Name: "batches", Value: fmt.Sprint(len(batches))}, {Name: "client", Value: "kgo over loopback"},
	}, &bench.Baseline{Name: "in-process Log.AppendBatch of the batches the client sent, same sync policy", Bytes: w.Records * recordSize, Ops: int64(len(batches)), Elapsed: inproc},
		"produce through the broker at least 60% of the in-process AppendBatch", 0.6), nil
}

// results builds the broker's result (with its baseline and targets) and
// kfake's.
func results(label, what string, records int64, elapsed, fakeElapsed time.Duration, params []bench.Param, base *bench.Baseline, baseTarget string, baseRatio float64) []bench.Result {
	r := bench.Result{Name: label, Workload: "broker", Params: params, Records: records, Bytes: records * recordSize, Elapsed: elapsed, Baseline: base}
	r.Finish()
	r.Targets = append(r.Targets, bench.Target{Name: baseTarget, Value: fmt.Sprintf("%.0f%%", 100*base.Ratio), Met: base.Ratio >= baseRatio})
	f := bench.Result{Name: "kfake-" + label[len("broker-"):], Workload: "kfake", Params: params, Records: records, Bytes: records * recordSize, Elapsed: fakeElapsed,
		Notes: []string{"franz-go's in-memory fake cluster (pkg/kfake) serving the same " + what + " to the same client"}}
	f.Finish()
	r.Targets = append(r.Targets, bench.Target{Name: what + " through the broker (on disk) ahead of kfake (in memory)",
		Value: fmt.Sprintf("%.0f vs %.0f MB/s", r.MBPerSec, f.MBPerSec), Met: r.MBPerSec > f.MBPerSec})
	return []bench.Result{r, f}
}

// Consume is a broker fetch workload: a kgo consumer, or (Raw) Fetch
// requests whose record batches are counted, not decoded (the broker's
// side of a fetch, without the client's record decoding).
type Consume struct {
	Label   string
	Records int64
	Raw     bool
}

// read is consumeKgo or fetchRaw.
func (w Consume) read(ctx context.Context, addr string) (time.Duration, error) {
	if w.Raw {
		return fetchRaw(ctx, addr, w.Records)
	}
	return consumeKgo(ctx, addr, w.Records)
}

// Name returns the result name.
func (w Consume) Name() string { return w.Label }

// Run fills a log in process, then measures kgo reading it through the
// broker, the same bytes through a plain loopback connection, and kgo
// reading the same records from kfake.
func (w Consume) Run(ctx context.Context, env *bench.Env) ([]bench.Result, error) {
	dir, err := env.WorkDir(w.Label)
	if err != nil {
		return nil, err
	}
	s, err := startServer(filepath.Join(dir, "broker"), storage.SyncDefault)
	if err != nil {
		return nil, err
	}
	if _, err := produceKgo(ctx, s.addr, 1, w.Records); err != nil {
		s.close()
		return nil, err
	}
	elapsed, err := w.read(ctx, s.addr)
	if err != nil {
		s.close()
		return nil, err
	}
	l, err := s.store.Log(topic, 0)
	if err != nil {
		s.close()
		return nil, err
	}
	segs, err := l.Segments()
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	var files []string
	for _, sg := range segs {
		files = append(files, sg.Path)
	}
	copyElapsed, copied, err := loopbackCopy(ctx, files)
	if err != nil {
		return nil, err
	}
	fake, addr, err := fakeCluster()
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	if _, err := produceKgo(ctx, addr, 1, w.Records); err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	fakeElapsed, err := w.read(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	base := &bench.Baseline{Name: fmt.Sprintf("the log's %d bytes over a plain loopback TCP connection (sendfile, read into a 1 MiB buffer), counted as the same payload", copied),
		Bytes: w.Records * recordSize, Ops: 1, Elapsed: copyElapsed}
	what, client := "consume", "kgo consumer over loopback, from offset 0"
	if w.Raw {
		what, client = "fetch", "Fetch v16 requests over loopback, one at a time, each response read into one reused buffer, batches not decoded, from offset 0"
	}
	return results(w.Label, what, w.Records, elapsed, fakeElapsed, []bench.Param{
		{Name: "record", Value: "1KiB"}, {Name: "client", Value: client},
	}, base, what+" through the broker at least 80% of a plain loopback copy", 0.8), nil
}

// loopbackCopy sends the files through a loopback TCP connection and
// returns how long the receiver took from its dial to the last byte.
func loopbackCopy(ctx context.Context, files []string) (time.Duration, int64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	sent := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			sent <- err
			return
		}
		defer c.Close()
		for _, path := range files {
			f, err := os.Open(path)
			if err != nil {
				sent <- err
				return
			}
			_, err = io.Copy(c, f) // sendfile
			f.Close()
			if err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	var d net.Dialer
	start := time.Now()
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	elapsed := time.Since(start)
	return elapsed, n, <-sent
}
