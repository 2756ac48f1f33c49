package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group coordinator: Kafka's classic group protocol (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup) over groups kept in memory. Committed
// offsets are not here: they go to the offsets store (offset_commit.go),
// so they survive a restart, while membership starts over (clients rejoin
// on UNKNOWN_MEMBER_ID, as after a coordinator move in Kafka).
//
// A group's state machine:
//
//	           join                     every member joined, or the
//	Empty ─────────────► Preparing ───  rebalance timeout passed (those
//	  ▲                  Rebalance   │  that did not are removed):
//	  │                    ▲  ▲      │  generation+1, a protocol, a leader;
//	  │ last member        │  │      ▼  JoinGroup answered to every member
//	  │ leaves or expires  │  │   Completing ── leader's SyncGroup ──► Stable
//	  │                    │  │   Rebalance      (assignments stored,   │
//	  └────────────────────┤  └──────┘           every SyncGroup        │
//	                       │  a member joins,    answered)              │
//	                       │  leaves or expires                         │
//	                       └────────────────────────────────────────────┘
//	                          a member joins (new, or with new protocols,
//	                          or the leader), leaves or expires
//
// Preparing: JoinGroups wait; heartbeats and SyncGroups answer
// REBALANCE_IN_PROGRESS, so that members rejoin; waiting SyncGroups of
// the generation before are answered REBALANCE_IN_PROGRESS too.
// Completing: SyncGroups of non-leaders wait for the leader's, which
// carries the assignment that the client-side assignor (range,
// roundrobin, cooperative-sticky: the broker never looks inside)
// computed; heartbeats answer NONE. Stable: SyncGroup answers the
// member's assignment at once; a non-leader rejoining with unchanged
// protocols is answered the current generation without a rebalance.
//
// Members: from JoinGroup v4 a member without an id is given one and
// answered MEMBER_ID_REQUIRED, and must join again with it (it is
// forgotten after its session timeout if it does not). Every request of a
// member restarts its session timer; a member whose session times out
// (JoinGroup or SyncGroup not waiting) is removed. Static membership
// (instance ids) is not kept: such members are treated as dynamic.
// Generation and member checks: an unknown member is UNKNOWN_MEMBER_ID,
// another generation ILLEGAL_GENERATION.

type groupState int

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
)

var groupStateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable"}

func (s groupState) String() string { return groupStateNames[s] }

type joinResult struct {
	code       int16
	generation int32
	protocol   string
	leader     string
	members    []kmsg.JoinGroupResponseMember // the leader's only
}

type syncResult struct {
	code       int16
	assignment []byte
}

type member struct {
	id, clientID, host string
	sessionTimeout     time.Duration
	rebalanceTimeout   time.Duration
	protocols          []kmsg.JoinGroupRequestProtocol
	assignment         []byte
	join               chan joinResult // while its JoinGroup waits
	sync               chan syncResult // while its SyncGroup waits
	timer              *time.Timer     // session expiry
}

type group struct {
	name         string
	state        groupState
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	order        []string             // member ids, in joining order
	pending      map[string]time.Time // ids given with MEMBER_ID_REQUIRED: until when
	rebalance    *time.Timer          // the join phase's end
	delayed      bool                 // the initial delay holds the join phase open
}

// coordinator holds every group.
type coordinator struct {
	s *Server
	// mu guards everything below and every group and member.
	mu     sync.Mutex
	groups map[string]*group
	closed bool
}

func newCoordinator(s *Server) *coordinator {
	return &coordinator{s: s, groups: map[string]*group{}}
}

// close stops every timer; timers that fire meanwhile find closed set.
func (c *coordinator) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, g := range c.groups {
		if g.rebalance != nil {
			g.rebalance.Stop()
		}
		for _, m := range g.members {
			m.timer.Stop()
		}
	}
}

func newMemberID(clientID string) string {
	var b [16]byte
	rand.Read(b[:])
	return clientID + "-" + hex.EncodeToString(b[:])
}

// touch restarts a member's session timer.
func (c *coordinator) touch(g *group, m *member) {
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timer = time.AfterFunc(m.sessionTimeout, func() { c.expire(g, m) })
}

func (c *coordinator) expire(g *group, m *member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || g.members[m.id] != m || m.join != nil || m.sync != nil {
		return
	}
	c.s.log.Info("group member's session expired", "group", g.name, "member", m.id, "timeout", m.sessionTimeout)
	c.removeLocked(g, m)
}

// removeLocked takes a member out and rebalances what is left.
func (c *coordinator) removeLocked(g *group, m *member) {
	m.timer.Stop()
	delete(g.members, m.id)
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == m.id })
	if m.join != nil {
		m.join <- joinResult{code: kerr.UnknownMemberID.Code}
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- syncResult{code: kerr.UnknownMemberID.Code}
		m.sync = nil
	}
	if g.state == groupStable || g.state == groupCompletingRebalance {
		c.prepareLocked(g)
	}
	c.tryCompleteJoinLocked(g)
}

// prepareLocked enters PreparingRebalance.
func (c *coordinator) prepareLocked(g *group) {
	wasEmpty := g.state == groupEmpty
	g.state = groupPreparingRebalance
	for _, m := range g.members {
		if m.sync != nil {
			m.sync <- syncResult{code: kerr.RebalanceInProgress.Code}
			m.sync = nil
		}
	}
	timeout := time.Duration(0)
	for _, m := range g.members {
		timeout = max(timeout, m.rebalanceTimeout)
	}
	if wasEmpty && c.s.opts.InitialRebalanceDelay > 0 {
		timeout, g.delayed = c.s.opts.InitialRebalanceDelay, true
	}
	if g.rebalance != nil {
		g.rebalance.Stop()
	}
	gen := g.generation
	g.rebalance = time.AfterFunc(timeout, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || g.state != groupPreparingRebalance || g.generation != gen {
			return
		}
		g.delayed = false
		for _, id := range slices.Clone(g.order) {
			if m := g.members[id]; m.join == nil {
				c.s.log.Info("group member did not rejoin in time", "group", g.name, "member", id)
				m.timer.Stop()
				delete(g.members, id)
				g.order = slices.DeleteFunc(g.order, func(x string) bool { return x == id })
				if m.sync != nil {
					m.sync <- syncResult{code: kerr.UnknownMemberID.Code}
					m.sync = nil
				}
			}
		}
		c.completeJoinLocked(g)
	})
}

// tryCompleteJoinLocked ends the join phase once every member joined.
func (c *coordinator) tryCompleteJoinLocked(g *group) {
	if g.state != groupPreparingRebalance || g.delayed {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	c.completeJoinLocked(g)
}

// completeJoinLocked starts the next generation and answers every
// waiting JoinGroup.
func (c *coordinator) completeJoinLocked(g *group) {
	if g.rebalance != nil {
		g.rebalance.Stop()
		g.rebalance = nil
	}
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = groupEmpty, "", ""
		return
	}
	g.protocol = chooseProtocol(g)
	if g.members[g.leader] == nil {
		g.leader = g.order[0]
	}
	g.state = groupCompletingRebalance
	var all []kmsg.JoinGroupResponseMember
	for _, id := range g.order {
		m := g.members[id]
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = id
		for _, p := range m.protocols {
			if p.Name == g.protocol {
				jm.ProtocolMetadata = p.Metadata
			}
		}
		all = append(all, jm)
	}
	for _, m := range g.members {
		res := joinResult{generation: g.generation, protocol: g.protocol, leader: g.leader}
		if m.id == g.leader {
			res.members = all
		}
		m.join <- res
		m.join = nil
		c.touch(g, m)
	}
}

// chooseProtocol picks the protocol every member supports that most
// members prefer (the first such in joining order on a tie).
func chooseProtocol(g *group) string {
	supported := func(name string) bool {
		for _, m := range g.members {
			if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == name }) {
				return false
			}
		}
		return true
	}
	votes := map[string]int{}
	best, bestVotes := "", 0
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if supported(p.Name) {
				votes[p.Name]++
				if votes[p.Name] > bestVotes {
					best, bestVotes = p.Name, votes[p.Name]
				}
				break
			}
		}
	}
	return best
}

// sameProtocols reports whether a rejoin changes nothing.
func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(a, b, func(x, y kmsg.JoinGroupRequestProtocol) bool {
		return x.Name == y.Name && string(x.Metadata) == string(y.Metadata)
	})
}

func handleJoinGroup(ctx context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.JoinGroupRequest)
	resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
	co := c.s.groups
	fail := func(code int16) (reply, error) {
		resp.ErrorCode, resp.Generation = code, -1
		return reply{msg: resp}, nil
	}
	session := time.Duration(r.SessionTimeoutMillis) * time.Millisecond
	rebalance := session
	if r.Version >= 1 {
		rebalance = time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond
	}
	switch {
	case r.Group == "":
		return fail(kerr.InvalidGroupID.Code)
	case session < c.s.opts.MinSessionTimeout || session > c.s.opts.MaxSessionTimeout:
		return fail(kerr.InvalidSessionTimeout.Code)
	case r.ProtocolType == "" || len(r.Protocols) == 0:
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	co.mu.Lock()
	g := co.groups[r.Group]
	if g == nil {
		g = &group{name: r.Group, members: map[string]*member{}, pending: map[string]time.Time{}}
		co.groups[r.Group] = g
	}
	if len(g.members) > 0 && g.protocolType != r.ProtocolType {
		co.mu.Unlock()
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	now := c.s.opts.Now()
	for id, until := range g.pending {
		if now.After(until) {
			delete(g.pending, id)
		}
	}
	m := g.members[r.MemberID]
	switch {
	case r.MemberID == "" && r.Version >= 4:
		id := newMemberID(req.clientID)
		g.pending[id] = now.Add(session)
		co.mu.Unlock()
		resp.MemberID = id
		return fail(kerr.MemberIDRequired.Code)
	case r.MemberID == "":
		r.MemberID = newMemberID(req.clientID)
	case m == nil && g.pending[r.MemberID].IsZero():
		co.mu.Unlock()
		return fail(kerr.UnknownMemberID.Code)
	}
	delete(g.pending, r.MemberID)
	if m == nil {
		m = &member{id: r.MemberID}
		g.members[m.id] = m
		g.order = append(g.order, m.id)
		if len(g.members) == 1 {
			g.protocolType = r.ProtocolType
		}
	} else if m.join != nil {
		// A second JoinGroup of the member replaces the first.
		m.join <- joinResult{code: kerr.RebalanceInProgress.Code}
	}
	unchanged := sameProtocols(m.protocols, r.Protocols)
	m.clientID, m.host = req.clientID, c.nc.RemoteAddr().String()
	m.sessionTimeout, m.rebalanceTimeout, m.protocols = session, rebalance, r.Protocols
	co.touch(g, m)
	if unchanged && (g.state == groupStable && m.id != g.leader || g.state == groupCompletingRebalance) {
		// Nothing changed for the group: the current generation.
		res := joinResult{generation: g.generation, protocol: g.protocol, leader: g.leader}
		if m.id == g.leader {
			for _, id := range g.order {
				jm := kmsg.NewJoinGroupResponseMember()
				jm.MemberID = id
				for _, p := range g.members[id].protocols {
					if p.Name == g.protocol {
						jm.ProtocolMetadata = p.Metadata
					}
				}
				res.members = append(res.members, jm)
			}
		}
		co.mu.Unlock()
		return joinReply(resp, m.id, g.protocolType, res)
	}
	ch := make(chan joinResult, 1)
	m.join = ch
	if g.state != groupPreparingRebalance {
		co.prepareLocked(g)
	}
	co.tryCompleteJoinLocked(g)
	protocolType := g.protocolType
	co.mu.Unlock()
	select {
	case res := <-ch:
		return joinReply(resp, m.id, protocolType, res)
	case <-ctx.Done():
		return fail(kerr.NotCoordinator.Code) // shutting down: find the coordinator again
	}
}

func joinReply(resp *kmsg.JoinGroupResponse, memberID, protocolType string, res joinResult) (reply, error) {
	resp.ErrorCode, resp.Generation, resp.MemberID, resp.LeaderID = res.code, res.generation, memberID, res.leader
	if res.code != 0 {
		resp.Generation = -1
		return reply{msg: resp}, nil
	}
	resp.Protocol, resp.ProtocolType = &res.protocol, &protocolType
	resp.Members = res.members
	return reply{msg: resp}, nil
}

// memberLocked finds a member of the generation, or the error code.
func (co *coordinator) memberLocked(groupName, memberID string, generation int32) (*group, *member, int16) {
	g := co.groups[groupName]
	if g == nil || g.members[memberID] == nil {
		return g, nil, kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return g, g.members[memberID], kerr.IllegalGeneration.Code
	}
	return g, g.members[memberID], 0
}

func handleSyncGroup(ctx context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.SyncGroupRequest)
	resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
	co := c.s.groups
	co.mu.Lock()
	g, m, code := co.memberLocked(r.Group, r.MemberID, r.Generation)
	if code == 0 && (r.ProtocolType != nil && *r.ProtocolType != g.protocolType || r.Protocol != nil && *r.Protocol != g.protocol) {
		code = kerr.InconsistentGroupProtocol.Code
	}
	if code != 0 {
		co.mu.Unlock()
		resp.ErrorCode = code
		return reply{msg: resp}, nil
	}
	co.touch(g, m)
	resp.ProtocolType, resp.Protocol = &g.protocolType, &g.protocol
	switch g.state {
	case groupPreparingRebalance:
		co.mu.Unlock()
		resp.ErrorCode = kerr.RebalanceInProgress.Code
		return reply{msg: resp}, nil
	case groupStable:
		resp.MemberAssignment = m.assignment
		co.mu.Unlock()
		return reply{msg: resp}, nil
	}
	ch := make(chan syncResult, 1)
	if m.sync != nil {
		m.sync <- syncResult{code: kerr.RebalanceInProgress.Code}
	}
	m.sync = ch
	if m.id == g.leader {
		given := map[string][]byte{}
		for _, a := range r.GroupAssignment {
			given[a.MemberID] = a.MemberAssignment
		}
		for _, gm := range g.members {
			gm.assignment = given[gm.id]
			if gm.sync != nil {
				gm.sync <- syncResult{assignment: gm.assignment}
				gm.sync = nil
			}
		}
		g.state = groupStable
		c.s.log.Debug("group stable", "group", g.name, "generation", g.generation, "members", len(g.members), "protocol", g.protocol)
	}
	co.mu.Unlock()
	select {
	case res := <-ch:
		resp.ErrorCode, resp.MemberAssignment = res.code, res.assignment
		return reply{msg: resp}, nil
	case <-ctx.Done():
		resp.ErrorCode = kerr.NotCoordinator.Code
		return reply{msg: resp}, nil
	}
}

func handleHeartbeat(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.HeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
	co := c.s.groups
	co.mu.Lock()
	defer co.mu.Unlock()
	g, m, code := co.memberLocked(r.Group, r.MemberID, r.Generation)
	if m != nil {
		co.touch(g, m)
	}
	if code == 0 && g.state == groupPreparingRebalance {
		code = kerr.RebalanceInProgress.Code
	}
	resp.ErrorCode = code
	return reply{msg: resp}, nil
}

func handleLeaveGroup(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.LeaveGroupRequest)
	resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
	co := c.s.groups
	co.mu.Lock()
	defer co.mu.Unlock()
	leave := func(id string) int16 {
		g := co.groups[r.Group]
		if g == nil || g.members[id] == nil {
			return kerr.UnknownMemberID.Code
		}
		c.s.log.Debug("group member left", "group", r.Group, "member", id)
		co.removeLocked(g, g.members[id])
		return 0
	}
	if r.Version < 3 {
		resp.ErrorCode = leave(r.MemberID)
		return reply{msg: resp}, nil
	}
	for _, rm := range r.Members {
		lm := kmsg.NewLeaveGroupResponseMember()
		lm.MemberID, lm.InstanceID = rm.MemberID, rm.InstanceID
		lm.ErrorCode = leave(rm.MemberID)
		resp.Members = append(resp.Members, lm)
	}
	return reply{msg: resp}, nil
}

// commitCheck says whether a member may commit offsets for a group (0),
// or why not. A commit outside group management (generation -1, no
// member id) is allowed while the group has no members.
func (co *coordinator) commitCheck(groupName, memberID string, generation int32) int16 {
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[groupName]
	if generation < 0 && memberID == "" && (g == nil || len(g.members) == 0) {
		return 0
	}
	g, m, code := co.memberLocked(groupName, memberID, generation)
	if code != 0 {
		return code
	}
	co.touch(g, m)
	if g.state == groupCompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// groupInfo is a snapshot of a group for DescribeGroups and ListGroups.
type groupInfo struct {
	name, state, protocolType, protocol string
	members                             []kmsg.DescribeGroupsResponseGroupMember
}

func (co *coordinator) describe(name string) (groupInfo, bool) {
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[name]
	if g == nil {
		return groupInfo{}, false
	}
	gi := groupInfo{name: name, state: g.state.String(), protocolType: g.protocolType}
	if g.state == groupStable {
		gi.protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, m.host
		for _, p := range m.protocols {
			if p.Name == g.protocol {
				dm.ProtocolMetadata = p.Metadata
			}
		}
		if g.state == groupStable {
			dm.MemberAssignment = m.assignment
		}
		gi.members = append(gi.members, dm)
	}
	return gi, true
}

func (co *coordinator) list() []groupInfo {
	co.mu.Lock()
	names := make([]string, 0, len(co.groups))
	for n := range co.groups {
		names = append(names, n)
	}
	co.mu.Unlock()
	var out []groupInfo
	for _, n := range names {
		if gi, ok := co.describe(n); ok {
			out = append(out, gi)
		}
	}
	return out
}
