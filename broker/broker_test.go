package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

func TestApiVersionsAdvertisesWhatOldAndNewClientsNeed(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	resp := roundTrip[*kmsg.ApiVersionsResponse](t, b.client(), kmsg.NewPtrApiVersionsRequest())
	require.Zero(t, resp.ErrorCode)
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	// librdkafka 2.0.2 enables a feature only when these exact versions
	// are inside the broker's range.
	for _, need := range []struct {
		name     string
		key, ver int16
	}{
		{"MsgVer2 produce", 0, 3}, {"MsgVer2 fetch", 1, 4},
		{"zstd produce", 0, 7}, {"zstd fetch", 1, 10},
		{"offset time", 2, 1},
		{"group coordinator", 10, 0}, {"balanced consumer commit", 8, 2}, {"balanced consumer fetch offsets", 9, 1},
		{"join", 11, 0}, {"sync", 14, 0}, {"heartbeat", 12, 0}, {"leave", 13, 0},
		{"idempotence", 22, 0},
		// Kafka 4 Java clients' lowest versions.
		{"java join", 11, 2}, {"java commit", 8, 2},
	} {
		r, ok := got[need.key]
		if assert.True(t, ok, need.name) {
			assert.True(t, r[0] <= need.ver && need.ver <= r[1], "%s: %d not in %v", need.name, need.ver, r)
		}
	}
	for _, txn := range []int16{24, 25, 26, 28} {
		assert.NotContains(t, got, txn, "transaction APIs are not advertised")
	}
}

func TestApiVersionsOutsideItsRangeAnswersV0WithUnsupportedVersion(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	for _, version := range []int16{99, 4, -1, -32768} {
		t.Run(fmt.Sprint(version), func(t *testing.T) {
			c := b.raw()
			c.send(apiVersionsKey, version, 7, false, nil)
			corr, body, err := c.recv()
			require.NoError(t, err)
			assert.Equal(t, int32(7), corr)
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.SetVersion(0)
			require.NoError(t, resp.ReadFrom(body))
			assert.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
			assert.NotEmpty(t, resp.ApiKeys)
		})
	}
}

// closedByServer waits for the server to close the connection.
func closedByServer(t *testing.T, c *rawConn) {
	t.Helper()
	_, _, err := c.recv()
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection stayed open: %v", err)
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET), "%v", err)
}

func TestConnectionClosedOnBadRequests(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{MaxRequestBytes: 1 << 10})
	tests := []struct {
		name string
		send func(c *rawConn)
	}{
		{"request over the size limit", func(c *rawConn) {
			var size [4]byte
			binary.BigEndian.PutUint32(size[:], 1<<20)
			_, err := c.nc.Write(size[:])
			require.NoError(t, err)
		}},
		{"negative size", func(c *rawConn) {
			_, err := c.nc.Write([]byte{0xff, 0xff, 0xff, 0xf0})
			require.NoError(t, err)
		}},
		{"unknown api key", func(c *rawConn) { c.send(999, 0, 1, false, nil) }},
		{"produce version not served", func(c *rawConn) { c.send(0, 2, 1, false, nil) }},
		{"truncated body", func(c *rawConn) { c.send(3, 1, 1, false, []byte{0, 0, 0, 5}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := b.raw()
			tt.send(c)
			closedByServer(t, c)
		})
	}
	// The server still serves.
	resp := roundTrip[*kmsg.ApiVersionsResponse](t, b.client(), kmsg.NewPtrApiVersionsRequest())
	assert.Zero(t, resp.ErrorCode)
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	c := b.raw()
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(1)
	for i := range int32(20) {
		if i%2 == 0 {
			c.send(apiVersionsKey, 0, i, false, nil)
		} else {
			c.send(3, 1, i, false, meta.AppendTo(nil))
		}
	}
	for i := range int32(20) {
		corr, _, err := c.recv()
		require.NoError(t, err)
		assert.Equal(t, i, corr)
	}
}

func TestMetadataCreatesTopicsOnFirstUseWithStableIDs(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{DefaultPartitions: 3})
	cl := b.client()
	req := kmsg.NewPtrMetadataRequest()
	name := "orders"
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &name
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	req.AllowAutoTopicCreation = true
	resp := roundTrip[*kmsg.MetadataResponse](t, cl, req)
	require.Len(t, resp.Topics, 1)
	mt := resp.Topics[0]
	require.Zero(t, mt.ErrorCode)
	assert.Len(t, mt.Partitions, 3)
	assert.NotEqual(t, uuid{}, mt.TopicID)
	require.NotNil(t, resp.ClusterID)
	require.Len(t, resp.Brokers, 1)
	assert.Equal(t, b.addr, net.JoinHostPort(resp.Brokers[0].Host, strconv.Itoa(int(resp.Brokers[0].Port))))
	cluster := *resp.ClusterID

	// Refused without auto-creation; an invalid name is its own error.
	bad := "no/such"
	other := "other"
	rt.Topic = &other
	rt2 := kmsg.NewMetadataRequestTopic()
	rt2.Topic = &bad
	req.Topics = []kmsg.MetadataRequestTopic{rt, rt2}
	req.AllowAutoTopicCreation = false
	resp = roundTrip[*kmsg.MetadataResponse](t, cl, req)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, resp.Topics[0].ErrorCode)
	assert.Equal(t, kerr.InvalidTopicException.Code, resp.Topics[1].ErrorCode)

	// After a restart: the same cluster id and topic id, also by id.
	b = b.restart()
	byID := kmsg.NewMetadataRequestTopic()
	byID.TopicID = mt.TopicID
	req = kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{byID}
	resp = roundTrip[*kmsg.MetadataResponse](t, b.client(), req)
	assert.Equal(t, cluster, *resp.ClusterID)
	require.Len(t, resp.Topics, 1)
	require.NotNil(t, resp.Topics[0].Topic)
	assert.Equal(t, "orders", *resp.Topics[0].Topic)
	assert.Equal(t, mt.TopicID, resp.Topics[0].TopicID)
}

func createTopic(t *testing.T, b *testBroker, name string, partitions int32, configs map[string]string) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, -1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, &v
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	resp := roundTrip[*kmsg.CreateTopicsResponse](t, b.client(), req)
	require.Len(t, resp.Topics, 1)
	return resp.Topics[0]
}

func TestCreateTopicsMapsConfigsAndRefusesWhatItCannot(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	got := createTopic(t, b, "events", 4, map[string]string{"retention.ms": "3600000", "flush.messages": "1", "segment.bytes": "1048576"})
	require.Zero(t, got.ErrorCode, "%v", got.ErrorMessage)
	assert.Equal(t, int32(4), got.NumPartitions)
	cfg, err := b.store.TopicConfig("events")
	require.NoError(t, err)
	assert.Equal(t, storage.TopicConfig{RetentionAge: 3600e9, Sync: "always", SyncEveryRecords: 1, SegmentBytes: 1 << 20}, cfg)

	tests := []struct {
		name    string
		topic   string
		configs map[string]string
		want    int16
	}{
		{"exists", "events", nil, kerr.TopicAlreadyExists.Code},
		{"invalid name", "a b", nil, kerr.InvalidTopicException.Code},
		{"unknown config", "x1", map[string]string{"no.such": "1"}, kerr.InvalidConfig.Code},
		{"compaction", "x2", map[string]string{"cleanup.policy": "compact"}, kerr.InvalidConfig.Code},
		{"bad number", "x3", map[string]string{"retention.ms": "soon"}, kerr.InvalidConfig.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, createTopic(t, b, tt.topic, 1, tt.configs).ErrorCode)
		})
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "replicated", 1, 3
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	resp := roundTrip[*kmsg.CreateTopicsResponse](t, b.client(), req)
	assert.Equal(t, kerr.InvalidReplicationFactor.Code, resp.Topics[0].ErrorCode)

	// DescribeConfigs reads them back in Kafka's names.
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = resourceTopic, "events"
	dreq.Resources = []kmsg.DescribeConfigsRequestResource{res}
	dresp := roundTrip[*kmsg.DescribeConfigsResponse](t, b.client(), dreq)
	require.Len(t, dresp.Resources, 1)
	vals := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		vals[c.Name] = *c.Value
	}
	assert.Equal(t, "3600000", vals["retention.ms"])
	assert.Equal(t, "1", vals["flush.messages"])
	assert.Equal(t, "always", vals["seglog.sync"])
}

func TestDeleteTopicsByNameAndID(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{NoAutoCreateTopics: true})
	a := createTopic(t, b, "a", 1, nil)
	createTopic(t, b, "b", 2, nil)
	require.NoError(t, b.offsets.Commit("g", "a", 0, 5, ""))

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = a.TopicID
	name := "b"
	byName := kmsg.NewDeleteTopicsRequestTopic()
	byName.Topic = &name
	unknown := kmsg.NewDeleteTopicsRequestTopic()
	unknown.TopicID = uuid{1, 2, 3}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{byID, byName, unknown}
	resp := roundTrip[*kmsg.DeleteTopicsResponse](t, b.client(), req)
	require.Len(t, resp.Topics, 3)
	assert.Zero(t, resp.Topics[0].ErrorCode)
	assert.Zero(t, resp.Topics[1].ErrorCode)
	assert.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[2].ErrorCode)
	assert.Empty(t, b.store.Topics())
	assert.Empty(t, b.offsets.Positions("g"), "commits on a deleted topic are dropped")

	// A topic created again under the name gets a new id.
	again := createTopic(t, b, "a", 1, nil)
	require.Zero(t, again.ErrorCode)
	assert.NotEqual(t, a.TopicID, again.TopicID)
}

func TestListOffsetsOnAnEmptyLog(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	createTopic(t, b, "empty", 1, nil)
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "empty"
	for _, ts := range []int64{listEarliest, listLatest, 1000} {
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Timestamp = ts
		rt.Partitions = append(rt.Partitions, p)
	}
	bad := kmsg.NewListOffsetsRequestTopicPartition()
	bad.Partition = 5
	bad.Timestamp = listLatest
	rt.Partitions = append(rt.Partitions, bad)
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	resp := roundTrip[*kmsg.ListOffsetsResponse](t, b.client(), req)
	ps := resp.Topics[0].Partitions
	require.Len(t, ps, 4)
	assert.Equal(t, int64(0), ps[0].Offset)
	assert.Equal(t, int64(0), ps[1].Offset)
	assert.Equal(t, int64(-1), ps[2].Offset, "no record at or after the time")
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, ps[3].ErrorCode)
}

func TestInitProducerIDHandsOutNewIDsAcrossRestartsAndRefusesTransactions(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	ids := map[int64]bool{}
	for range 3 {
		resp := roundTrip[*kmsg.InitProducerIDResponse](t, b.client(), kmsg.NewPtrInitProducerIDRequest())
		require.Zero(t, resp.ErrorCode)
		assert.Zero(t, resp.ProducerEpoch)
		assert.False(t, ids[resp.ProducerID])
		ids[resp.ProducerID] = true
	}
	b = b.restart()
	resp := roundTrip[*kmsg.InitProducerIDResponse](t, b.client(), kmsg.NewPtrInitProducerIDRequest())
	assert.False(t, ids[resp.ProducerID], "an id handed out before the restart")

	bump := kmsg.NewPtrInitProducerIDRequest()
	bump.SetVersion(3)
	bump.ProducerID, bump.ProducerEpoch = resp.ProducerID, 0
	bumped := roundTrip[*kmsg.InitProducerIDResponse](t, b.client(), bump)
	assert.Equal(t, resp.ProducerID, bumped.ProducerID)
	assert.Equal(t, int16(1), bumped.ProducerEpoch)

	txn := kmsg.NewPtrInitProducerIDRequest()
	id := "txn"
	txn.TransactionalID = &id
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, roundTrip[*kmsg.InitProducerIDResponse](t, b.client(), txn).ErrorCode)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys, fc.CoordinatorType = "txn", []string{"txn"}, 1
	fcResp := roundTrip[*kmsg.FindCoordinatorResponse](t, b.client(), fc)
	require.Len(t, fcResp.Coordinators, 1, "kgo sends the batched version")
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, fcResp.Coordinators[0].ErrorCode)
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	require.NoError(t, err)
	defer store.Close()
	offs, err := offsets.Open(offsets.Dir(dir), offsets.Options{})
	require.NoError(t, err)
	defer offs.Close()
	require.NoError(t, store.CreateTopic("t", 1, storage.TopicConfig{}))
	srv, err := New(store, offs, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	// A long poll and a waiting JoinGroup in flight, an idle connection.
	id, err := srv.meta.topicID("t")
	require.NoError(t, err)
	b := &testBroker{t: t, addr: ln.Addr().String()}
	poll, joiner, idle := b.raw(), b.raw(), b.raw()
	req := fetchReq(id, "t", 0, 0, time.Hour, 1<<20)
	req.SetVersion(12)
	poll.send(1, 12, 1, true, req.AppendTo(nil))
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.SetVersion(3)
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	joiner.send(11, 3, 1, false, jg.AppendTo(nil))
	idle.send(apiVersionsKey, 0, 1, false, nil)
	_, _, err = idle.recv()
	require.NoError(t, err)
	require.Eventually(t, func() bool { return srv.longPolls.Load() == 1 }, 10*time.Second, time.Millisecond)

	require.NoError(t, srv.Close())
	require.ErrorIs(t, <-served, ErrServerClosed)
	for _, c := range []*rawConn{poll, joiner, idle} {
		c.nc.Close()
	}
}

func TestIdleConnectionIsClosed(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{IdleTimeout: 100 * time.Millisecond})
	c := b.raw()
	c.send(apiVersionsKey, 0, 1, false, nil)
	_, _, err := c.recv()
	require.NoError(t, err)
	closedByServer(t, c) // nothing more sent: closed after the idle timeout
}
