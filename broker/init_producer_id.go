package broker

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId for idempotent producers: a producer id never handed out
// before by this data directory (cluster.go keeps them in durable blocks)
// at epoch 0. A producer that names its current id and epoch (v3+, after
// a fatal sequence error) gets the same id at the next epoch, which
// starts its sequences again at 0 in every partition's producer state;
// at the last epoch it gets a new id. A transactional id is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED: transactions are not served.

func handleInitProducerID(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	s := c.s
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return reply{msg: resp}, nil
	}
	if r.ProducerID >= 0 && r.ProducerEpoch >= 0 && r.ProducerEpoch < math.MaxInt16 {
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch+1
		return reply{msg: resp}, nil
	}
	id, err := s.meta.newProducerID()
	if err != nil {
		resp.ErrorCode = s.codeFor("init producer id", err)
		return reply{msg: resp}, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return reply{msg: resp}, nil
}
