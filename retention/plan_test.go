package retention

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/seglog/seglog/storage"
	"github.com/stretchr/testify/assert"
)

// segs builds a listing of segments of 10 records and 100 bytes each, the
// last active; segment i's newest record is agesMin[i] minutes before t0.
func segs(agesMin ...int) []storage.SegmentInfo {
	out := make([]storage.SegmentInfo, len(agesMin))
	for i, age := range agesMin {
		out[i] = storage.SegmentInfo{
			BaseOffset:   int64(i * 10),
			NextOffset:   int64(i*10 + 10),
			Size:         100,
			MaxTimestamp: t0.Add(-time.Duration(age) * time.Minute).UnixMilli(),
			Active:       i == len(agesMin)-1,
		}
	}
	return out
}

func TestPlan(t *testing.T) {
	five := segs(50, 40, 30, 20, 10) // [0,10) ... [40,50), the last active
	emptyMid := segs(50, 40, 30, 20, 10)
	emptyMid[1].NextOffset, emptyMid[1].Size, emptyMid[1].MaxTimestamp = 10, 0, -1
	for i := 2; i < len(emptyMid); i++ {
		emptyMid[i].BaseOffset -= 10
		emptyMid[i].NextOffset -= 10
	}
	unordered := segs(50, 5, 40, 30, 1) // a recent segment in the middle
	noActive := segs(50, 40, 30)
	noActive[2].Active = false

	cases := []struct {
		name       string
		segs       []storage.SegmentInfo
		p          Policy
		min        int64
		consumedOK bool
		want       []Reason // reasons of the leading segments deleted
	}{
		{name: "no policy", segs: five, p: Policy{}, min: 50, consumedOK: true},
		{name: "empty listing", segs: nil, p: Policy{Consumed: true, MaxAge: time.Minute, MaxBytes: 1}},
		{name: "only the active segment", segs: segs(99), p: Policy{Consumed: true, MaxAge: time.Minute, MaxBytes: 1}, min: 10, consumedOK: true},

		{name: "consumed: part", segs: five, p: Policy{Consumed: true}, min: 25, consumedOK: true, want: []Reason{ReasonConsumed, ReasonConsumed}},
		{name: "consumed: exactly next offset", segs: five, p: Policy{Consumed: true}, min: 30, consumedOK: true, want: []Reason{ReasonConsumed, ReasonConsumed, ReasonConsumed}},
		{name: "consumed: one short", segs: five, p: Policy{Consumed: true}, min: 9, consumedOK: true},
		{name: "consumed: all but active", segs: five, p: Policy{Consumed: true}, min: 1000, consumedOK: true, want: []Reason{ReasonConsumed, ReasonConsumed, ReasonConsumed, ReasonConsumed}},
		{name: "consumed: registered, never committed", segs: five, p: Policy{Consumed: true}, min: 0, consumedOK: true},
		{name: "consumed: no reading group", segs: five, p: Policy{Consumed: true}, min: 1000, consumedOK: false},
		{name: "consumed off ignores the answer", segs: five, p: Policy{MaxAge: time.Hour}, min: 1000, consumedOK: true},

		{name: "age: older than 25m", segs: five, p: Policy{MaxAge: 25 * time.Minute}, want: []Reason{ReasonAge, ReasonAge, ReasonAge}},
		{name: "age: exactly the limit is kept", segs: five, p: Policy{MaxAge: 30 * time.Minute}, want: []Reason{ReasonAge, ReasonAge}},
		{name: "age: never the active", segs: five, p: Policy{MaxAge: time.Second}, want: []Reason{ReasonAge, ReasonAge, ReasonAge, ReasonAge}},
		{name: "age: a prefix only", segs: unordered, p: Policy{MaxAge: 20 * time.Minute}, want: []Reason{ReasonAge}},

		{name: "size: down to the budget", segs: five, p: Policy{MaxBytes: 250}, want: []Reason{ReasonSize, ReasonSize, ReasonSize}},
		{name: "size: at the budget", segs: five, p: Policy{MaxBytes: 500}},
		{name: "size: active alone over budget", segs: five, p: Policy{MaxBytes: 1}, want: []Reason{ReasonSize, ReasonSize, ReasonSize, ReasonSize}},

		{name: "min segments", segs: five, p: Policy{MaxAge: time.Second, MinSegments: 3}, want: []Reason{ReasonAge, ReasonAge}},
		{name: "min segments over count", segs: five, p: Policy{MaxAge: time.Second, MinSegments: 9}},
		{name: "min segments 1 is the active", segs: five, p: Policy{MaxBytes: 1, MinSegments: 1}, want: []Reason{ReasonSize, ReasonSize, ReasonSize, ReasonSize}},

		{name: "combined: consumed, then age, then size", segs: five, p: Policy{Consumed: true, MaxAge: 35 * time.Minute, MaxBytes: 250}, min: 10, consumedOK: true,
			want: []Reason{ReasonConsumed, ReasonAge, ReasonSize}},
		{name: "combined: overlapping parts name the first", segs: five, p: Policy{Consumed: true, MaxAge: 45 * time.Minute, MaxBytes: 450}, min: 0, consumedOK: true,
			want: []Reason{ReasonAge}},
		{name: "combined: no reading group, age still applies", segs: five, p: Policy{Consumed: true, MaxAge: 45 * time.Minute}, min: 1000, consumedOK: false,
			want: []Reason{ReasonAge}},
		{name: "combined: capped by min segments", segs: five, p: Policy{Consumed: true, MaxAge: time.Second, MaxBytes: 1, MinSegments: 4}, min: 1000, consumedOK: true,
			want: []Reason{ReasonConsumed}},

		{name: "empty sealed segment goes with the prefix (consumed)", segs: emptyMid, p: Policy{Consumed: true}, min: 10, consumedOK: true,
			want: []Reason{ReasonConsumed, ReasonConsumed}},
		{name: "empty sealed segment goes with the prefix (age)", segs: emptyMid, p: Policy{MaxAge: 45 * time.Minute},
			want: []Reason{ReasonAge, ReasonAge}},
		{name: "no segment marked active: the last is kept", segs: noActive, p: Policy{MaxAge: time.Second}, want: []Reason{ReasonAge, ReasonAge}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Plan(tc.segs, tc.p, tc.min, tc.consumedOK, t0)
			var reasons []Reason
			for i, d := range got {
				reasons = append(reasons, d.Reason)
				assert.Equal(t, tc.segs[i].BaseOffset, d.BaseOffset, "deletions are a prefix, in order")
				assert.Equal(t, tc.segs[i].NextOffset, d.NextOffset)
				assert.Equal(t, tc.segs[i].Size, d.Bytes)
				assert.Empty(t, d.Topic)
				assert.False(t, tc.segs[i].Active, "the active segment is never planned")
			}
			assert.Equal(t, tc.want, reasons)
		})
	}
}

func TestPlanDoesNotModifyInput(t *testing.T) {
	in := segs(50, 40, 30)
	cp := append([]storage.SegmentInfo(nil), in...)
	_ = Plan(in, Policy{Consumed: true, MaxAge: time.Second, MaxBytes: 1}, 100, true, t0)
	assert.Equal(t, cp, in)
}

func TestDeletionJSONNamesItsFields(t *testing.T) {
	b, err := json.Marshal(Deletion{Topic: "t", Partition: 2, BaseOffset: 10, NextOffset: 20, Bytes: 100, Reason: ReasonAge})
	assert.NoError(t, err)
	assert.JSONEq(t, `{"topic":"t","partition":2,"base_offset":10,"next_offset":20,"bytes":100,"reason":"age"}`, string(b))
}
