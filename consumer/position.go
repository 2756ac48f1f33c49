package consumer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seglog/seglog/storage"
)

// positionKind says how a Position is given.
type positionKind int

const (
	earliest positionKind = iota // the log start
	latest                       // the log end
	atOffset                     // an offset
	fromEnd                      // v records before the log end
	atTime                       // the first record at or after v ms since the epoch
	shiftBy                      // v records after (or before) the committed offset
)

// Position is where reading a partition starts, or where a reset moves a
// group's offset: resolved against each partition's log by Resolve. The
// zero Position is Earliest.
type Position struct {
	kind positionKind
	v    int64
}

// Earliest is the log start.
func Earliest() Position { return Position{kind: earliest} }

// Latest is the log end: only records appended from then on.
func Latest() Position { return Position{kind: latest} }

// AtOffset is offset off.
func AtOffset(off int64) Position { return Position{kind: atOffset, v: off} }

// LastRecords is n records before the log end (the log start when it
// holds fewer).
func LastRecords(n int64) Position { return Position{kind: fromEnd, v: n} }

// AtTime is the first record whose timestamp is at or after ms
// (milliseconds since the epoch).
func AtTime(ms int64) Position { return Position{kind: atTime, v: ms} }

// ShiftBy is n records after the group's committed offset (before it when
// n is negative); on a partition without a commit, after the log start.
func ShiftBy(n int64) Position { return Position{kind: shiftBy, v: n} }

// Resolve returns the offset where p lies on l, given the group's
// committed offset there (for ShiftBy; -1: none). The result may lie
// outside [start, end]: Clamp moves it to the nearer end.
func (p Position) Resolve(l *storage.Follower, committed int64) (int64, error) {
	switch p.kind {
	case latest:
		return l.EndOffset(), nil
	case atOffset:
		return p.v, nil
	case fromEnd:
		return max(l.StartOffset(), l.EndOffset()-p.v), nil
	case atTime:
		return l.OffsetForTime(p.v)
	case shiftBy:
		base := committed
		if base < 0 {
			base = l.StartOffset()
		}
		return base + p.v, nil
	}
	return l.StartOffset(), nil
}

// ParsePosition parses the text form of a Position: earliest, latest, an
// offset, -N (LastRecords(N)), -DURATION (AtTime of that long before now:
// -1h, -30m, -7d, in storage.ParseDuration's syntax) or a time (AtTime,
// in ParseTime's syntax).
func ParsePosition(s string, now time.Time) (Position, error) {
	switch s {
	case "earliest":
		return Earliest(), nil
	case "latest":
		return Latest(), nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		if v < 0 {
			return LastRecords(-v), nil
		}
		return AtOffset(v), nil
	}
	if strings.HasPrefix(s, "-") {
		d, err := storage.ParseDuration(s)
		if err != nil {
			return Position{}, fmt.Errorf("%q: after -, want a count of records (-100) or a duration (-1h, -30m, -7d)", s)
		}
		return AtTime(now.Add(d).UnixMilli()), nil
	}
	ms, err := ParseTime(s)
	if err != nil {
		return Position{}, fmt.Errorf("%q: want earliest, latest, an OFFSET, -N (N records before the end), -DURATION (-1h), an RFC 3339 time or ms:MILLISECONDS", s)
	}
	return AtTime(ms), nil
}

// timeLayouts are the times ParseTime accepts besides RFC 3339: without a
// zone they are local time, as Kafka's tools take them.
var timeLayouts = []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02"}

// ParseTime parses a point in time for AtTime: RFC 3339
// (2024-05-01T12:00:00Z), a local time without a zone
// (2024-05-01T14:00:00, 2024-05-01), or milliseconds since the epoch
// after "ms:". It returns milliseconds since the epoch.
func ParseTime(s string) (int64, error) {
	if ms, ok := strings.CutPrefix(s, "ms:"); ok {
		v, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: want milliseconds since the epoch after ms:", s)
		}
		return v, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%q: want an RFC 3339 time (2024-05-01T12:00:00Z), a local time (2024-05-01T14:00:00) or ms:MILLISECONDS", s)
}
