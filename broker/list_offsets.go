package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets: timestamp -2 is the log start offset, -1 the log end
// offset (the high watermark), and a timestamp t >= 0 the first offset
// whose record's timestamp is at or after t, found through the time
// indexes (Log.OffsetForTime), answered with that record's timestamp; -1
// and -1 when no record is that new, as Kafka answers. Other negative
// timestamps (-3, the record with the largest timestamp, comes only in
// versions not served) are INVALID_REQUEST.

const (
	listLatest   = -1
	listEarliest = -2
)

func handleListOffsets(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	s := c.s
	for _, rt := range r.Topics {
		out := kmsg.NewListOffsetsResponseTopic()
		out.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewListOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			p.Timestamp, p.Offset, p.LeaderEpoch = -1, -1, 0
			l, err := s.store.Log(rt.Topic, rp.Partition)
			switch {
			case err != nil:
				p.ErrorCode = s.codeFor("list offsets", err)
			case rp.Timestamp == listEarliest:
				p.Offset = l.StartOffset()
			case rp.Timestamp == listLatest:
				p.Offset = l.EndOffset()
			case rp.Timestamp < 0:
				p.ErrorCode = kerr.InvalidRequest.Code
			default:
				off, err := l.OffsetForTime(rp.Timestamp)
				if err != nil {
					p.ErrorCode = s.codeFor("list offsets", err)
					break
				}
				if off >= l.EndOffset() {
					break // no record that new: -1, -1
				}
				rec, _, err := l.ReadRecord(nil, off)
				if err != nil {
					p.ErrorCode = s.codeFor("list offsets", err)
					break
				}
				p.Offset, p.Timestamp = off, rec.Timestamp
			}
			out.Partitions = append(out.Partitions, p)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return reply{msg: resp}, nil
}
