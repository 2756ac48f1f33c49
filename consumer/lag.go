package consumer

import (
	"maps"
	"slices"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

// Lag is a group's place on one partition of a topic it reads (has
// committed on or subscribed to), against the log; the JSON names are
// those seglog offsets --json prints.
type Lag struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed *int64 `json:"committed"` // nil: no commit on this partition
	LogStart  *int64 `json:"log_start"` // nil: the partition does not exist
	LogEnd    *int64 `json:"log_end"`
	Lag       *int64 `json:"lag"`
}

// LagOf is what a group has left to read of a partition whose log holds
// [start, end): end minus its committed offset, or the whole log when it
// has no commit (committed nil) or one below the log start (such a group
// holds the whole partition for retention).
func LagOf(committed *int64, start, end int64) int64 {
	if committed == nil || *committed < start {
		return end - start
	}
	return max(0, end-*committed)
}

// Lags lists, per group, every partition of every topic the group reads,
// with the log's offsets (read through store's followers) and the lag; a
// topic the store does not have lists the group's commits alone.
func Lags(store *storage.Store, ost *offsets.Store, groups []string) ([]Lag, error) {
	var rows []Lag
	for _, g := range groups {
		committed := map[string]map[int32]int64{}
		var topics []string
		for _, p := range ost.Positions(g) {
			if committed[p.Topic] == nil {
				committed[p.Topic] = map[int32]int64{}
				topics = append(topics, p.Topic)
			}
			committed[p.Topic][p.Partition] = p.Offset
		}
		for _, t := range GroupTopics(store, ost, g) {
			if committed[t] == nil {
				committed[t] = map[int32]int64{}
				topics = append(topics, t)
			}
		}
		slices.Sort(topics)
		for _, topic := range topics {
			n, err := store.Partitions(topic)
			if err != nil {
				// A topic that was deleted (or never existed here).
				for _, p := range slices.Sorted(maps.Keys(committed[topic])) {
					rows = append(rows, Lag{Group: g, Topic: topic, Partition: p, Committed: ptr(committed[topic][p])})
				}
				continue
			}
			for p := range int32(n) {
				l, err := store.Follower(topic, p)
				if err != nil {
					return nil, err
				}
				start, end := l.StartOffset(), l.EndOffset()
				row := Lag{Group: g, Topic: topic, Partition: p, LogStart: ptr(start), LogEnd: ptr(end)}
				if off, ok := committed[topic][p]; ok {
					row.Committed = ptr(off)
				}
				row.Lag = ptr(LagOf(row.Committed, start, end))
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

// GroupLag is one group's committed offset and lag on a partition; the
// JSON names are those seglog describe --json prints.
type GroupLag struct {
	Group     string `json:"group"`
	Committed *int64 `json:"committed"`
	Lag       int64  `json:"lag"`
}

// GroupLags returns, for every group that reads topic (sorted), its
// committed offset on partition p and its lag against the log [start,
// end).
func GroupLags(ost *offsets.Store, topic string, p int32, start, end int64) []GroupLag {
	var out []GroupLag
	for _, g := range Readers(ost, topic) {
		gl := GroupLag{Group: g}
		if pos, err := ost.Fetch(g, topic, p); err == nil {
			gl.Committed = ptr(pos.Offset)
		}
		gl.Lag = LagOf(gl.Committed, start, end)
		out = append(out, gl)
	}
	return out
}

// GroupTopics lists the topics of store that group reads (has committed
// on or subscribed to), in the order of store.Topics.
func GroupTopics(store *storage.Store, ost *offsets.Store, group string) []string {
	var topics []string
	for _, t := range store.Topics() {
		if slices.Contains(ost.Readers(t.Name), group) {
			topics = append(topics, t.Name)
		}
	}
	return topics
}

// Readers lists the groups that read topic (have committed on it or
// subscribed to it), sorted.
func Readers(ost *offsets.Store, topic string) []string {
	gs := slices.Clone(ost.Readers(topic))
	slices.Sort(gs)
	return gs
}

func ptr[T any](v T) *T { return &v }
