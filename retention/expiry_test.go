package retention

import (
	"testing"
	"time"

	"github.com/seglog/seglog/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFirstUnexpired(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	// Segments [0,5) [5,10) [10,15) [15,20) are 60, 50, 40, 30 minutes old;
	// the active segment [20,22) 20 minutes.
	l := makeTopic(t, s, "t", 1, 4, 5, func(i int) time.Time { return t0.Add(-time.Duration(60-10*i) * time.Minute) })[0]
	ts := t0.Add(-20 * time.Minute).UnixMilli()
	_, err := l.Append(storage.Record{Timestamp: ts, Value: val(20)}, storage.Record{Timestamp: ts, Value: val(21)})
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		offset int64
		maxAge time.Duration
		now    time.Time
		want   int64
	}{
		{"no limit", 3, 0, t0, 3},
		{"nothing expired", 3, 2 * time.Hour, t0, 3},
		{"expired head skipped", 0, 45 * time.Minute, t0, 10},
		{"from inside an expired segment", 7, 45 * time.Minute, t0, 10},
		{"from inside an unexpired segment", 12, 45 * time.Minute, t0, 12},
		{"only the active segment is fresh", 0, 25 * time.Minute, t0, 20},
		{"everything expired: the end", 4, 25 * time.Minute, t0.Add(time.Hour), 22},
		{"at the end", 22, time.Minute, t0, 22},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FirstUnexpired(l, tc.offset, tc.maxAge, tc.now)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, int64(22), readAll(t, l, got), "the offset is readable")
		})
	}

	_, err = FirstUnexpired(l, 23, time.Minute, t0)
	assert.ErrorIs(t, err, storage.ErrOffsetOutOfRange)

	// After the cleaner deletes the expired head, a position below the
	// start is out of range; from the start, the answer is the same.
	c := newCleaner(t, s, nil, Options{Default: Policy{MaxAge: 45 * time.Minute}})
	runOnce(t, c)
	require.Equal(t, int64(10), l.StartOffset())
	_, err = FirstUnexpired(l, 3, 45*time.Minute, t0)
	assert.ErrorIs(t, err, storage.ErrOffsetOutOfRange)
	got, err := FirstUnexpired(l, l.StartOffset(), 25*time.Minute, t0)
	require.NoError(t, err)
	assert.Equal(t, int64(20), got)
}
