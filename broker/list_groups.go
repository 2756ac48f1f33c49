package broker

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups: the groups the coordinator holds and those the offsets
// store has commits of (Empty, "consumer"), filtered by state (v4+,
// case-insensitive as in Kafka) and type (v5+: only "classic" groups
// exist here).

func handleListGroups(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.ListGroupsRequest)
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	s := c.s
	seen := map[string]bool{}
	add := func(name, state, protocolType string) {
		if seen[name] {
			return
		}
		seen[name] = true
		if len(r.StatesFilter) > 0 && !slices.ContainsFunc(r.StatesFilter, func(f string) bool { return strings.EqualFold(f, state) }) {
			return
		}
		if len(r.TypesFilter) > 0 && !slices.ContainsFunc(r.TypesFilter, func(f string) bool { return strings.EqualFold(f, "classic") }) {
			return
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = name, protocolType, state, "classic"
		resp.Groups = append(resp.Groups, lg)
	}
	for _, gi := range s.groups.list() {
		add(gi.name, gi.state, gi.protocolType)
	}
	for _, name := range s.offsets.Groups() {
		add(name, groupEmpty.String(), "consumer")
	}
	return reply{msg: resp}, nil
}
