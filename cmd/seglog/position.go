package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seglog/seglog/consumer"
	"github.com/seglog/seglog/storage"
)

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
func parseFrom(s string, now time.Time) (consumer.Position, error) {
	switch s {
	case "earliest":
		return consumer.Earliest(), nil
	case "latest":
		return consumer.Latest(), nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		if v < 0 {
			return consumer.LastRecords(-v), nil
		}
		return consumer.AtOffset(v), nil
	}
	if strings.HasPrefix(s, "-") {
		d, err := storage.ParseDuration(s)
		if err != nil {
			return consumer.Position{}, fmt.Errorf("--from %q: after -, want a count of records (-100) or a duration (-1h, -30m, -7d)", s)
		}
		return consumer.AtTime(now.Add(d).UnixMilli()), nil
	}
	ms, err := parseDateTime(s)
	if err != nil {
		return consumer.Position{}, fmt.Errorf("--from %q: want earliest, latest, an OFFSET, -N (N records before the end), -DURATION (-1h), an RFC 3339 time or ms:MILLISECONDS", s)
	}
	return consumer.AtTime(ms), nil
}
