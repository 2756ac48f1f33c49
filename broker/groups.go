package broker

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group coordinator: the state machine of Kafka's classic group
// protocol over groups kept in memory, driven by the handlers of
// JoinGroup, SyncGroup, Heartbeat and LeaveGroup (each in its own file)
// and by session and rebalance timers. Committed
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
// member restarts its session timer, and so does the answer to a
// JoinGroup or SyncGroup that waited; a member whose session times out
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
			c.touch(g, m) // its session did not run while it waited
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
	for _, m := range g.members {
		m.join <- g.joinResultLocked(m)
		m.join = nil
		c.touch(g, m)
	}
}

// joinResultLocked is the current generation as a member's JoinGroup is
// answered it: the leader's carries every member's metadata for the
// chosen protocol, in joining order.
func (g *group) joinResultLocked(m *member) joinResult {
	res := joinResult{generation: g.generation, protocol: g.protocol, leader: g.leader}
	if m.id != g.leader {
		return res
	}
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
	return res
}

// stabilizeLocked stores the leader's assignments (a member the leader
// gave none gets an empty one), answers every waiting SyncGroup and
// makes the group Stable. Every member's session starts again then, as
// Kafka's does when it hands out the assignment: a member's session
// timer that fired while its SyncGroup waited did not remove it (expire),
// and a member that is answered and then sends nothing must still
// expire.
func (c *coordinator) stabilizeLocked(g *group, given map[string][]byte) {
	for _, m := range g.members {
		m.assignment = given[m.id]
		if m.sync != nil {
			m.sync <- syncResult{assignment: m.assignment}
			m.sync = nil
		}
		c.touch(g, m)
	}
	g.state = groupStable
	c.s.log.Debug("group stable", "group", g.name, "generation", g.generation, "members", len(g.members), "protocol", g.protocol)
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
