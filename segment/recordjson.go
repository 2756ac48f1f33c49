package segment

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The JSON form of a record, one object per line: what seglog consume
// --format json prints and produce --format json reads.
//
//	{"partition":0,"offset":5,"timestamp":1714564800000,"key":"k","value":"v","headers":[{"key":"h","value":"x"}]}
//
// Keys, values and header fields are JSON strings when they are valid
// UTF-8, and base64 otherwise, which a "key_encoding" or
// "value_encoding" of "base64" then says; nil is null.

// jsonBytes encodes bytes as a JSON string when they are valid UTF-8 and
// as base64 otherwise, which the *_encoding field then says; nil is null.
func jsonBytes(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}

// HeaderJSON is a record header in the JSON form.
type HeaderJSON struct {
	Key           *string `json:"key"`
	KeyEncoding   string  `json:"key_encoding,omitempty"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// RecordJSON is a record in the JSON form. Partition is for the caller
// to set; ValueSize too, when it shows a value cut (Truncated).
type RecordJSON struct {
	Partition     *int32       `json:"partition,omitempty"`
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	ValueSize     *int         `json:"value_size,omitempty"`
	Truncated     bool         `json:"value_truncated,omitempty"`
	Headers       []HeaderJSON `json:"headers"`
}

// NewRecordJSON returns r in the JSON form, its value cut to maxValue
// bytes (Truncated) when maxValue is above 0.
func NewRecordJSON(r *Record, maxValue int) RecordJSON {
	out := RecordJSON{Offset: r.Offset, Timestamp: r.Timestamp, Headers: []HeaderJSON{}}
	out.Key, out.KeyEncoding = jsonBytes(r.Key)
	v := r.Value
	if maxValue > 0 && len(v) > maxValue {
		v = v[:maxValue]
		out.Truncated = true
	}
	out.Value, out.ValueEncoding = jsonBytes(v)
	for _, h := range r.Headers {
		var hj HeaderJSON
		hj.Key, hj.KeyEncoding = jsonBytes(h.Key)
		hj.Value, hj.ValueEncoding = jsonBytes(h.Value)
		out.Headers = append(out.Headers, hj)
	}
	return out
}

// inputJSON is the JSON form as DecodeRecordJSON reads it (partition
// and offset are ignored).
type inputJSON struct {
	Key           json.RawMessage `json:"key"`
	KeyEncoding   string          `json:"key_encoding"`
	Value         json.RawMessage `json:"value"`
	ValueEncoding string          `json:"value_encoding"`
	Headers       json.RawMessage `json:"headers"`
	Timestamp     json.RawMessage `json:"timestamp"`
	Partition     json.RawMessage `json:"partition"`
	Offset        json.RawMessage `json:"offset"`
}

// DecodeRecordJSON decodes one record in the JSON form:
//
//	{"key": "k", "value": "v", "headers": [{"key": "h", "value": "x"}], "timestamp": 1714564800000}
//
// key and value are strings (base64 with "key_encoding"/"value_encoding":
// "base64") or null; value is required. headers is a list of {"key",
// "value"} (with encodings like the record's) or an object of string
// values; timestamp is milliseconds since the epoch or an RFC 3339 string
// (absent, null or 0: the time of the append). Unknown fields are errors.
// It never panics, whatever the line.
func DecodeRecordJSON(line []byte) (Record, error) {
	var in inputJSON
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Record{}, fmt.Errorf("not a JSON record object: %v", jsonErr(err))
	}
	if dec.More() {
		return Record{}, errors.New("more than one JSON value on the line")
	}
	var r Record
	var err error
	if r.Key, err = jsonRawField("key", in.Key, in.KeyEncoding); err != nil {
		return r, err
	}
	if len(in.Value) == 0 {
		// "value": null is a null value; a missing value is a mistake.
		return r, errors.New(`no "value" (write "value": null for a null value)`)
	}
	if r.Value, err = jsonRawField("value", in.Value, in.ValueEncoding); err != nil {
		return r, err
	}
	if r.Headers, err = jsonHeaders(in.Headers); err != nil {
		return r, err
	}
	if r.Timestamp, err = jsonTimestamp(in.Timestamp); err != nil {
		return r, err
	}
	return r, nil
}

// jsonErr drops encoding/json's type names from its messages.
func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%q is a JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// jsonRawField decodes a key or value: a JSON string or null.
func jsonRawField(name string, raw json.RawMessage, encoding string) ([]byte, error) {
	if len(raw) == 0 {
		return jsonField(name, nil, encoding)
	}
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%q: want a string or null, not %s", name, truncateForMessage(raw))
	}
	return jsonField(name, s, encoding)
}

// jsonField decodes a key, value or header field: a string, base64 when
// encoding says so, or null.
func jsonField(name string, s *string, encoding string) ([]byte, error) {
	switch encoding {
	case "":
		if s == nil {
			return nil, nil
		}
		return []byte(*s), nil
	case "base64":
		if s == nil {
			return nil, fmt.Errorf("%q is null but its encoding is base64", name)
		}
		b, err := base64.StdEncoding.DecodeString(*s)
		if err != nil {
			return nil, fmt.Errorf("%q: bad base64: %v", name, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%s_encoding %q: want base64 (or none)", name, encoding)
}

// headerJSONIn is one header of the list form.
type headerJSONIn struct {
	Key           *string `json:"key"`
	KeyEncoding   string  `json:"key_encoding"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding"`
}

func jsonHeaders(raw json.RawMessage) ([]RecordHeader, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '{' {
		var m map[string]*string
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("headers: want a list of {\"key\",\"value\"} or an object of strings: %v", jsonErr(err))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([]RecordHeader, 0, len(keys))
		for _, k := range keys {
			h := RecordHeader{Key: []byte(k)}
			if v := m[k]; v != nil {
				h.Value = []byte(*v)
			}
			out = append(out, h)
		}
		return out, nil
	}
	var list []headerJSONIn
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("headers: want a list of {\"key\",\"value\"} or an object of strings: %v", jsonErr(err))
	}
	out := make([]RecordHeader, 0, len(list))
	for i, h := range list {
		k, err := jsonField(fmt.Sprintf("headers[%d].key", i), h.Key, h.KeyEncoding)
		if err != nil {
			return nil, err
		}
		if k == nil {
			k = []byte{}
		}
		v, err := jsonField(fmt.Sprintf("headers[%d].value", i), h.Value, h.ValueEncoding)
		if err != nil {
			return nil, err
		}
		out = append(out, RecordHeader{Key: k, Value: v})
	}
	return out, nil
}

func jsonTimestamp(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("timestamp: %v", jsonErr(err))
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, fmt.Errorf("timestamp %q: want milliseconds since the epoch or an RFC 3339 time", s)
		}
		return t.UnixMilli(), nil
	}
	ms, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || ms < 0 {
		return 0, fmt.Errorf("timestamp %s: want milliseconds since the epoch (a whole number, not negative) or an RFC 3339 time", truncateForMessage(raw))
	}
	return ms, nil
}

func truncateForMessage(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
