// Package retention owns the cleaner: the policies that decide which
// segments of a partition are no longer needed (consumed, too old, over a
// size budget), a background goroutine that applies them on an interval,
// an on-demand RunOnce and a dry run that only reports. It owns no files:
// deciding is here (Plan, a pure function of a segment listing), deleting
// is the storage's (storage.Store.AdvanceStartOffsets, and
// storage.Log.DeleteSegmentsBefore).
//
// # Policies
//
// A Policy is chosen per topic (Options.Topics, whole Policy) with a
// default (Options.Default). Its parts combine with OR: a segment goes if
// any enabled part says so.
//
//   - Consumed: a segment goes when MinCommitted(topic, partition) >= its
//     NextOffset, that is when every group that reads the topic has
//     committed past its last record. A group that reads the topic but has
//     not committed on the partition counts as 0 and holds everything. When
//     no group reads the topic, nothing counts as consumed.
//   - MaxAge: a segment goes when its newest timestamp (SegmentInfo.
//     MaxTimestamp) is more than MaxAge before now.
//   - MaxBytes: the oldest segments go while the partition's bytes (every
//     .log, the active one included) exceed MaxBytes.
//
// A sealed segment that holds no records qualifies under every enabled
// part: deleting it loses nothing. Then two caps apply: only a prefix
// goes (the first segment that no part selects stops the walk, so
// retention never makes a hole), the active segment never goes, and at
// least MinSegments segments (the active one included) are kept. A Policy
// with no part enabled deletes nothing, and its partitions are not even
// opened.
//
// # Running
//
// RunOnce walks every partition of every topic of the Store, a few
// partitions at a time (Options.Workers). For each it lists the segments,
// asks Consumed when the policy needs it and calls Plan; then the store
// advances every planned partition's start offset, to the NextOffset of
// the last segment planned, in one durable write, which also takes the
// segments out of the logs. RunOnce returns then: a Deletion in the Report
// is a segment that has left its log for good (readers get
// storage.ErrOffsetOutOfRange below the new start), and the store removes
// its files in the background (storage.Store.WaitDeleted says when the
// space is free; see Cost). A failure on one partition (a log that does
// not open, a listing that fails, a start offset that cannot be written,
// even a panic) is a Failure in the Report and a count in Stats; the
// other partitions go on, and the partition is tried again on the next
// run. Files the store failed to remove in the background
// (storage.Store.DeletionFailures) are removed by the next run, with
// DeleteSegmentsBefore, or are that run's Failure. The cleaner never
// stops because of a partition. Runs are serialized: a RunOnce waits for
// a running one.
//
// Start runs RunOnce every Options.Interval in one goroutine that Close
// stops and waits for. Close does not close the Store.
//
// # Crashes
//
// The cleaner keeps no state on disk. The new start offsets are durable
// (the store's log-start-offset-checkpoint, or a partition's own
// log-start-offset, replaced atomically) before RunOnce returns and
// before any file is removed; storage.Open deletes segments wholly below
// the start offset and orphaned index files. So a crash at any point
// leaves either the old start offset with every file (the deletion did not
// happen and the next run plans it again) or the new start offset, with
// the files below it possibly present (the store's background removal had
// not got to them, or was stopped by its Close) and removed by the next
// open: never a hole in the offsets, never an index without its log, and
// never a start that moves back. Readers inside a deleted segment finish
// their read or get storage.ErrOffsetOutOfRange; a consumer whose position
// fell below the start offset gets ErrOffsetOutOfRange from its read, and
// resets to StartOffset (or to FirstUnexpired of it).
//
// # Cost
//
// Listing and planning are cheap (about 25-45 ms for 1,000 partitions of
// 20 segments once segment metadata is known). A run plans every
// partition first, then makes all the new start offsets durable with one
// write (storage.Store.AdvanceStartOffsets: the store's start-offset
// checkpoint, one fsync pair whatever the number of partitions), and
// returns. The store then removes the files on its own workers, with no
// fsync but one directory fsync per log that was opened after a clean
// shutdown and has not changed since: files a crash brings back lie below
// the durable start and the next open removes them. On the benchmark's
// 1,000 partitions (10,000 segments, 30,000 files) RunOnce takes about
// 0.1 s and the space is free about 0.9 s after it began (it was 0.56 s
// for both when RunOnce removed the files itself: the removal is later,
// the run is not held up by it). When that one write fails (a full disk),
// each partition makes its own start offset durable and removes its files
// within the run, as DeleteSegmentsBefore does alone.
// The first listing of a just-opened log reads every sealed segment's time
// index (storage.Log.Segments reports MaxTimestamp). See
// BenchmarkRunOnce1000x20.
//
// # Expiry at consumption
//
// As Kestrel does, expiry need not wait for the timer: FirstUnexpired tells
// a consumer where the first segment that is not expired under an age limit
// begins, so it can skip an expired head that the cleaner has not deleted
// yet. It reads the segment listing only and deletes nothing.
package retention
