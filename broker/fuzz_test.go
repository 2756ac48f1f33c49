package broker

import (
	"encoding/binary"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzParseRequest feeds arbitrary request bodies (what follows the size
// on the wire) to the connection's parser: it must return a request or
// an error, never panic or allocate past what the body can describe.
func FuzzParseRequest(f *testing.F) {
	hdr := func(key, version int16, flexible bool, body []byte) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint16(b, 1)
		b = append(b, 'c')
		if flexible {
			b = append(b, 0)
		}
		return append(b, body...)
	}
	for key, a := range apis {
		for _, v := range []int16{a.min, a.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			f.Add(hdr(key, v, req.IsFlexible() && key != apiVersionsKey, req.AppendTo(nil)))
		}
	}
	f.Add([]byte{})
	f.Add(hdr(0, 9, true, []byte{0xff, 0xff, 0xff, 0xff, 0x7f}))
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	f.Fuzz(func(t *testing.T, body []byte) {
		c := &conn{s: s, log: s.log}
		req, err := c.parse(body)
		if err == nil && req.msg == nil {
			t.Fatal("no error and no request")
		}
	})
}
