package kestrel

import (
	"strconv"
	"sync/atomic"
	"time"
)

// counters are the server-wide figures of stats, since New.
type counters struct {
	connections atomic.Uint64 // connections accepted
	current     atomic.Int64  // connections open
	cmdGet      atomic.Uint64 // get keys that take an item (not peek)
	cmdPeek     atomic.Uint64
	cmdSet      atomic.Uint64
	cmdDelete   atomic.Uint64
	getHits     atomic.Uint64
	getMisses   atomic.Uint64
	totalItems  atomic.Uint64 // items stored by set
	openDropped atomic.Uint64 // open reads aborted because their connection ended
}

// QueueStats are the figures stats reports for one queue.
type QueueStats struct {
	Name string
	// Items counts the items waiting to be handed out: not done and not
	// under an open read.
	Items int64
	// Bytes sums the values of the items not done, those under an open
	// read included.
	Bytes int64
	// OpenTransactions counts the open reads, over every connection.
	OpenTransactions int
	// Expired counts the items skipped because they expired, since the
	// queue was opened.
	Expired uint64
	// Age is how long the next item to hand out has waited since it was
	// set (0 when there is none).
	Age time.Duration
}

// QueueStats returns the figures of every queue of the data directory,
// sorted by name (opening those not open yet).
func (s *Server) QueueStats() []QueueStats {
	var out []QueueStats
	for _, name := range s.queues.names() {
		q, err := s.queues.get(name)
		if err != nil {
			continue
		}
		st := q.Stats()
		qs := QueueStats{
			Name: name, Items: max(0, st.Pending-int64(st.Open)), Bytes: st.Bytes,
			OpenTransactions: st.Open, Expired: st.Expired,
		}
		if items, err := q.Peek(1); err == nil && len(items) > 0 {
			qs.Age = max(0, s.now().Sub(time.UnixMilli(items[0].Timestamp)))
		}
		out = append(out, qs)
	}
	return out
}

// stats writes Kestrel's stats: server-wide lines, then
// queue_<name>_<figure> for each queue, then END.
func (c *conn) stats() {
	s := c.s
	qs := s.QueueStats()
	var items, bytes int64
	for _, q := range qs {
		items += q.Items
		bytes += q.Bytes
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	line := func(name, value string) { c.reply("STAT " + name + " " + value) }
	line("uptime", i(int64(time.Since(s.start)/time.Second)))
	line("time", i(time.Now().Unix()))
	line("version", Version)
	line("curr_items", i(items))
	line("total_items", u(s.counters.totalItems.Load()))
	line("bytes", i(bytes))
	line("curr_connections", i(s.counters.current.Load()))
	line("total_connections", u(s.counters.connections.Load()))
	line("cmd_get", u(s.counters.cmdGet.Load()))
	line("cmd_set", u(s.counters.cmdSet.Load()))
	line("cmd_peek", u(s.counters.cmdPeek.Load()))
	line("cmd_delete", u(s.counters.cmdDelete.Load()))
	line("get_hits", u(s.counters.getHits.Load()))
	line("get_misses", u(s.counters.getMisses.Load()))
	line("open_reads_dropped", u(s.counters.openDropped.Load()))
	for _, q := range qs {
		p := "queue_" + q.Name + "_"
		line(p+"items", i(q.Items))
		line(p+"bytes", i(q.Bytes))
		line(p+"open_transactions", strconv.Itoa(q.OpenTransactions))
		line(p+"expired_items", u(q.Expired))
		line(p+"age", i(int64(q.Age/time.Millisecond)))
	}
	c.reply("END")
}
