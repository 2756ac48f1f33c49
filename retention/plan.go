package retention

import (
	"fmt"
	"time"

	"github.com/seglog/seglog/storage"
)

// Consumed is what the cleaner asks about consumer progress; *offsets.Store
// satisfies it.
type Consumed interface {
	// MinCommitted returns the smallest committed offset (next offset to
	// read) over every group that reads the topic; 0 when a reading group
	// has not committed on this partition; ok=false when no group reads the
	// topic.
	MinCommitted(topic string, partition int32) (offset int64, ok bool)
}

// Reason says which policy deleted a segment.
type Reason string

// Reasons, in the order Plan tries them.
const (
	ReasonConsumed Reason = "consumed"
	ReasonAge      Reason = "age"
	ReasonSize     Reason = "size"
)

// Policy says which segments of a partition may go. Its parts combine with
// OR; see the package doc.
type Policy struct {
	Consumed    bool          // delete what every reading group has consumed (no reading group: nothing is consumed)
	MaxAge      time.Duration // 0: no age limit
	MaxBytes    int64         // per partition; 0: no size limit
	MinSegments int           // keep at least this many segments (the active one is always kept)
}

// Enabled reports whether the policy can delete anything.
func (p Policy) Enabled() bool {
	return p.Consumed || p.MaxAge > 0 || p.MaxBytes > 0
}

func (p Policy) validate() error {
	if p.MaxAge < 0 || p.MaxBytes < 0 || p.MinSegments < 0 {
		return fmt.Errorf("negative MaxAge, MaxBytes or MinSegments in %+v", p)
	}
	return nil
}

// Deletion is one segment deleted (or, in a dry run, that would be). Its
// JSON form, with the names below, is what seglog retention --json
// prints.
type Deletion struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	BaseOffset int64  `json:"base_offset"` // first offset of the segment
	NextOffset int64  `json:"next_offset"` // offset after its last record: the start offset once it is gone
	Bytes      int64  `json:"bytes"`       // size of its .log
	Reason     Reason `json:"reason"`
}

// expired reports whether a segment's newest record is older than maxAge.
// A segment without records has nothing to keep.
func expired(s storage.SegmentInfo, maxAge time.Duration, now time.Time) bool {
	if maxAge <= 0 {
		return false
	}
	if s.MaxTimestamp < 0 || s.BaseOffset >= s.NextOffset {
		return true
	}
	return now.UnixMilli()-s.MaxTimestamp > maxAge.Milliseconds()
}

// Plan decides, without deleting, which leading segments of one log go
// under a policy (used by RunOnce and the dry run): exported so it is
// testable on its own. segs is the log's listing, oldest first
// (storage.Log.Segments); minCommitted and consumedOK are what
// Consumed.MinCommitted answered (ignored unless p.Consumed). The result is
// a prefix of segs, in order, never the active segment (the one marked
// Active, or the last when none is), leaving at least p.MinSegments
// segments; each Deletion names the first policy that selects it. Topic and
// Partition are left empty. Plan is a pure function.
func Plan(segs []storage.SegmentInfo, p Policy, minCommitted int64, consumedOK bool, now time.Time) []Deletion {
	limit := len(segs) - 1 // the last segment is active, marked or not
	for i, s := range segs {
		if s.Active {
			limit = min(limit, i)
			break
		}
	}
	limit = min(limit, len(segs)-max(p.MinSegments, 1))
	if limit <= 0 {
		return nil
	}
	var total int64
	for _, s := range segs {
		total += s.Size
	}
	var out []Deletion
	for _, s := range segs[:limit] {
		empty := s.BaseOffset >= s.NextOffset
		var reason Reason
		switch {
		case p.Consumed && (empty || consumedOK && minCommitted >= s.NextOffset):
			reason = ReasonConsumed
		case expired(s, p.MaxAge, now):
			reason = ReasonAge
		case p.MaxBytes > 0 && (total > p.MaxBytes || empty):
			reason = ReasonSize
		}
		if reason == "" {
			return out // the first segment kept ends the prefix
		}
		out = append(out, Deletion{BaseOffset: s.BaseOffset, NextOffset: s.NextOffset, Bytes: s.Size, Reason: reason})
		total -= s.Size
	}
	return out
}
