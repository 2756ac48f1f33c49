package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"unicode/utf8"

	"github.com/seglog/seglog/segment"
)

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

type headerJSON struct {
	Key           *string `json:"key"`
	KeyEncoding   string  `json:"key_encoding,omitempty"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// recordJSON is one record as consume --format json and dump --json --records
// print it.
type recordJSON struct {
	Type          string       `json:"type,omitempty"` // dump only: "record"
	File          string       `json:"file,omitempty"` // dump only
	Partition     *int32       `json:"partition,omitempty"`
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	ValueSize     *int         `json:"value_size,omitempty"`      // dump only
	Truncated     bool         `json:"value_truncated,omitempty"` // dump only
	Headers       []headerJSON `json:"headers"`
}

func newRecordJSON(r *segment.Record, maxValue int) recordJSON {
	out := recordJSON{Offset: r.Offset, Timestamp: r.Timestamp, Headers: []headerJSON{}}
	out.Key, out.KeyEncoding = jsonBytes(r.Key)
	v := r.Value
	if maxValue > 0 && len(v) > maxValue {
		v = v[:maxValue]
		out.Truncated = true
	}
	out.Value, out.ValueEncoding = jsonBytes(v)
	for _, h := range r.Headers {
		var hj headerJSON
		hj.Key, hj.KeyEncoding = jsonBytes(h.Key)
		hj.Value, hj.ValueEncoding = jsonBytes(h.Value)
		out.Headers = append(out.Headers, hj)
	}
	return out
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
