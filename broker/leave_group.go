package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup: members leave their group (one member before v3, a list
// from v3, each answered on its own), and what is left rebalances.

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
