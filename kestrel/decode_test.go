package kestrel

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decodeAll(t *testing.T, in string, maxValue int) ([]*Request, []error) {
	t.Helper()
	d := NewDecoder(strings.NewReader(in), maxValue, int64(maxValue)*4)
	var reqs []*Request
	var errs []error
	for {
		req, err := d.Decode()
		if errors.Is(err, io.EOF) {
			return reqs, errs
		}
		if err != nil {
			errs = append(errs, err)
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Fatal {
				return reqs, errs
			}
			continue
		}
		reqs = append(reqs, req)
	}
}

func TestDecodeRequests(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Request
	}{
		{"set", "set jobs 7 60 5\r\nhello\r\n", Request{Command: "set", Queue: "jobs", Flags: 7, Exptime: 60, Value: []byte("hello")}},
		{"set noreply", "set jobs 0 0 0 noreply\r\n\r\n", Request{Command: "set", Queue: "jobs", Value: []byte{}, NoReply: true}},
		{"set binary value", "set q 0 0 6\r\na\r\nb\x00c\r\n", Request{Command: "set", Queue: "q", Value: []byte("a\r\nb\x00c")}},
		{"set negative exptime", "set q 0 -1 1\r\nx\r\n", Request{Command: "set", Queue: "q", Exptime: -1, Value: []byte("x")}},
		{"bare newline", "version\n", Request{Command: "version"}},
		{"upper case", "VERSION\r\n", Request{Command: "version"}},
		{"get", "get jobs\r\n", Request{Command: "get", Keys: []Key{{Raw: "jobs", Queue: "jobs"}}}},
		{"get options", "get jobs/close/open/t=250\r\n", Request{Command: "get", Keys: []Key{{Raw: "jobs/close/open/t=250", Queue: "jobs", Close: true, Open: true, Wait: 250 * time.Millisecond, HasWait: true}}}},
		{"gets two keys", "gets a/peek b/abort\r\n", Request{Command: "gets", Keys: []Key{{Raw: "a/peek", Queue: "a", Peek: true}, {Raw: "b/abort", Queue: "b", Abort: true}}}},
		{"delete", "delete q\r\n", Request{Command: "delete", Queue: "q"}},
		{"delete with time 0", "delete q 0 noreply\r\n", Request{Command: "delete", Queue: "q", NoReply: true}},
		{"flush", "flush q\r\n", Request{Command: "flush", Queue: "q"}},
		{"flush_all", "flush_all\r\n", Request{Command: "flush_all"}},
		{"stats", "stats\r\n", Request{Command: "stats"}},
		{"shutdown", "shutdown\r\n", Request{Command: "shutdown"}},
		{"quit", "quit\r\n", Request{Command: "quit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reqs, errs := decodeAll(t, tc.in, 1024)
			require.Empty(t, errs)
			require.Len(t, reqs, 1)
			assert.Equal(t, tc.want, *reqs[0])
		})
	}
}

func TestDecodeRefusesAndGoesOn(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		reply string
	}{
		{"unknown command", "frobnicate q\r\n", "ERROR"},
		{"empty line", "\r\n", "ERROR"},
		{"get without key", "get\r\n", "CLIENT_ERROR usage"},
		{"unknown option", "get q/opne\r\n", "CLIENT_ERROR unknown option"},
		{"peek with open", "get q/peek/open\r\n", "CLIENT_ERROR options"},
		{"abort with close", "get q/abort/close\r\n", "CLIENT_ERROR options"},
		{"peek with abort", "get q/peek/abort\r\n", "CLIENT_ERROR options"},
		{"empty queue name", "get /open\r\n", "CLIENT_ERROR empty queue name"},
		{"bad timeout", "get q/t=soon\r\n", "CLIENT_ERROR bad timeout"},
		{"negative timeout", "get q/t=-5\r\n", "CLIENT_ERROR bad timeout"},
		{"huge timeout", "get q/t=99999999999\r\n", "CLIENT_ERROR bad timeout"},
		{"set missing bytes", "set q 0 0\r\n", "CLIENT_ERROR bad command line format"},
		{"set bad length", "set q 0 0 ten\r\n", "CLIENT_ERROR bad command line format"},
		{"set negative length", "set q 0 0 -1\r\n", "CLIENT_ERROR bad command line format"},
		{"set bad flags", "set q x 0 1\r\na\r\n", "CLIENT_ERROR bad command line format"},
		{"set flags over 32 bits", "set q 4294967296 0 1\r\na\r\n", "CLIENT_ERROR bad command line format"},
		{"set bad data chunk", "set q 0 0 2\r\nabcd\r\n", "CLIENT_ERROR bad data chunk"},
		{"set too large", "set q 0 0 2000\r\n" + strings.Repeat("x", 2000) + "\r\n", "SERVER_ERROR object too large"},
		{"line too long", "get " + strings.Repeat("q", 3*MaxLineLength) + "\r\n", "CLIENT_ERROR line too long"},
		{"line just too long", "get " + strings.Repeat("q", MaxLineLength-4) + "\r\n", "CLIENT_ERROR line too long"},
		{"too many keys", "get" + strings.Repeat(" q", MaxKeys+1) + "\r\n", "CLIENT_ERROR at most"},
		{"version with argument", "version x\r\n", "CLIENT_ERROR usage"},
		{"flush_all with delay", "flush_all 10\r\n", "CLIENT_ERROR usage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The request after the bad one is read as it was sent.
			reqs, errs := decodeAll(t, tc.in+"version\r\n", 1024)
			require.Len(t, errs, 1)
			var pe *ProtocolError
			require.ErrorAs(t, errs[0], &pe)
			assert.ErrorIs(t, errs[0], ErrProtocol)
			assert.False(t, pe.Fatal)
			assert.True(t, strings.HasPrefix(pe.Reply, tc.reply), "reply %q, want %q...", pe.Reply, tc.reply)
			assert.NotContains(t, pe.Reply, "\n")
			require.Len(t, reqs, 1, "the next request")
			assert.Equal(t, "version", reqs[0].Command)
		})
	}
}

func TestDecodeLineTooLongIsFatalUnlessItIsAGet(t *testing.T) {
	cases := []struct {
		name  string
		line  string
		fatal bool
	}{
		{"get", "get " + strings.Repeat("q", 3*MaxLineLength), false},
		{"gets after spaces", "  gets " + strings.Repeat("q", 3*MaxLineLength), false},
		{"set", "set q 0 0 5" + strings.Repeat(" ", 3*MaxLineLength), true},
		{"set just too long", "set q 0 0 5" + strings.Repeat(" ", MaxLineLength-11), true},
		{"junk", strings.Repeat("x", 3*MaxLineLength), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewDecoder(strings.NewReader(tc.line+"\r\nhello\r\n"), 1024, 4096).Decode()
			var pe *ProtocolError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "CLIENT_ERROR line too long", pe.Reply)
			assert.Equal(t, tc.fatal, pe.Fatal)
		})
	}
}

func TestDecodeAbsurdLengthIsFatalWithoutAllocating(t *testing.T) {
	d := NewDecoder(strings.NewReader("set q 0 0 9223372036854775807\r\nxx"), 1024, 4096)
	allocs := testing.AllocsPerRun(1, func() {
		d = NewDecoder(strings.NewReader("set q 0 0 9223372036854775807\r\nxx"), 1024, 4096)
		_, err := d.Decode()
		var pe *ProtocolError
		require.ErrorAs(t, err, &pe)
		assert.True(t, pe.Fatal)
		assert.Contains(t, pe.Reply, "SERVER_ERROR object too large")
	})
	assert.Less(t, allocs, float64(20), "no allocation of the announced length")
}

func TestDecodeTruncatedRequests(t *testing.T) {
	for _, in := range []string{"get q", "set q 0 0 5\r\nhel", "set q 0 0 5\r\nhello\r", "set q 0 0 3000\r\nxx"} {
		_, errs := decodeAll(t, in, 1024)
		require.Len(t, errs, 1, "%q", in)
		assert.ErrorIs(t, errs[0], io.ErrUnexpectedEOF, "%q", in)
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder: it never panics, every
// refusal is a one-line reply, every value is within the limit, and it
// always makes progress (ends at EOF).
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		"set q 0 0 5\r\nhello\r\nget q/open\r\nget q/close/open/t=10\r\n",
		"gets a b/peek\r\nstats\r\nversion\r\nflush_all noreply\r\n",
		"set q 0 0 99999999999999\r\n",
		"set q 0 0 70\r\n" + strings.Repeat("z", 70) + "\r\n",
		"get q/t=\r\nget q/abort/peek\r\n\r\n\n",
		"delete q 0\r\nflush q\r\nshutdown\r\nquit\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder(bytes.NewReader(data), 64, 256)
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatalf("no progress after %d requests from %d bytes", i, len(data))
			}
			req, err := d.Decode()
			if err != nil {
				var pe *ProtocolError
				if errors.As(err, &pe) {
					if strings.ContainsAny(pe.Reply, "\r\n") {
						t.Fatalf("reply %q spans lines", pe.Reply)
					}
					if pe.Fatal {
						return
					}
					continue
				}
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(req.Value) > 64 {
				t.Fatalf("value of %d bytes over the limit", len(req.Value))
			}
			if req.Command == "get" || req.Command == "gets" {
				if len(req.Keys) == 0 || len(req.Keys) > MaxKeys {
					t.Fatalf("%d keys", len(req.Keys))
				}
			}
		}
	})
}
