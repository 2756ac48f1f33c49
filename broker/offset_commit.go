package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/offsets"
)

// OffsetCommit: a member of the group's current generation (or anyone,
// with generation -1 and no member id, while the group has no members)
// commits offsets into the offsets store, all partitions of the request
// in one durable CommitBatch: `seglog offsets` shows them, and the
// retention cleaner's consumed policy counts them. A partition that does
// not exist is UNKNOWN_TOPIC_OR_PARTITION, metadata over
// maxCommitMetadata OFFSET_METADATA_TOO_LARGE, a negative offset
// INVALID_COMMIT_OFFSET_SIZE; during CompletingRebalance the whole commit
// is REBALANCE_IN_PROGRESS.

// maxCommitMetadata is Kafka's offset.metadata.max.bytes, and the offsets
// store's default limit.
const maxCommitMetadata = 4096

func handleOffsetCommit(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.OffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	s := c.s
	whole := int16(0)
	if r.Group == "" {
		whole = kerr.InvalidGroupID.Code
	} else {
		whole = s.groups.commitCheck(r.Group, r.MemberID, r.Generation)
	}
	var commits []offsets.Commit
	var toCommit []*kmsg.OffsetCommitResponseTopicPartition
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(r.Topics))
	for i, rt := range r.Topics {
		out := &resp.Topics[i]
		*out = kmsg.NewOffsetCommitResponseTopic()
		out.Topic = rt.Topic
		n, err := s.store.Partitions(rt.Topic)
		out.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			p := &out.Partitions[j]
			*p = kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition = rp.Partition
			meta := ""
			if rp.Metadata != nil {
				meta = *rp.Metadata
			}
			switch {
			case whole != 0:
				p.ErrorCode = whole
			case err != nil || rp.Partition < 0 || int(rp.Partition) >= n:
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case len(meta) > maxCommitMetadata:
				p.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			case rp.Offset < 0:
				p.ErrorCode = kerr.InvalidCommitOffsetSize.Code
			default:
				commits = append(commits, offsets.Commit{Topic: rt.Topic, Partition: rp.Partition, Offset: rp.Offset, Metadata: meta})
				toCommit = append(toCommit, p)
			}
		}
	}
	if len(commits) > 0 {
		if err := s.offsets.CommitBatch(r.Group, commits); err != nil {
			code := s.codeFor("offset commit", err)
			for _, p := range toCommit {
				p.ErrorCode = code
			}
		}
	}
	return reply{msg: resp}, nil
}
