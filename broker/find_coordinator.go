package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: this broker coordinates every group. A transaction
// coordinator (key type 1) is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED: transactions are not served.

const coordinatorGroup = 0

func handleFindCoordinator(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	s := c.s
	host, port := s.advertised(c.nc.LocalAddr())
	answer := func(key string) (node int32, code int16) {
		if r.CoordinatorType != coordinatorGroup {
			return -1, kerr.TransactionalIDAuthorizationFailed.Code
		}
		if key == "" {
			return -1, kerr.InvalidRequest.Code // Kafka: INVALID_REQUEST for an empty group id
		}
		return s.meta.nodeID, 0
	}
	if r.Version < 4 {
		node, code := answer(r.CoordinatorKey)
		resp.ErrorCode, resp.NodeID = code, node
		if code == 0 {
			resp.Host, resp.Port = host, port
		}
		return reply{msg: resp}, nil
	}
	for _, key := range r.CoordinatorKeys {
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key = key
		co.NodeID, co.ErrorCode = answer(key)
		if co.ErrorCode == 0 {
			co.Host, co.Port = host, port
		}
		resp.Coordinators = append(resp.Coordinators, co)
	}
	return reply{msg: resp}, nil
}
