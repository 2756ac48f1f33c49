package segment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// placedBatch encodes one batch of one record at timestamp ts and places
// it at the end of s with st.
func placedBatch(t *testing.T, s *Segment, ts int64, st Stamp) ([]byte, Header) {
	t.Helper()
	b, err := AppendBatch(nil, []Record{{Timestamp: ts, Value: make([]byte, 100)}}, EncodeOptions{LeaderEpoch: 3})
	require.NoError(t, err)
	h, err := CheckBatch(b, DefaultLimits, true)
	require.NoError(t, err)
	return b, s.Place(b, h, st)
}

// Place sets the base offset to the segment's next offset, stamps the
// epoch and the append time as asked, and leaves a batch whose checksum
// still holds.
func TestPlacePatchesHeader(t *testing.T) {
	cases := []struct {
		name      string
		st        Stamp
		wantEpoch int32
		wantMaxTS int64
		wantType  TimestampType
	}{
		{"producer's epoch kept", Stamp{LeaderEpoch: -1}, 3, 1000, CreateTime},
		{"epoch stamped", Stamp{LeaderEpoch: 9}, 9, 1000, CreateTime},
		{"log append time", Stamp{LeaderEpoch: -1, LogAppendTime: true, AppendTime: 5000}, 3, 5000, LogAppendTime},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := createT(t, t.TempDir(), 40)
			defer s.Close()
			b, h := placedBatch(t, s, 1000, tc.st)
			got, err := Verify(b, DefaultLimits)
			require.NoError(t, err, "the checksum holds after the patch")
			assert.Equal(t, h, got, "the header returned describes the bytes")
			assert.Equal(t, int64(40), got.BaseOffset)
			assert.Equal(t, tc.wantEpoch, got.LeaderEpoch)
			assert.Equal(t, tc.wantMaxTS, got.MaxTimestamp)
			assert.Equal(t, tc.wantType, got.TimestampType())
			_, err = s.Append(b, h)
			require.NoError(t, err)
			assert.Equal(t, int64(41), s.NextOffset())
		})
	}
}

// A segment that holds data is full by its roll policy: past Bytes, or
// once its first batch is Age old; an empty one never is.
func TestRollPolicyFull(t *testing.T) {
	now := time.UnixMilli(10_000)
	clock := func() time.Time { return now }
	cases := []struct {
		name     string
		roll     RollPolicy
		appended int   // batches appended before the one checked
		at       int64 // the clock when it is checked (ms)
		full     bool
	}{
		{"empty, any policy", RollPolicy{Bytes: 1, Age: time.Millisecond, Now: clock}, 0, 10_000, false},
		{"within bytes", RollPolicy{Bytes: 1 << 20}, 3, 10_000, false},
		{"past bytes", RollPolicy{Bytes: 300}, 1, 10_000, true},
		{"young", RollPolicy{Age: time.Second, Now: clock}, 1, 10_999, false},
		{"old", RollPolicy{Age: time.Second, Now: clock}, 1, 11_000, true},
		{"no policy", RollPolicy{}, 3, 10_000, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOpts()
			opts.Roll = tc.roll
			s, err := Create(t.TempDir(), 0, opts)
			require.NoError(t, err)
			defer s.Close()
			now = time.UnixMilli(10_000)
			for i := 0; i < tc.appended; i++ {
				b, h := placedBatch(t, s, 10_000, Stamp{LeaderEpoch: -1})
				_, err := s.Append(b, h)
				require.NoError(t, err)
			}
			now = time.UnixMilli(tc.at)
			b, h := placedBatch(t, s, 10_000, Stamp{LeaderEpoch: -1})
			_, err = s.Append(b, h)
			if tc.full {
				assert.ErrorIs(t, err, ErrFull)
				assert.Equal(t, int64(tc.appended), s.NextOffset(), "nothing appended")
			} else {
				assert.NoError(t, err)
			}
		})
	}
}
