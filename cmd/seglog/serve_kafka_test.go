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

var servingAddr = regexp.MustCompile(`msg="serving Kafka clients" addr=(\S+)`)
var metricsAddr = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"serve", "--dir", dir, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, &stderr)
	}()
	var addr, maddr string
	require.Eventually(t, func() bool {
		m, mm := servingAddr.FindStringSubmatch(stderr.String()), metricsAddr.FindStringSubmatch(stderr.String())
		if m == nil || mm == nil {
			return false
		}
		addr, maddr = m[1], mm[1]
		return true
	}, 30*time.Second, 5*time.Millisecond, "serve did not start: %s", stderr.String())

	createTopicWith(t, addr, "cli", 3)
	resp, err := http.Get(maddr)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `seglog_broker_requests_total{api="CreateTopics",result="ok"} 1`)
	assert.Contains(t, string(body), "\nseglog_topics 1\n")

	cancel()
	select {
	case code := <-done:
		require.Equal(t, exitOK, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
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
	lines := bufio.NewScanner(stderr)
	var addr string
	var log strings.Builder
	for addr == "" && lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if m := servingAddr.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
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
	for lines.Scan() {
		log.WriteString(lines.Text() + "\n")
	}
	require.NoError(t, cmd.Wait(), log.String())
	assert.Contains(t, log.String(), "shutting down")
	noStackTrace(t, log.String())
	// The store was closed cleanly: the partition it opened has its
	// clean-shutdown marker.
	_, err = os.Stat(filepath.Join(dir, "term-0", storage.CleanShutdownFile))
	assert.NoError(t, err)
}

func TestServeRunsTheRetentionCleaner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"serve", "--dir", dir, "--listen", "127.0.0.1:0", "--retention-interval", "20ms"}, strings.NewReader(""), io.Discard, &stderr)
	}()
	var addr string
	require.Eventually(t, func() bool {
		m := servingAddr.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 30*time.Second, 5*time.Millisecond, "serve did not start: %s", stderr.String())
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
	require.Zero(t, ctResp.Topics[0].ErrorCode, "%v", ctResp.Topics[0].ErrorMessage)
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
	cancel()
	require.Equal(t, exitOK, <-done, stderr.String())
}
