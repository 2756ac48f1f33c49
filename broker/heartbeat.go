package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat: a member of the current generation says it is alive,
// which restarts its session timer; during PreparingRebalance the answer
// is REBALANCE_IN_PROGRESS so that it rejoins.

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
