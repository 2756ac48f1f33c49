package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/offsets"
)

// OffsetFetch: a group's committed offsets from the offsets store (what
// is durable there), -1 for a partition without one; every position of
// the group when the request names no topics (v2+). From v8 a request
// names several groups.

func handleOffsetFetch(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.OffsetFetchRequest)
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	s := c.s
	if r.Version >= 8 {
		for _, rg := range r.Groups {
			og := kmsg.NewOffsetFetchResponseGroup()
			og.Group = rg.Group
			var asked []fetchTopic
			for _, t := range rg.Topics {
				asked = append(asked, fetchTopic{t.Topic, t.Partitions})
			}
			og.Topics, og.ErrorCode = s.fetchOffsets(rg.Group, asked, rg.Topics == nil)
			resp.Groups = append(resp.Groups, og)
		}
		return reply{msg: resp}, nil
	}
	var asked []fetchTopic
	for _, t := range r.Topics {
		asked = append(asked, fetchTopic{t.Topic, t.Partitions})
	}
	topics, code := s.fetchOffsets(r.Group, asked, r.Topics == nil && r.Version >= 2)
	resp.ErrorCode = code
	for _, t := range topics {
		ot := kmsg.NewOffsetFetchResponseTopic()
		ot.Topic = t.Topic
		for _, p := range t.Partitions {
			op := kmsg.NewOffsetFetchResponseTopicPartition()
			op.Partition, op.Offset, op.LeaderEpoch, op.Metadata, op.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return reply{msg: resp}, nil
}

type fetchTopic struct {
	topic      string
	partitions []int32
}

// fetchOffsets answers one group, in the v8 shape.
func (s *Server) fetchOffsets(group string, asked []fetchTopic, all bool) ([]kmsg.OffsetFetchResponseGroupTopic, int16) {
	if group == "" {
		return nil, kerr.InvalidGroupID.Code
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	if all {
		byTopic := map[string]int{}
		for _, pos := range s.offsets.Positions(group) {
			i, ok := byTopic[pos.Topic]
			if !ok {
				i = len(out)
				byTopic[pos.Topic] = i
				t := kmsg.NewOffsetFetchResponseGroupTopic()
				t.Topic = pos.Topic
				out = append(out, t)
			}
			p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = pos.Partition, pos.Offset, -1
			meta := pos.Metadata
			p.Metadata = &meta
			out[i].Partitions = append(out[i].Partitions, p)
		}
		return out, 0
	}
	for _, a := range asked {
		t := kmsg.NewOffsetFetchResponseGroupTopic()
		t.Topic = a.topic
		for _, part := range a.partitions {
			p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = part, -1, -1
			empty := ""
			p.Metadata = &empty
			pos, err := s.offsets.Fetch(group, a.topic, part)
			switch {
			case err == nil:
				p.Offset, p.Metadata = pos.Offset, &pos.Metadata
			case errors.Is(err, offsets.ErrNoCommit), errors.Is(err, offsets.ErrInvalid):
			default:
				p.ErrorCode = s.codeFor("offset fetch", err)
			}
			t.Partitions = append(t.Partitions, p)
		}
		out = append(out, t)
	}
	return out, 0
}
