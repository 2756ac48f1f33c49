// Package storage owns the partition Log (the ordered segments of one
// partition: append, read, roll, recover, truncate, flush, tail) and the
// Store (many topics and partitions under one root directory).
//
// # Using a log
//
// Open a partition directory, append records (or a Kafka client's batch
// with AppendBatch), read them back from an offset, and Close:
//
//	l, err := storage.Open(dir, storage.Options{Sync: storage.SyncAlways})
//	if err != nil { ... }
//	defer l.Close()
//	res, err := l.Append(storage.Record{Key: k, Value: v})
//	r := l.NewReader(res.FirstOffset)
//	for r.Next() {
//		rec := r.Record() // Offset, Key, Value, Headers, Timestamp
//	}
//	err = r.Err()
//
// Log.Wait blocks until the log grows past an offset (a consumer at the
// end), Log.ReadRegion hands whole batches to sendfile, and Log.Sync makes
// what was appended durable under a lazier sync policy. A process that
// reads a partition another process writes opens an OpenFollower. Many
// topics and partitions live under one root in a Store (OpenStore), which
// routes records to partitions by key (Store.Produce). A topic's
// configuration (TopicConfig) is set and read by setting name, seglog's
// or Kafka's (TopicSettings, TopicConfig.Set, TopicConfig.SetKafka).
// Check and Repair examine a data directory with the rules recovery uses.
//
// # Layout
//
//	<root>/
//	  <topic>-<partition>/
//	    00000000000000000000.log        batches (see package segment)
//	    00000000000000000000.index      sparse offset index
//	    00000000000000000000.timeindex  sparse time index
//	    recovery-point                  offsets below it are known flushed
//	    log-start-offset                the first readable offset
//	    leader-epoch-checkpoint         (epoch, first offset) per leader epoch
//	    high-watermark                  the replicated offset
//	    <offset>.snapshot               idempotent producers' state at <offset>
//	    manifest                        the segment list, written at a clean Close
//	    .clean-shutdown                 present only after a clean Close
//	    quarantine/                     files the log cannot use, moved aside (never read)
//
// The clean-shutdown marker lives in each partition directory rather than
// once at the root: a Store opens partitions lazily and closes them
// independently, so cleanliness is a property of each log. The marker and
// the manifest stay while the files are as the clean Close left them: they
// are removed, and the removal made durable, before the log's first change
// (an append, a roll, a truncation, a deletion, a recovery), so a crash
// after any change counts as unclean on the next open, and an open that
// changes nothing leaves the log clean. A clean open checks the manifest
// against a listing of the directory, unless the marker holds the
// directory's stamp (vfs.DirStamp) and the directory still has it: then no
// entry changed since the clean Close, and the manifest is taken as it is.
//
// # Offsets and reads
//
// Offsets are dense. StartOffset is the first readable offset and EndOffset
// the next to be assigned. A read at exactly EndOffset returns nothing and
// no error (the reader is caught up; Wait is how it waits for more); below
// StartOffset or beyond EndOffset it is ErrOffsetOutOfRange. Reads return
// whole batches, so the first batch may begin before the requested offset
// (as in Kafka); Reader skips those records.
//
// # Concurrency
//
// One writer at a time (Append, AppendBatch, Truncate, DeleteSegmentsBefore
// and Close serialize on the writer lock) and any number of readers. Readers
// take no log-wide lock: they load the segment list and the end offset
// atomically. The end offset is published after the batch bytes and index
// entries are written, so a reader never sees half a batch.
//
// A Log's state is in parts that each own their fields and lock, in a
// file of their own: the published view readers load (log.go), group
// commit (groupcommit.go), the background flusher of rolled segments
// (rollflusher.go), checkpoints (checkpoints.go), the clean-shutdown
// manifest and marker (cleanshutdown.go), the replication state
// (replication.go) and the tail waiters (tail.go). Locks are taken in one
// order: the writer lock, then the group-commit flag's lock, the
// checkpoint lock, the leader-epoch cache's lock, a segment's lock and the
// file budget's; the rolled-segment list's lock is taken last, with
// nothing locked inside it (the Log type's doc has the details).
//
// # Durability
//
// Options.Sync chooses when data is fsynced: never (the OS writes it back),
// every N records, every interval (a background goroutine), or on every
// append, where concurrent appenders share one fsync (group commit). A
// segment is always sealed and fsynced after it rolls, and the directory
// fsynced for its successor: by a goroutine of the log, so that the
// appender does not wait for the writeback or the journal (as Kafka
// flushes a rolled segment), unless everything in it was flushed already
// or eight rolled segments wait unsealed (then the roll seals it itself);
// until then the recovery point stays at or below its base (a crash
// rescans it, a follower opens it as it opens the active segment), and a
// failure fails the log. The recovery-point file is
// written (atomically: temp file, fsync, rename, directory fsync) on
// roll, after a rolled segment's fsync (without the directory fsync: the
// value before is as safe), by Checkpoint and the interval flusher, and
// at Close, and by Truncate after it fsynced everything it keeps; it
// may lag the flushed offset, which only means a longer rescan after a
// crash, and it never covers a byte that was not fsynced. After a crash,
// Open rescans only segments from the one holding the recovery point,
// validates every batch, rebuilds their indexes, and truncates at the
// first invalid batch past the recovery point, moving any later segments
// into quarantine. Data flushed before the crash is never lost.
//
// # Damage, holes and quarantine
//
// Bytes below the recovery point were fsynced and checkpointed: an
// invalid batch there (or data that ends below it) is damage, not a torn
// write. Open does not cut it: it reports a *DamageError (file, byte,
// offset; OpenStats.Damage, Stats.Damaged, a log line), serves reads
// below the damage, and refuses writes with ErrDamaged, writing no
// checkpoint, manifest or marker, until Repair (seglog repair) cuts there
// on an operator's word. A segment that ends before the next one begins,
// where that gap lies below the recovery point (or wherever a clean
// close's manifest names the segment gone), is a *HoleError naming the
// missing offsets, at open and on read; never an EOF. Past the recovery
// point such a gap is what a crash leaves of a roll: recovery cuts there.
//
// The log never deletes a file it does not understand. What it cannot
// use moves into the partition's quarantine/ folder, with a log line
// (Options.Logger) and an entry in OpenStats.Quarantined: segments that
// no longer follow on after recovery's cut, an index without its .log, a
// temporary file that is not one of its own. Its own leftovers (a
// checkpoint's temporary file, a segment renamed for deletion) are
// removed.
//
// # Check and Repair
//
// Check reports a partition's (or a data root's) problems as values, with
// recovery's rules and its scanner, and says of each whether Open repairs
// it by itself. Repair acts on them: it rebuilds sealed segments'
// indexes, lets an open cut torn tails and quarantine what it cannot use,
// and only with RepairOptions.TruncateAtDamage cuts at damage, reporting
// the offsets that go and keeping the bytes in quarantine.
//
// After a failed fsync the log refuses further writes (ErrFailed) until it
// is reopened: the kernel may have dropped the dirty pages, so nothing
// after the last successful fsync may be presented as durable.
package storage
