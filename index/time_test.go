package index

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeLookup(t *testing.T) {
	x := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true})
	none := TimeOffset{Timestamp: -1, Offset: testBase}
	_, ok := x.Lookup(math.MaxInt64)
	assert.False(t, ok, "empty")
	entries := []TimeOffset{{-50, 1001}, {0, 1005}, {100, 1010}, {200, 1020}}
	for _, e := range entries {
		require.NoError(t, x.Append(e.Timestamp, e.Offset))
	}
	tests := []struct {
		name string
		ts   int64
		want TimeOffset
		ok   bool
	}{
		{"minimum timestamp", math.MinInt64, none, false},
		{"before the first entry", -51, none, false},
		{"at the first entry", -50, entries[0], true},
		{"between entries", -1, entries[0], true},
		{"at zero", 0, entries[1], true},
		{"at a middle entry", 100, entries[2], true},
		{"just before the last", 199, entries[2], true},
		{"at the last entry", 200, entries[3], true},
		{"after the last entry", math.MaxInt64, entries[3], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := x.Lookup(tt.ts)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
	last, ok := x.Last()
	assert.True(t, ok)
	assert.Equal(t, entries[3], last)
}

func TestTimeTruncateToAndReset(t *testing.T) {
	x := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true, MaxBytes: 4096})
	want := fillTime(t, x, 5) // offsets 1010 .. 1050
	require.NoError(t, x.TruncateTo(1031))
	assert.Equal(t, want[:3], timeEntries(x))
	require.NoError(t, x.TruncateTo(1030))
	assert.Equal(t, want[:2], timeEntries(x))
	got, ok := x.Lookup(math.MaxInt64)
	assert.True(t, ok)
	assert.Equal(t, want[1], got)
	require.NoError(t, x.Append(want[2].Timestamp, want[2].Offset))
	require.NoError(t, x.TruncateTo(0))
	assert.Equal(t, 0, x.Len())
	require.NoError(t, x.Append(want[0].Timestamp, want[0].Offset))
	require.NoError(t, x.Reset())
	assert.Equal(t, 0, x.Len())
	_, ok = x.Lookup(math.MaxInt64)
	assert.False(t, ok)
}

func TestTimeAppendErrors(t *testing.T) {
	tests := []struct {
		name      string
		timestamp int64
		offset    int64
		is        error
	}{
		{"same timestamp", timeEntry(1).Timestamp, 1030, ErrOutOfOrder},
		{"smaller timestamp", timeEntry(0).Timestamp, 1030, ErrOutOfOrder},
		{"same offset", timeEntry(2).Timestamp, 1020, ErrOutOfOrder},
		{"smaller offset", timeEntry(2).Timestamp, 1015, ErrOutOfOrder},
		{"offset below the base", timeEntry(2).Timestamp, testBase - 1, nil},
		{"relative offset past uint32", timeEntry(2).Timestamp, testBase + math.MaxUint32 + 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true, MaxBytes: 4096})
			want := fillTime(t, x, 2)
			err := x.Append(tt.timestamp, tt.offset)
			require.Error(t, err)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.Equal(t, want, timeEntries(x))
		})
	}
	t.Run("all-zero entry", func(t *testing.T) {
		x := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true, MaxBytes: 4096})
		assert.Error(t, x.Append(0, testBase))
		assert.NoError(t, x.Append(0, testBase+1))
	})
	t.Run("full", func(t *testing.T) {
		x := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true, MaxBytes: 2*TimeEntrySize + 11})
		fillTime(t, x, 2)
		assert.True(t, x.Full())
		e := timeEntry(2)
		assert.ErrorIs(t, x.Append(e.Timestamp, e.Offset), ErrFull)
	})
}
