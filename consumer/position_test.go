package consumer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/consumer"
)

func TestParsePositionReadsEveryForm(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	local := time.Date(2024, 5, 1, 14, 0, 0, 0, time.Local).UnixMilli()
	for _, tc := range []struct {
		in   string
		want consumer.Position
	}{
		{"earliest", consumer.Earliest()},
		{"latest", consumer.Latest()},
		{"42", consumer.AtOffset(42)},
		{"0", consumer.AtOffset(0)},
		{"-100", consumer.LastRecords(100)},
		{"-1h", consumer.AtTime(now.Add(-time.Hour).UnixMilli())},
		{"-1d", consumer.AtTime(now.Add(-24 * time.Hour).UnixMilli())},
		{"2024-05-01T12:00:00Z", consumer.AtTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC).UnixMilli())},
		{"2024-05-01T14:00:00", consumer.AtTime(local)},
		{"2024-05-01 14:00:00", consumer.AtTime(local)},
		{"ms:1700000000200", consumer.AtTime(1700000000200)},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := consumer.ParsePosition(tc.in, now)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParsePositionSaysWhatItWants(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"soon", `"soon": want earliest, latest, an OFFSET`},
		{"-soon", `"-soon": after -, want a count of records`},
		{"ms:x", `want earliest, latest`},
	} {
		_, err := consumer.ParsePosition(tc.in, time.Now())
		assert.ErrorContains(t, err, tc.want, tc.in)
	}
	_, err := consumer.ParseTime("ms:x")
	assert.ErrorContains(t, err, `"ms:x": want milliseconds since the epoch after ms:`)
	_, err = consumer.ParseTime("yesterday")
	assert.ErrorContains(t, err, "want an RFC 3339 time")
}

// FuzzParsePosition: ParsePosition never panics.
func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{"earliest", "-5", "-1h", "ms:1", "2024-05-01", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = consumer.ParsePosition(s, time.Unix(0, 0))
	})
}
