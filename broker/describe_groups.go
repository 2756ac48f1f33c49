package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups: a group's state, protocol type, protocol (once Stable)
// and members with their metadata and assignments. A group the
// coordinator does not hold but the offsets store has commits of is
// Empty with protocol type "consumer"; any other is Dead, as Kafka
// answers.

func handleDescribeGroups(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.DescribeGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	s := c.s
	stored := s.offsets.Groups()
	for _, name := range r.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = name
		dg.AuthorizedOperations = -2147483648 // not asked for / not computed
		if gi, ok := s.groups.describe(name); ok {
			dg.State, dg.ProtocolType, dg.Protocol, dg.Members = gi.state, gi.protocolType, gi.protocol, gi.members
		} else if slices.Contains(stored, name) {
			dg.State, dg.ProtocolType = groupEmpty.String(), "consumer"
		} else {
			dg.State = "Dead"
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return reply{msg: resp}, nil
}
