package segment

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeRecordJSONReadsWhatItDocumentsAndSaysWhyNot(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Record
	}{
		{`{"key":"k","value":"v","timestamp":1714564800000}`, Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1714564800000}},
		{`{"key":null,"value":null}`, Record{}},
		{`{"value":"AAE=","value_encoding":"base64","headers":[{"key":"h","value":"x"},{"key":"n","value":null}]}`,
			Record{Value: []byte{0, 1}, Headers: []RecordHeader{{Key: []byte("h"), Value: []byte("x")}, {Key: []byte("n")}}}},
		{`{"value":"v","headers":{"b":"2","a":"1"},"timestamp":"2024-05-01T12:00:00Z"}`,
			Record{Value: []byte("v"), Timestamp: 1714564800000, Headers: []RecordHeader{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}}},
		{`{"partition":3,"offset":9,"timestamp":5,"key":"k","value":"v","headers":[]}`, Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 5, Headers: []RecordHeader{}}},
	} {
		got, err := DecodeRecordJSON([]byte(tc.in))
		require.NoError(t, err, tc.in)
		if tc.want.Headers == nil && len(got.Headers) == 0 {
			got.Headers = nil
		}
		assert.Equal(t, tc.want, got, tc.in)
	}
	for in, want := range map[string]string{
		`{"key":"k"}`:             `no "value"`,
		`not json`:                "not a JSON record object",
		`{"value":"v","extra":1}`: `unknown field "extra"`,
		`{"value":5}`:             `"value": want a string or null`,
		`{"value":"!","value_encoding":"base64"}`:     "bad base64",
		`{"value":"v","value_encoding":"hex"}`:        "want base64",
		`{"value":"v","timestamp":-1}`:                "timestamp -1",
		`{"value":"v","timestamp":"yesterday"}`:       `timestamp "yesterday"`,
		`{"value":"v","headers":7}`:                   "headers: want a list",
		`{"value":"v"} {"value":"w"}`:                 "more than one JSON value",
		`{"value":null,"value_encoding":"base64"}`:    "is null but its encoding is base64",
		`{"value":"v","headers":[{"key":"h","x":1}]}`: "headers: want a list",
	} {
		_, err := DecodeRecordJSON([]byte(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
}

// FuzzDecodeRecordJSON: DecodeRecordJSON never panics on a line, and what
// it accepts, NewRecordJSON prints so that it reads back the same record.
func FuzzDecodeRecordJSON(f *testing.F) {
	for _, s := range []string{`{"key":"k","value":"v","timestamp":1}`, `{"value":null}`, `{"value":"AAE=","value_encoding":"base64","headers":{"a":"b"}}`, `[`, `{"value":"v","headers":[{"key":"","value":null}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := DecodeRecordJSON(line)
		if err != nil {
			return
		}
		out, err := json.Marshal(NewRecordJSON(&r, 0))
		require.NoError(t, err)
		back, err := DecodeRecordJSON(out)
		require.NoError(t, err, "%s", out)
		assert.Equal(t, r.Key, back.Key)
		assert.Equal(t, r.Value, back.Value)
		assert.Equal(t, r.Timestamp, back.Timestamp)
		require.Equal(t, len(r.Headers), len(back.Headers))
		for i := range r.Headers {
			assert.Equal(t, string(r.Headers[i].Key), string(back.Headers[i].Key))
			assert.Equal(t, r.Headers[i].Value, back.Headers[i].Value)
		}
	})
}
