package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup: a member of the current generation asks for its
// assignment. While the group prepares a rebalance the answer is
// REBALANCE_IN_PROGRESS; once Stable, the member's assignment at once;
// while completing, the request waits for the leader's SyncGroup, whose
// assignments (computed by the client-side assignor, never looked into)
// make the group Stable and answer every waiting member. The state
// machine is in groups.go.

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
		co.stabilizeLocked(g, given)
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
