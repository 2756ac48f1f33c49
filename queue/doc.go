// Package queue is a Kestrel-style work queue on top of one storage.Log
// (the items, one record each) and a position in an offsets.Store (how far
// the queue is done). It owns the handing out of items: plain reads (Get),
// transactional reads under a lease (Open, then Confirm or Abort), lease
// expiry, per-item expiry (TTL) with a timer-driven sweep, and the durable
// confirmed position. It owns no file: what it keeps on disk is records
// in the log and one commit in the offsets store.
//
//	q, err := queue.Open(store, ost, "jobs", queue.Options{LeaseTimeout: time.Minute})
//	_, err = q.Put([]byte("resize img-17"), time.Hour) // expires in an hour
//	it, err := q.Open(ctx)                             // waits until ctx is done
//	err = process(it.Value)
//	if err != nil { q.Abort(it.Lease) } else { err = q.Confirm(it.Lease) }
//
// # On disk
//
// Open(store, ost, name) keeps the queue named name in a data directory
// as a topic with one partition and a position of the consumer group
// Group ("__queue"):
//
//	<root>/<name>-0/     the items: a storage.Log, one record per item
//	<root>/offsets/      the offsets store; the queue's position is the
//	                     commit of group "__queue", topic name, partition 0
//
// So seglog topics, consume and verify see a queue's items, seglog offsets
// --group __queue its position and backlog, and the retention cleaner's
// consumed policy deletes the segments the queue is done with. New takes
// any log and any (group, topic, partition) key instead.
//
// # Position
//
// The head is the lowest offset that is not done. An offset is done when
// its item was confirmed (Confirm, or Get), or skipped because it expired.
// Items may be confirmed out of order (several leases are open at once),
// so the head advances only over a contiguous done prefix: confirming
// offset 7 while 5 is still leased leaves the head at 5 and puts 7 in the
// confirmed-above set, kept in memory; when 5 is confirmed the head jumps
// past 5, 6 and 7 (if 6 is done too).
//
// Every commit writes both: the head as the committed offset and the
// confirmed-above set as the commit's metadata, in one journal record of
// the offsets store (atomic: after a crash, the two of one commit or of
// the commit before). The metadata is "q1" followed by one " GAP+LEN" per
// run of consecutive done offsets, GAP being the run's first offset minus
// the end of the previous run (the head for the first run) and LEN its
// length, in decimal: head 5 with 7, 8 and 10 done is "q1 2+2 1+1". Empty
// metadata is the empty set (what seglog offsets reset writes). New reads
// both back and never hands out an offset of the set.
//
// Options.Window caps the items in flight: read at or above the head and
// not yet done (leased, waiting to be handed out again, or confirmed above
// the head). A full window makes Get and Open wait for the head to move.
// It bounds the set, and so the metadata, to about 2 bytes per item of the
// window (MaxWindow keeps it within the offsets store's default limit of
// 4096 bytes).
//
// # Leases
//
// Open hands out an item under a lease, a LeaseID new at each handing out,
// expiring Options.LeaseTimeout later by Options.Clock. Confirm marks the
// item done; Abort hands it back. A lease whose deadline has passed is
// expired: its item is handed out again (to the next Get or Open, which
// a waiting call's timer wakes), and Confirm or Abort of it returns
// ErrLeaseExpired even if no one has taken the item yet, so an item is
// never both confirmed and handed out again after its deadline. Confirm or
// Abort of a lease that is not open (already confirmed or aborted, never
// issued) returns ErrUnknownLease. Items handed back (aborted, expired)
// are handed out before items never handed out, lowest offset first, as
// Kestrel put an aborted item back at the head of its queue.
//
// # Expiry
//
// An item with an ExpiresAtHeader (an absolute time in milliseconds since
// the Unix epoch; Put and Append write it from a TTL) expires at that
// time. Kestrel checked expiry in two places, and so does this queue:
//
//   - on consume: Get and Open skip an item whose expiry has passed (it
//     becomes done and is counted in Stats.Expired); Peek leaves it out;
//   - on a timer: a goroutine started by New (and stopped by Close, which
//     waits for it) runs Sweep every Options.SweepInterval; Sweep hands
//     expired leases' items back, discards the expired items at the head
//     until an item that has not expired or an open lease, and commits the
//     head when it moved, so that retention can free them.
//
// # Durability
//
// A confirmed item is never handed out again, even after a crash: Confirm
// (and Get, before it returns the item) returns only after a commit that
// holds the confirmation has returned, and with the offsets store under
// SyncAlways (its default) that commit is fsynced. Commits are serialized
// and each commits the latest state, so concurrent confirms share one
// (group commit), and a commit never goes back. Under the store's other
// sync policies a crash may undo the confirmations of the last interval:
// their items are handed out again.
//
// No item is lost by a crash with a lease open: leases live in memory only
// (like Kestrel's open transactions), so after a restart every item that
// was not confirmed is handed out again, in offset order. Get is at most
// once (the item is confirmed before the caller has it); Open and Confirm
// are at least once. Skipped expired items are committed with the next
// commit (Confirm, Get, Sweep, Close); a crash before it only makes the
// next Queue skip them again.
//
// Items are as durable as the log's Options.Sync makes their append
// (SyncAlways: fsynced before Put returns). Retention by age or size may
// delete items the queue has not finished: they are counted in Stats.Lost
// and the head moves past them. The log must not be truncated below what
// the queue has read.
//
// A failed commit makes the queue fail: the offsets store refuses writes
// after a failed fsync, so every later call returns that error (Stats.Err)
// until the queue, the store and the log are reopened. The confirmations
// it did not make durable are then handed out again.
//
// # Concurrency
//
// All methods are safe for concurrent use. One mutex guards the state;
// a commit runs outside it (under a second mutex that orders commits), so
// items are handed out while a commit's fsync runs. A Get or Open that
// waits does not poll: it waits on Log.Wait (in a goroutine it joins
// before returning) for an append, on a channel for an abort, a confirm
// that moved the head, an expired lease (a Clock timer set to the earliest
// deadline) or Close, and on its context. One Queue per key: two Queues on
// one position would hand out the same items.
package queue
