package broker

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// owned tracks the partitions a group consumer holds, from kgo's
// callbacks (incremental for cooperative balancers, whole for eager
// ones: revoke-all then assign).
type owned struct {
	mu sync.Mutex
	ps map[int32]bool
}

func (o *owned) opts() []kgo.Opt {
	o.ps = map[int32]bool{}
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, p := range m["t"] {
				o.ps[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, p := range m["t"] {
				delete(o.ps, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, p := range m["t"] {
				delete(o.ps, p)
			}
		}),
	}
}

func (o *owned) get() []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Sorted(maps.Keys(o.ps))
}

func groupConsumer(b *testBroker, balancer kgo.GroupBalancer, o *owned) *kgo.Client {
	opts := append(o.opts(),
		kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.Balancers(balancer),
		kgo.SessionTimeout(2*time.Second), kgo.HeartbeatInterval(50*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond))
	return b.client(opts...)
}

func TestTwoConsumersOfAGroupSplitThePartitions(t *testing.T) {
	for _, tt := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"roundrobin", kgo.RoundRobinBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := startBroker(t, t.TempDir(), Options{})
			require.Zero(t, createTopic(t, b, "t", 4, nil).ErrorCode)
			var o1, o2 owned
			c1 := groupConsumer(b, tt.balancer, &o1)
			all := []int32{0, 1, 2, 3}
			require.Eventually(t, func() bool { return slices.Equal(o1.get(), all) }, 20*time.Second, 10*time.Millisecond)

			c2 := groupConsumer(b, tt.balancer, &o2)
			require.Eventually(t, func() bool {
				a, b := o1.get(), o2.get()
				return len(a) == 2 && len(b) == 2 && slices.Equal(slices.Sorted(slices.Values(append(a, b...))), all)
			}, 20*time.Second, 10*time.Millisecond, "disjoint halves")

			// Each commits for its own partitions.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i, c := range []*kgo.Client{c1, c2} {
				offs := map[int32]kgo.EpochOffset{}
				for _, p := range []*owned{&o1, &o2}[i].get() {
					offs[p] = kgo.EpochOffset{Epoch: -1, Offset: int64(10 + p)}
				}
				var commitErr error
				c.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"t": offs}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
					commitErr = err
					for _, t := range resp.Topics {
						for _, p := range t.Partitions {
							if commitErr == nil {
								commitErr = kerr.ErrorForCode(p.ErrorCode)
							}
						}
					}
				})
				require.NoError(t, commitErr)
			}

			// One leaves: the other takes everything over.
			c2.Close()
			require.Eventually(t, func() bool { return slices.Equal(o1.get(), all) }, 20*time.Second, 10*time.Millisecond)
			c1.Close()

			// The commits survive a restart of the broker.
			b = b.restart()
			req := kmsg.NewPtrOffsetFetchRequest()
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = "g"
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = "t", all
			rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{rt}
			req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
			resp := roundTrip[*kmsg.OffsetFetchResponse](t, b.client(), req)
			require.Len(t, resp.Groups, 1, "kgo sends the batched version")
			require.Len(t, resp.Groups[0].Topics, 1)
			got := map[int32]int64{}
			for _, p := range resp.Groups[0].Topics[0].Partitions {
				got[p.Partition] = p.Offset
			}
			assert.Equal(t, map[int32]int64{0: 10, 1: 11, 2: 12, 3: 13}, got)
		})
	}
}

// join sends a JoinGroup for member (empty: a new one).
func join(t *testing.T, cl *kgo.Client, memberID string, session time.Duration) *kmsg.JoinGroupResponse {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = "raw", memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(session.Milliseconds()), 5000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{1}
	req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	return roundTrip[*kmsg.JoinGroupResponse](t, cl, req)
}

func TestGroupProtocolErrorsAndSessionExpiry(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	cl := b.client()

	first := join(t, cl, "", time.Second)
	require.Equal(t, kerr.MemberIDRequired.Code, first.ErrorCode)
	require.NotEmpty(t, first.MemberID)
	assert.Equal(t, kerr.UnknownMemberID.Code, join(t, cl, "stranger", time.Second).ErrorCode)
	assert.Equal(t, kerr.InvalidSessionTimeout.Code, join(t, cl, first.MemberID, time.Millisecond).ErrorCode)

	joined := join(t, cl, first.MemberID, 300*time.Millisecond)
	require.Zero(t, joined.ErrorCode)
	assert.Equal(t, int32(1), joined.Generation)
	assert.Equal(t, joined.MemberID, joined.LeaderID)
	require.Len(t, joined.Members, 1, "the leader gets the members")

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "raw", joined.MemberID, 0
	assert.Equal(t, kerr.IllegalGeneration.Code, roundTrip[*kmsg.HeartbeatResponse](t, cl, hb).ErrorCode)
	hb.Generation = 1
	assert.Zero(t, roundTrip[*kmsg.HeartbeatResponse](t, cl, hb).ErrorCode)

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "raw", joined.MemberID, 1
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = joined.MemberID, []byte("mine")
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{a}
	synced := roundTrip[*kmsg.SyncGroupResponse](t, cl, sync)
	require.Zero(t, synced.ErrorCode)
	assert.Equal(t, []byte("mine"), synced.MemberAssignment)

	// A commit outside the group's generation is refused.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation, commit.MemberID = "raw", -1, ""
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "none"
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition()}
	commit.Topics = []kmsg.OffsetCommitRequestTopic{ct}
	assert.Equal(t, kerr.UnknownMemberID.Code, roundTrip[*kmsg.OffsetCommitResponse](t, cl, commit).Topics[0].Partitions[0].ErrorCode)

	// No more heartbeats: the session expires and the group is empty.
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"raw", "never"}
	require.Eventually(t, func() bool {
		resp := roundTrip[*kmsg.DescribeGroupsResponse](t, cl, describe)
		return resp.Groups[0].State == "Empty" && len(resp.Groups[0].Members) == 0
	}, 10*time.Second, 20*time.Millisecond)
	resp := roundTrip[*kmsg.DescribeGroupsResponse](t, cl, describe)
	assert.Equal(t, "Dead", resp.Groups[1].State)
	assert.Equal(t, kerr.UnknownMemberID.Code, roundTrip[*kmsg.HeartbeatResponse](t, cl, hb).ErrorCode)

	// The empty group takes commits without a generation; ListGroups has it.
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, roundTrip[*kmsg.OffsetCommitResponse](t, cl, commit).Topics[0].Partitions[0].ErrorCode)
	list := roundTrip[*kmsg.ListGroupsResponse](t, cl, kmsg.NewPtrListGroupsRequest())
	var names []string
	for _, g := range list.Groups {
		names = append(names, g.Group)
	}
	assert.Contains(t, names, "raw")
}

func TestMemberWhoseSessionPassedWhileItsSyncGroupWaitedStillExpires(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	// One connection per member: a connection answers one request at a
	// time, and joins and syncs wait.
	leaderCl, followerCl := b.client(), b.client()
	const followerSession = 150 * time.Millisecond
	joinAs := func(cl *kgo.Client, memberID string, session time.Duration) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "slow", memberID, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(session.Milliseconds()), 10_000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		resp := roundTrip[*kmsg.JoinGroupResponse](t, cl, req)
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			req.MemberID = resp.MemberID
			resp = roundTrip[*kmsg.JoinGroupResponse](t, cl, req)
		}
		return resp
	}
	syncAs := func(cl *kgo.Client, memberID string, generation int32, assign ...string) *kmsg.SyncGroupResponse {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = "slow", memberID, generation
		for _, id := range assign {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = id, []byte(id)
			req.GroupAssignment = append(req.GroupAssignment, a)
		}
		return roundTrip[*kmsg.SyncGroupResponse](t, cl, req)
	}
	state := func() groupState {
		b.srv.groups.mu.Lock()
		defer b.srv.groups.mu.Unlock()
		return b.srv.groups.groups["slow"].state
	}

	leader := joinAs(leaderCl, "", 10*time.Second)
	require.Zero(t, leader.ErrorCode)
	followerJoined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { followerJoined <- joinAs(followerCl, "", followerSession) }()
	require.Eventually(t, func() bool { return state() == groupPreparingRebalance }, 10*time.Second, time.Millisecond)
	leader = joinAs(leaderCl, leader.MemberID, 10*time.Second)
	require.Zero(t, leader.ErrorCode)
	follower := <-followerJoined
	require.Zero(t, follower.ErrorCode)
	require.Equal(t, leader.Generation, follower.Generation)

	// The follower's SyncGroup waits for the leader's, longer than the
	// follower's session timeout.
	followerSynced := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { followerSynced <- syncAs(followerCl, follower.MemberID, follower.Generation) }()
	require.Eventually(t, func() bool {
		b.srv.groups.mu.Lock()
		defer b.srv.groups.mu.Unlock()
		return b.srv.groups.groups["slow"].members[follower.MemberID].sync != nil
	}, 10*time.Second, time.Millisecond)
	<-time.After(3 * followerSession)
	require.Zero(t, syncAs(leaderCl, leader.MemberID, leader.Generation, leader.MemberID, follower.MemberID).ErrorCode)
	got := <-followerSynced
	require.Zero(t, got.ErrorCode)
	require.Equal(t, []byte(follower.MemberID), got.MemberAssignment)

	// The follower sends nothing more: its session expires and its
	// partitions go back to the group, as Kafka restarts a member's
	// session when it hands it its assignment.
	require.Eventually(t, func() bool {
		b.srv.groups.mu.Lock()
		defer b.srv.groups.mu.Unlock()
		return b.srv.groups.groups["slow"].members[follower.MemberID] == nil
	}, 10*time.Second, 10*time.Millisecond, "a member that stopped heartbeating is kept in the group")
}
