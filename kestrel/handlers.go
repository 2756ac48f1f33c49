package kestrel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/segment"
)

// FlagsHeader is the record header that keeps a set's flags when they are
// not 0 (decimal ASCII); a get hands them back.
const FlagsHeader = "memcache-flags"

// relativeLimit is memcache's rule for exptime: up to 30 days it counts
// seconds from now, above it is an absolute Unix time.
const relativeLimit = 30 * 24 * 60 * 60

// handle executes one request and writes its reply. It returns false when
// the connection is to be closed (quit, shutdown).
func (c *conn) handle(req *Request) bool {
	switch req.Command {
	case "get", "gets":
		c.get(req)
	case "set":
		c.set(req)
	case "delete":
		c.delete(req)
	case "flush":
		c.flushQueue(req)
	case "flush_all":
		c.flushAll(req)
	case "stats":
		c.stats()
	case "version":
		c.reply("VERSION " + Version)
	case "shutdown":
		if !c.s.opts.EnableShutdown {
			c.reply("CLIENT_ERROR shutdown is not enabled on this server")
			return true
		}
		c.s.log.Info("kestrel: shutdown command", "remote", c.nc.RemoteAddr().String())
		c.s.requestShutdown()
		return false
	case "quit":
		return false
	default:
		c.reply("ERROR")
	}
	return true
}

// queueError writes the reply for an error of opening or using a queue:
// a bad name is the client's, anything else the server's.
func (c *conn) queueError(name string, err error) {
	switch {
	case errors.Is(err, errBadName):
		c.reply("CLIENT_ERROR " + oneLine(err.Error()))
	case errors.Is(err, ErrClosed) || errors.Is(err, queue.ErrClosed):
		c.reply("SERVER_ERROR server closing")
	default:
		c.s.log.Error("kestrel: queue", "queue", name, "err", err)
		c.reply("SERVER_ERROR " + oneLine(err.Error()))
	}
}

// oneLine keeps a message on one reply line.
func oneLine(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch == '\r' || ch == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

// now reads the queues' clock.
func (s *Server) now() time.Time {
	if clk := s.opts.Queue.Clock; clk != nil {
		return clk.Now()
	}
	return time.Now()
}

// expiresAt turns a set's exptime into an absolute time in ms since the
// epoch (0: never), as memcache reads it: 0 never, up to 30 days seconds
// from now, above that a Unix time, negative already expired.
func expiresAt(exptime int64, now time.Time) int64 {
	switch {
	case exptime == 0:
		return 0
	case exptime < 0:
		return max(now.UnixMilli(), 1)
	case exptime <= relativeLimit:
		return now.UnixMilli() + exptime*1000
	case exptime > (1<<62)/1000:
		return 0 // past any clock: never
	default:
		return exptime * 1000
	}
}

func (c *conn) set(req *Request) {
	c.s.counters.cmdSet.Add(1)
	msg := queue.Message{Value: req.Value}
	if ms := expiresAt(req.Exptime, c.s.now()); ms != 0 {
		msg.Headers = append(msg.Headers, segment.RecordHeader{Key: []byte(queue.ExpiresAtHeader), Value: strconv.AppendInt(nil, ms, 10)})
	}
	if req.Flags != 0 {
		msg.Headers = append(msg.Headers, segment.RecordHeader{Key: []byte(FlagsHeader), Value: strconv.AppendUint(nil, uint64(req.Flags), 10)})
	}
	var err error
	// A delete may close the queue between the lookup and the append:
	// the second try opens the queue anew.
	for range 2 {
		var q *queue.Queue
		if q, err = c.s.queues.get(req.Queue); err != nil {
			break
		}
		if _, err = q.Append(msg); !errors.Is(err, queue.ErrClosed) {
			break
		}
	}
	if err != nil {
		c.queueError(req.Queue, err)
		return
	}
	c.s.counters.totalItems.Add(1)
	if !req.NoReply {
		c.reply("STORED")
	}
}

func (c *conn) get(req *Request) {
	qs := make([]*queue.Queue, len(req.Keys))
	for i, k := range req.Keys {
		q, err := c.s.queues.get(k.Queue)
		if err != nil {
			c.queueError(k.Queue, err)
			return
		}
		qs[i] = q
	}
	if line := c.refused(req.Keys); line != "" {
		c.reply(line)
		return
	}
	for i, k := range req.Keys {
		if !c.getKey(req, k, qs[i]) {
			return
		}
	}
	c.reply("END")
}

// refused returns the line that refuses a get for the connection's open
// reads, or "". Every key is checked, against the open reads as the keys
// before it would leave them (each open counted as handing out an item),
// before any item is handed out: a get is refused whole, as memcache
// drops the VALUEs of a get it answers with an error, and no item is
// taken for a reply the client will discard.
func (c *conn) refused(keys []Key) string {
	open := make(map[string]int, len(keys))
	for _, k := range keys {
		n, seen := open[k.Queue]
		if !seen {
			n = len(c.open[k.Queue])
		}
		if (k.Abort || k.Close) && n > 0 {
			n--
		}
		switch {
		case k.Abort || (k.Close && !k.Open):
		case k.Open && n >= c.s.opts.MaxOpenReads:
			return fmt.Sprintf("CLIENT_ERROR %d reads open on %s, at most %d: close or abort one first", n, k.Queue, c.s.opts.MaxOpenReads)
		case !k.Open && !k.Peek && n > 0:
			return fmt.Sprintf("CLIENT_ERROR a read is open on %s: close or abort it before a get that removes", k.Queue)
		case k.Open:
			n++
		}
		open[k.Queue] = n
	}
	return ""
}

// getKey executes one key of a get, writing its VALUE when an item is
// handed out. It returns false after writing an error reply.
func (c *conn) getKey(req *Request, k Key, q *queue.Queue) bool {
	if k.Abort {
		if r, ok := c.popOpen(k.Queue); ok {
			if err := r.q.Abort(r.lease); err != nil && !gone(err) {
				c.queueError(k.Queue, err)
				return false
			}
		}
		return true
	}
	if k.Close {
		if r, ok := c.popOpen(k.Queue); ok {
			if err := r.q.Confirm(r.lease); err != nil && !gone(err) {
				c.queueError(k.Queue, err)
				return false
			}
		}
		if !k.Open {
			return true
		}
	}
	var it queue.Item
	var ok bool
	if k.Peek {
		c.s.counters.cmdPeek.Add(1)
		items, err := q.Peek(1)
		if err != nil && !errors.Is(err, queue.ErrClosed) {
			c.queueError(k.Queue, err)
			return false
		}
		if len(items) > 0 {
			it, ok = items[0], true
		}
	} else {
		c.s.counters.cmdGet.Add(1)
		var err error
		it, ok, err = c.take(q, k)
		if err != nil {
			c.queueError(k.Queue, err)
			return false
		}
	}
	if !ok {
		c.s.counters.getMisses.Add(1)
		return true
	}
	c.s.counters.getHits.Add(1)
	if k.Open {
		c.open[k.Queue] = append(c.open[k.Queue], openRead{q: q, lease: it.Lease})
	}
	c.writeValue(req, k, it)
	return true
}

// take hands out the next item of q (under a lease for /open), waiting
// up to the key's t= (not at all without one). ok is false when there was
// none: the wait ended, the queue was deleted, or the server is closing.
// Before it waits, it sends the replies so far, and it stops waiting
// when the client leaves: a gone client's get takes no item.
func (c *conn) take(q *queue.Queue, k Key) (queue.Item, bool, error) {
	poll, cancel := context.WithCancel(c.s.ctx)
	cancel() // a done context makes the queue poll
	it, err := c.takeFrom(poll, q, k)
	if err != nil && errors.Is(err, context.Canceled) && k.HasWait && k.Wait > 0 && c.flush() == nil {
		ctx, cancel := context.WithTimeout(c.s.ctx, k.Wait)
		stopWatch := c.watch(cancel)
		it, err = c.takeFrom(ctx, q, k)
		stopWatch()
		cancel()
	}
	switch {
	case err == nil:
		return it, true, nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, queue.ErrClosed):
		return it, false, nil
	default:
		return it, false, err
	}
}

func (c *conn) takeFrom(ctx context.Context, q *queue.Queue, k Key) (queue.Item, error) {
	if k.Open {
		return q.Open(ctx)
	}
	return q.Get(ctx)
}

// popOpen removes and returns the connection's oldest open read on a
// queue.
func (c *conn) popOpen(name string) (openRead, bool) {
	reads := c.open[name]
	if len(reads) == 0 {
		return openRead{}, false
	}
	r := reads[0]
	if len(reads) == 1 {
		delete(c.open, name)
	} else {
		c.open[name] = reads[1:]
	}
	return r, true
}

// writeValue writes "VALUE <key> <flags> <bytes>[ <cas>]", the value and
// "\r\n". The key is echoed as sent, options included, so that clients
// that match replies to keys find it; gets adds the item's offset as the
// cas field.
func (c *conn) writeValue(req *Request, k Key, it queue.Item) {
	var flags uint64
	for _, h := range it.Headers {
		if string(h.Key) == FlagsHeader {
			flags, _ = strconv.ParseUint(string(h.Value), 10, 32)
		}
	}
	b := c.w.AvailableBuffer()
	b = append(b, "VALUE "...)
	b = append(b, k.Raw...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, flags, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(it.Value)), 10)
	if req.Command == "gets" {
		b = append(b, ' ')
		b = strconv.AppendInt(b, it.Offset, 10)
	}
	b = append(b, "\r\n"...)
	_, _ = c.w.Write(b)
	_, _ = c.w.Write(it.Value)
	_, _ = c.w.WriteString("\r\n")
}

func (c *conn) delete(req *Request) {
	c.s.counters.cmdDelete.Add(1)
	// This connection's reads on the queue go with it.
	delete(c.open, req.Queue)
	found, err := c.s.queues.delete(req.Queue)
	if err != nil {
		c.queueError(req.Queue, err)
		return
	}
	if req.NoReply {
		return
	}
	if found {
		c.reply("DELETED")
	} else {
		c.reply("NOT_FOUND")
	}
}

func (c *conn) flushQueue(req *Request) {
	q, err := c.s.queues.get(req.Queue)
	if err == nil {
		_, err = q.Flush()
	}
	if err != nil {
		c.queueError(req.Queue, err)
		return
	}
	delete(c.open, req.Queue)
	c.reply("END")
}

func (c *conn) flushAll(req *Request) {
	for _, name := range c.s.queues.names() {
		q, err := c.s.queues.get(name)
		if err == nil {
			_, err = q.Flush()
		}
		if err != nil {
			c.queueError(name, err)
			return
		}
	}
	clear(c.open)
	if !req.NoReply {
		c.reply("OK")
	}
}
