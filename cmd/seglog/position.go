package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seglog/seglog/storage"
)

// fromKind says how a starting position is given.
type fromKind int

const (
	fromEarliest fromKind = iota // the log start
	fromLatest                   // the log end
	fromOffset                   // an offset
	fromEnd                      // v records before the log end
	fromTime                     // the first record at or after v ms since the epoch
	fromShift                    // v records after (or before) the committed offset
)

// fromSpec is a starting position of consume --from, or a target of
// offsets reset.
type fromSpec struct {
	kind fromKind
	v    int64
}

// timeLayouts are the times --from and --to-datetime accept besides RFC
// 3339: without a zone they are local time, as Kafka's tools take them.
var timeLayouts = []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02"}

// parseDateTime parses a point in time: RFC 3339 (2024-05-01T12:00:00Z),
// a local time without a zone (2024-05-01T14:00:00, 2024-05-01), or
// milliseconds since the epoch after "ms:". It returns milliseconds since
// the epoch.
func parseDateTime(s string) (int64, error) {
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

// parseFrom parses consume's --from: earliest, latest, an offset, -N (N
// records before the end of each partition), -DURATION (records from that
// long ago: -1h, -30m, -7d), or a time (see parseDateTime).
func parseFrom(s string, now time.Time) (fromSpec, error) {
	switch s {
	case "earliest":
		return fromSpec{kind: fromEarliest}, nil
	case "latest":
		return fromSpec{kind: fromLatest}, nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		if v < 0 {
			return fromSpec{kind: fromEnd, v: -v}, nil
		}
		return fromSpec{kind: fromOffset, v: v}, nil
	}
	if strings.HasPrefix(s, "-") {
		d, err := parseDuration(s)
		if err != nil {
			return fromSpec{}, fmt.Errorf("--from %q: after -, want a count of records (-100) or a duration (-1h, -30m, -7d)", s)
		}
		return fromSpec{kind: fromTime, v: now.Add(d).UnixMilli()}, nil
	}
	ms, err := parseDateTime(s)
	if err != nil {
		return fromSpec{}, fmt.Errorf("--from %q: want earliest, latest, an OFFSET, -N (N records before the end), -DURATION (-1h), an RFC 3339 time or ms:MILLISECONDS", s)
	}
	return fromSpec{kind: fromTime, v: ms}, nil
}

// resolve returns the offset where spec starts on l, given the committed
// offset (for fromShift; -1: none, shift from the log start). The result
// may lie outside [start, end]: the caller clamps and says so.
func (f fromSpec) resolve(l *storage.Follower, committed int64) (int64, error) {
	switch f.kind {
	case fromLatest:
		return l.EndOffset(), nil
	case fromOffset:
		return f.v, nil
	case fromEnd:
		return max(l.StartOffset(), l.EndOffset()-f.v), nil
	case fromTime:
		return l.OffsetForTime(f.v)
	case fromShift:
		base := committed
		if base < 0 {
			base = l.StartOffset()
		}
		return base + f.v, nil
	}
	return l.StartOffset(), nil
}
