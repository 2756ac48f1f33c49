package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

var servingAddr = regexp.MustCompile(`msg="serving Kafka clients".* addr=(\S+)`)
var metricsAddr = regexp.MustCompile(`msg="serving metrics".* addr=(\S+)`)

// serveInProcess runs seglog serve with args added (its address and the
// metrics' when --metrics is given) until stop, which returns its exit
// code.
func serveInProcess(t *testing.T, args ...string) (addr, maddr string, stderr *lockedBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, stderr)
	}()
	stop = func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	withMetrics := slices.Contains(args, "--metrics")
	require.Eventually(t, func() bool {
		m, mm := servingAddr.FindStringSubmatch(stderr.String()), metricsAddr.FindStringSubmatch(stderr.String())
		if m == nil || withMetrics && mm == nil {
			return false
		}
		addr = m[1]
		if mm != nil {
			maddr = mm[1]
		}
		return true
	}, 30*time.Second, 5*time.Millisecond, "serve did not start: %s", stderr.String())
	return addr, maddr, stderr, stop
}

func createTopicWith(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].ErrorCode)
}

func TestServeServesKafkaClientsAndMetricsUntilCancelled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	addr, maddr, stderr, stop := serveInProcess(t, "--dir", dir, "--metrics", "127.0.0.1:0")
	createTopicWith(t, addr, "cli", 3)
	resp, err := http.Get(maddr)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `seglog_broker_requests_total{api="CreateTopics",result="ok"} 1`)
	assert.Contains(t, string(body), "\nseglog_topics 1\n")

	require.Equal(t, exitOK, stop(), stderr.String())
	noStackTrace(t, stderr.String())
	store, err := storage.OpenStore(dir, storage.StoreOptions{Log: storage.Options{ReadOnly: true}})
	require.NoError(t, err)
	defer store.Close()
	n, err := store.Partitions("cli")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}

func TestServeBinaryStopsCleanlyOnSIGTERM(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(bin, "serve", "--dir", dir, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var addr string
	var log strings.Builder
	for addr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("serve exited: %s", log.String())
			}
			log.WriteString(l + "\n")
			if m := servingAddr.FindStringSubmatch(l); m != nil {
				addr = m[1]
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("serve did not start: %s", log.String())
		}
	}
	require.NotEmpty(t, addr, "serve did not start: %s", log.String())
	createTopicWith(t, addr, "term", 1)
	// A ListOffsets opens the partition's log.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "term"
	lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{kmsg.NewListOffsetsRequestTopicPartition()}
	lo.Topics = []kmsg.ListOffsetsRequestTopic{lt}
	loResp, err := lo.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.Zero(t, loResp.Topics[0].Partitions[0].ErrorCode)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	stuck := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() }) // a hang fails the test below
	defer stuck.Stop()
	for l := range lines { // until serve exits
		log.WriteString(l + "\n")
	}
	require.NoError(t, cmd.Wait(), log.String())
	assert.Contains(t, log.String(), "stopped")
	noStackTrace(t, log.String())
	// The store was closed cleanly: the partition it opened has its
	// clean-shutdown marker.
	_, err = os.Stat(filepath.Join(dir, "term-0", ".clean-shutdown")) // the on-disk marker of a clean close
	assert.NoError(t, err)
}

func TestServeRunsTheRetentionCleaner(t *testing.T) {
	addr, _, stderr, stop := serveInProcess(t, "--dir", filepath.Join(t.TempDir(), "data"), "--retention-interval", "20ms")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	reqCtx, reqCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer reqCancel()

	// Every batch rolls a segment; retention keeps one byte's worth.
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "short", 1, 1
	for k, v := range map[string]string{"segment.bytes": "1024", "retention.bytes": "1"} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, &v
		rt.Configs = append(rt.Configs, c)
	}
	ct.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	ctResp, err := ct.RequestWith(reqCtx, cl)
	require.NoError(t, err)
	require.Zero(t, ctResp.Topics[0].ErrorCode, "%v %s", ctResp.Topics[0].ErrorMessage, stderr.String())
	for range 4 {
		b, err := segment.AppendBatch(nil, []segment.Record{{Value: make([]byte, 2000), Timestamp: time.Now().UnixMilli()}}, segment.EncodeOptions{})
		require.NoError(t, err)
		pr := kmsg.NewPtrProduceRequest()
		pr.Acks = -1
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "short"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = b
		pt.Partitions = []kmsg.ProduceRequestTopicPartition{pp}
		pr.Topics = []kmsg.ProduceRequestTopic{pt}
		resp, err := pr.RequestWith(reqCtx, cl)
		require.NoError(t, err)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	}
	earliest := func() int64 {
		lo := kmsg.NewPtrListOffsetsRequest()
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "short"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -2
		lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{lp}
		lo.Topics = []kmsg.ListOffsetsRequestTopic{lt}
		resp, err := lo.RequestWith(reqCtx, cl)
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0].Offset
	}
	require.Eventually(t, func() bool { return earliest() == 3 }, 30*time.Second, 10*time.Millisecond, "retention deletes every segment but the active one")
	require.Equal(t, exitOK, stop(), stderr.String())
}
