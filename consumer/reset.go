package consumer

import (
	"fmt"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

// Reset is where a reset of a group's offsets moves one partition; the
// JSON names are those seglog offsets reset --json prints.
type Reset struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   *int64 `json:"current"` // nil: no commit
	New       int64  `json:"new"`
	// Note says why New is not where to pointed: it lay outside the log
	// and was moved to the nearer end.
	Note string `json:"note,omitempty"`
}

// PlanReset computes where moving group's offsets on partitions of topic
// to the position to puts each: to resolved against the partition's log
// (read through store's follower) and the group's committed offset in
// cur (nil: no offset store), moved into [log start, log end].
func PlanReset(store *storage.Store, cur *offsets.Store, group, topic string, partitions []int32, to Position) ([]Reset, error) {
	var rows []Reset
	for _, p := range partitions {
		l, err := store.Follower(topic, p)
		if err != nil {
			return nil, err
		}
		row := Reset{Group: group, Topic: topic, Partition: p}
		committed := int64(-1)
		if cur != nil {
			if pos, err := cur.Fetch(group, topic, p); err == nil {
				row.Current, committed = ptr(pos.Offset), pos.Offset
			}
		}
		off, err := to.Resolve(l, committed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", storage.PartitionDir(topic, p), err)
		}
		start, end := l.StartOffset(), l.EndOffset()
		switch {
		case off < start:
			row.Note = fmt.Sprintf("(%d is below the log start)", off)
			off = start
		case off > end:
			row.Note = fmt.Sprintf("(%d is past the log end)", off)
			off = end
		}
		row.New = off
		rows = append(rows, row)
	}
	return rows, nil
}

// ApplyReset commits the new offsets of resets for group in one atomic,
// durable record of ost.
func ApplyReset(ost *offsets.Store, group string, resets []Reset) error {
	commits := make([]offsets.Commit, len(resets))
	for i, r := range resets {
		commits[i] = offsets.Commit{Topic: r.Topic, Partition: r.Partition, Offset: r.New}
	}
	return ost.CommitBatch(group, commits)
}
