package kestrel

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Limits of the decoder.
const (
	// MaxLineLength is the longest command line, "\r\n" included: a
	// longer one is answered "CLIENT_ERROR line too long" and skipped
	// when it is a get's; any other closes the connection, as memcache
	// closes it (a set's value would be read as commands).
	MaxLineLength = 2048
	// MaxKeys is the most keys one get names.
	MaxKeys = 64
	// MaxWait is the longest t= of a get: Kestrel's option was a 32-bit
	// count of milliseconds.
	MaxWait = math.MaxInt32 * time.Millisecond
)

// ErrProtocol is wrapped by every *ProtocolError.
var ErrProtocol = errors.New("kestrel: protocol error")

// ProtocolError is a request the decoder refused: Reply is the line the
// server answers ("ERROR", "CLIENT_ERROR ...", "SERVER_ERROR ..."),
// without "\r\n". After a Fatal one the stream cannot be followed any
// more (a value too large to skip): the server answers and closes the
// connection. After any other, the bytes of the bad request are consumed
// and the next Decode reads the next request.
type ProtocolError struct {
	Reply string
	Fatal bool
}

func (e *ProtocolError) Error() string { return "kestrel: " + e.Reply }

// Unwrap returns ErrProtocol.
func (e *ProtocolError) Unwrap() error { return ErrProtocol }

func clientError(format string, args ...any) *ProtocolError {
	return &ProtocolError{Reply: "CLIENT_ERROR " + fmt.Sprintf(format, args...)}
}

// Request is one decoded command.
type Request struct {
	// Command is the command's name as sent, lower case: get, gets, set,
	// delete, flush, flush_all, stats, version, shutdown, quit.
	Command string
	// Keys are a get's keys, in order.
	Keys []Key
	// Queue is the queue of set, delete and flush.
	Queue string
	// Flags, Exptime and Value are set's; Exptime as sent (see the
	// package doc).
	Flags   uint32
	Exptime int64
	Value   []byte
	// NoReply is set when a set, delete or flush_all ended in "noreply".
	NoReply bool
}

// Key is one key of a get: a queue name and the options joined to it
// with "/".
type Key struct {
	// Raw is the key as sent, options included: the VALUE line echoes it.
	Raw   string
	Queue string
	// Wait is how long to wait for an item (t=); HasWait is false when
	// the key has no t=: then a get does not wait.
	Wait    time.Duration
	HasWait bool
	Open    bool
	Close   bool
	Abort   bool
	Peek    bool
}

// Decoder reads requests from a connection. It holds no more than one
// command line and one value in memory, and checks a value's length
// against its limits before it reads or allocates anything for it.
type Decoder struct {
	r          *bufio.Reader
	maxValue   int
	maxSwallow int64
}

// NewDecoder returns a Decoder reading r. Values longer than maxValue
// bytes are refused ("SERVER_ERROR object too large for cache"): up to
// maxSwallow bytes they are read and dropped and the connection goes on;
// longer ones are a fatal error.
func NewDecoder(r io.Reader, maxValue int, maxSwallow int64) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, MaxLineLength+2), maxValue: maxValue, maxSwallow: max(maxSwallow, int64(maxValue))}
}

// Buffered reports whether bytes of a next request are already read:
// the server flushes its replies when none are.
func (d *Decoder) Buffered() bool { return d.r.Buffered() > 0 }

// Gone waits until the stream ends or fails past the bytes already
// read, and reports true then; false when a read deadline stopped the
// wait, or when its buffer is full. It reads ahead without consuming:
// Decode reads the same bytes next. It must not run beside Decode.
func (d *Decoder) Gone() bool {
	for {
		n := d.r.Buffered()
		if n >= d.r.Size() {
			return false
		}
		if _, err := d.r.Peek(n + 1); err != nil {
			return !errors.Is(err, os.ErrDeadlineExceeded)
		}
	}
}

// Decode reads the next request. It returns a *ProtocolError for a
// request it refuses, and the reader's error (io.EOF at the end of the
// stream, io.ErrUnexpectedEOF inside a request) when the stream ends or
// fails.
func (d *Decoder) Decode() (*Request, error) {
	line, err := d.readLine()
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return nil, &ProtocolError{Reply: "ERROR"}
	}
	req := &Request{Command: strings.ToLower(fields[0])}
	args := fields[1:]
	switch req.Command {
	case "get", "gets":
		return req, d.decodeGet(req, args)
	case "set":
		return req, d.decodeSet(req, args)
	case "delete":
		// memcache allows a time of 0 after the key.
		args, req.NoReply = noReply(args)
		if len(args) == 2 && args[1] == "0" {
			args = args[:1]
		}
		if len(args) != 1 {
			return nil, clientError("usage: delete <queue> [noreply]")
		}
		req.Queue = args[0]
	case "flush":
		if len(args) != 1 {
			return nil, clientError("usage: flush <queue>")
		}
		req.Queue = args[0]
	case "flush_all":
		args, req.NoReply = noReply(args)
		if len(args) > 1 || (len(args) == 1 && args[0] != "0") {
			return nil, clientError("usage: flush_all [noreply] (no delay)")
		}
	case "stats", "version", "shutdown", "quit":
		if len(args) > 0 && req.Command != "stats" {
			return nil, clientError("usage: %s", req.Command)
		}
	default:
		return nil, &ProtocolError{Reply: "ERROR"}
	}
	return req, nil
}

func noReply(args []string) ([]string, bool) {
	if n := len(args); n > 0 && args[n-1] == "noreply" {
		return args[:n-1], true
	}
	return args, false
}

// readLine returns the next line without its "\n" or "\r\n". A line over
// MaxLineLength is read to its end and refused, fatally unless it is a
// get's.
func (d *Decoder) readLine() ([]byte, error) {
	line, err := d.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		tooLong := lineTooLong(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = d.r.ReadSlice('\n')
		}
		if err != nil {
			return nil, unexpected(err)
		}
		return nil, tooLong
	}
	if err != nil {
		if len(line) > 0 {
			return nil, unexpected(err)
		}
		return nil, err
	}
	if len(line) > MaxLineLength {
		return nil, lineTooLong(line)
	}
	line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
	return line, nil
}

// lineTooLong refuses a line over MaxLineLength that starts with line:
// fatally unless it is a get's.
func lineTooLong(line []byte) *ProtocolError {
	pe := clientError("line too long")
	cmd := bytes.TrimLeft(line, " ")
	pe.Fatal = !bytes.HasPrefix(cmd, []byte("get ")) && !bytes.HasPrefix(cmd, []byte("gets "))
	return pe
}

// unexpected turns an EOF inside a request into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (d *Decoder) decodeGet(req *Request, args []string) error {
	if len(args) == 0 {
		return clientError("usage: %s <queue>[/options] ...", req.Command)
	}
	if len(args) > MaxKeys {
		return clientError("at most %d keys in one get", MaxKeys)
	}
	req.Keys = make([]Key, 0, len(args))
	for _, raw := range args {
		k, err := ParseKey(raw)
		if err != nil {
			return err
		}
		req.Keys = append(req.Keys, k)
	}
	return nil
}

// ParseKey splits a get's key into the queue name and its options: t=MS,
// open, close, abort, peek, joined with "/" in any order. Kestrel's
// rules on combining them hold: peek and abort go with neither open nor
// close, nor with each other. An unknown option is refused (Kestrel
// ignored it: a mistyped "/open" would have been a get that removes the
// item for good).
func ParseKey(raw string) (Key, error) {
	parts := strings.Split(raw, "/")
	k := Key{Raw: raw, Queue: parts[0]}
	if k.Queue == "" {
		return k, clientError("empty queue name in %q", raw)
	}
	for _, opt := range parts[1:] {
		switch {
		case opt == "open":
			k.Open = true
		case opt == "close":
			k.Close = true
		case opt == "abort":
			k.Abort = true
		case opt == "peek":
			k.Peek = true
		case strings.HasPrefix(opt, "t="):
			ms, err := strconv.ParseInt(opt[2:], 10, 64)
			if err != nil || ms < 0 || ms > int64(MaxWait/time.Millisecond) {
				return k, clientError("bad timeout %q: want t=MILLISECONDS, 0 to %d", opt, int64(MaxWait/time.Millisecond))
			}
			k.Wait, k.HasWait = time.Duration(ms)*time.Millisecond, true
		default:
			return k, clientError("unknown option %q: want t=MS, open, close, abort or peek", opt)
		}
	}
	if ((k.Peek || k.Abort) && (k.Open || k.Close)) || (k.Peek && k.Abort) {
		return k, clientError("options of %q do not go together: peek and abort take neither open nor close", raw)
	}
	return k, nil
}

func (d *Decoder) decodeSet(req *Request, args []string) error {
	args, req.NoReply = noReply(args)
	if len(args) != 4 {
		return clientError("bad command line format: usage: set <queue> <flags> <exptime> <bytes> [noreply]")
	}
	req.Queue = args[0]
	flags, err1 := strconv.ParseUint(args[1], 10, 32)
	exptime, err2 := strconv.ParseInt(args[2], 10, 64)
	n, err3 := strconv.ParseInt(args[3], 10, 64)
	if err3 != nil || n < 0 {
		// The value's length is unknown: its bytes will be read as
		// command lines, as memcache does.
		return clientError("bad command line format: bytes %q", args[3])
	}
	if n > int64(d.maxValue) {
		if n > d.maxSwallow {
			return &ProtocolError{Reply: fmt.Sprintf("SERVER_ERROR object too large for cache (%d bytes, at most %d)", n, d.maxValue), Fatal: true}
		}
		if _, err := d.r.Discard(int(n) + 2); err != nil {
			return unexpected(err)
		}
		return &ProtocolError{Reply: fmt.Sprintf("SERVER_ERROR object too large for cache (%d bytes, at most %d)", n, d.maxValue)}
	}
	value := make([]byte, n+2)
	if _, err := io.ReadFull(d.r, value); err != nil {
		return unexpected(err)
	}
	if !bytes.HasSuffix(value, []byte("\r\n")) {
		if value[len(value)-1] != '\n' {
			if _, err := d.readLine(); err != nil && !errors.Is(err, ErrProtocol) {
				return err
			}
		}
		return clientError("bad data chunk: the value is not followed by \\r\\n")
	}
	if err1 != nil || err2 != nil {
		return clientError("bad command line format: flags %q, exptime %q", args[1], args[2])
	}
	req.Flags, req.Exptime, req.Value = uint32(flags), exptime, value[:n:n]
	return nil
}
