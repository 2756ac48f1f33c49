package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup: a member joins its group, or a member of it rejoins. The
// request is checked (group id, session timeout within the server's
// bounds, protocols given), the member admitted (from v4 one without an
// id is given one and answered MEMBER_ID_REQUIRED) and the answer waits
// for the join phase to end, when the coordinator answers every member
// of the new generation at once; a rejoin that changes nothing is
// answered the current generation at once. The state machine is in
// groups.go.

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
		res := g.joinResultLocked(m)
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
