// Package kestrel serves Kestrel's memcache text protocol over the queues
// of one data directory (package queue): any memcache client enqueues
// with set and dequeues with get, reliably with get's /open and /close.
// It owns the protocol: the decoder of the bytes a client sends
// (decode.go: Decoder, the one place that reads them), the server (the
// listener, one goroutine per connection, the order of replies, limits
// and timeouts: server.go, conn.go), the commands (handlers.go), the
// queues it opened (registry.go) and the stats it reports (stats.go). It
// owns no file: items and positions are the queue package's.
//
// # Commands
//
//	set <queue> <flags> <exptime> <bytes> [noreply]\r\n<value>\r\n
//	    appends an item; STORED once the append is done (fsynced under
//	    the log's SyncAlways). exptime as memcache reads it: 0 never,
//	    up to 30 days seconds from now, above that an absolute Unix
//	    time, negative already expired (stored and never handed out).
//	    Flags other than 0 are kept (header memcache-flags) and handed
//	    back.
//	get <queue>[/options] ...   (gets too: its VALUE lines add the
//	    item's offset as cas)
//	    hands out the next item: "VALUE <key> <flags> <bytes>", the
//	    value, then END; END alone when there is none. Options, joined
//	    with "/" in any order:
//	      t=<ms>  wait up to that long for an item (no t=: do not wait)
//	      open    hand the item out under an open read
//	      close   confirm this connection's oldest open read on the queue
//	      abort   hand that read's item back (answers END)
//	      peek    show the next item without handing it out
//	    close/open confirms and opens the next in one round trip. peek
//	    and abort take neither open nor close. Without open or peek the
//	    item is removed for good before it is sent (at most once).
//	delete <queue> [noreply]   removes the queue, items and position:
//	    DELETED, or NOT_FOUND
//	flush <queue>             discards every item (open reads too): END
//	flush_all [noreply]       flushes every queue: OK
//	stats                     STAT lines, then END
//	version                   VERSION 1.0.0-seglog-kestrel
//	shutdown                  stops the server (only with
//	                          Options.EnableShutdown); no reply
//	quit                      closes the connection
//
// A get that waits (t=) first sends the replies of the requests before
// it, and stops waiting (END) when its client leaves or closes its
// sending side: a gone client's get takes no item.
//
// A queue is created on first use; its name follows the topic-name rule
// (storage.ValidateTopic). Replies come in the order of the requests,
// pipelined requests included (they are flushed together when no request
// is waiting). A request the decoder refuses is answered ERROR (unknown
// command, empty line), "CLIENT_ERROR ..." (a malformed line, a get's
// line over MaxLineLength, a value not followed by \r\n, a bad key
// option, a bad queue name) or "SERVER_ERROR object too large for cache"
// (a value over Options.MaxItemSize), and the connection goes on; only a
// value too large to skip (over 64 times the limit) and a line over
// MaxLineLength that is not a get's (its value would be read as commands)
// close it, after their reply.
//
// # Open reads
//
// An open read belongs to its connection: close and abort act on the
// connection's own reads, oldest first, and when the connection closes,
// dies or idles out, its open reads are aborted and their items handed
// out again. An item is never handed to two open readers: the queues'
// leases do not expire on a clock (DefaultLeaseTimeout) but with their
// connection. A connection holds at most Options.MaxOpenReads open reads
// per queue, and a get that removes (no open, no peek) is refused while
// it holds one on that queue (Kestrel closed the connection for both).
//
// # Where this differs from Kestrel
//
// Replies of memcache's own commands are memcache's, so that client
// libraries accept them: delete answers DELETED or NOT_FOUND (Kestrel:
// END), flush_all answers OK (Kestrel: "Flushed all queues."). VALUE
// echoes the key as sent, options included (Kestrel: the bare queue
// name), as clients that match replies to keys expect. An unknown command
// is answered ERROR and a bad option CLIENT_ERROR without closing the
// connection (Kestrel closed it; it ignored unknown options). exptime
// uses memcache's 30-day rule (Kestrel's cut was 1,000,000 seconds).
// peek does not wait for t=. flush discards open reads' items too.
//
// # Durability
//
// A set answers STORED after queue.Append returned: with the log under
// storage.SyncAlways the item survives a crash of the server. close
// answers after queue.Confirm committed the position (fsynced under the
// offsets store's SyncAlways): a confirmed item is never handed out
// again. A get without open confirms before it sends the item.
//
// # Stopping
//
// Serve(ctx) accepts until ctx is done, Close is called or a shutdown
// command arrives. Close stops accepting, lets each connection finish the
// request it is executing (a get waiting on t= ends with END), aborts
// every open read, closes the connections, waits for every goroutine it
// started and closes its queues. The data directory's stores stay the
// caller's.
package kestrel
