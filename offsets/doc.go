// Package offsets is seglog's durable store of consumer-group positions: per
// consumer group, per topic-partition, the next offset the group will read
// (Kafka's convention) and an optional metadata string.
//
// It depends on nothing of seglog but vfs, through which every file
// operation goes. The retention cleaner asks it MinCommitted and Readers.
//
// # Model
//
// A group reads a set of topics. A group registers interest in a topic by
// Subscribe, or implicitly by committing on one of its partitions. Readers
// lists the groups with interest in a topic. MinCommitted(topic, p) is the
// smallest committed offset over the readers of the topic, where a reader
// with no commit on p counts as 0: a registered but idle group holds the
// whole partition. Unsubscribe removes the interest and the group's
// positions on that topic (it no longer holds retention there; like Kafka's
// offset deletion for a topic). A group exists while it has interest in at
// least one topic; DeleteGroup removes it with all its positions. Every
// read answers from the durable writes only (see Durability and
// concurrency).
//
// Names (group, topic) are 1 to MaxNameBytes bytes of any content: they
// never become paths here. Partitions and offsets are non-negative.
// Metadata is at most Options.MaxMetadataBytes. A batch must encode to at
// most MaxRecordBytes. Bad arguments are errors wrapping ErrInvalid.
// DeleteTopic removes every group's positions on a topic and interest in
// it (a deleted topic, recreated later, is not skipped by old positions).
//
// # Several stores on one directory
//
// Any number of Stores may be open on one directory at once, in one process
// or several (consumer processes of different groups, or of one group on
// different partitions, and a broker): they share one journal. Each
// append to it - a Store's buffered records, written by one write - is
// made under an exclusive flock of append.lock, held only for that write:
// the holder first reads what the others appended since it last looked
// (so its state follows theirs), then appends at the end (the file is
// opened O_APPEND), and unlocks. It fsyncs after unlocking, so that the
// next store's append overlaps its fsync; an fsync covers every byte of
// the file written before it, whoever wrote it. The journal is therefore
// one sequence of whole records, in the order the lock was taken, and
// every store applies it in that order: the rule for two stores that
// commit to the same (group, topic, partition) is that the commit later in
// the journal wins - the last durable writer, in journal order, whatever
// the commits' times. Every store that follows the journal reaches the
// same state. A CommitBatch is one record, so it is all-or-nothing for
// every reader too; DeleteGroup, DeleteTopic and Unsubscribe remove what
// precedes them in the journal, whichever store wrote it.
//
// A store learns what the others did by one fstat of the journal it
// follows: a larger size means records to read; a link count of 0 means a
// compaction replaced the journal (it then rereads the directory: the new
// snapshot and journal); a smaller size means a journal cut by a
// RecoverCorrupt Open (it rereads too). Under the append lock, a store also
// checks that the next journal does not exist (a compaction that a crash
// interrupted leaves it, the journal still linked) before appending.
//
// A store that was killed in the middle of a write leaves a torn record at
// the journal's end, unlocked. The next store to take the append lock finds
// bytes after the last whole record while nobody writes (no store writes
// without the lock): it cuts them, fsyncs, and appends after. A torn record
// was never acknowledged (its fsync had not returned). Bytes after which a
// valid record follows are not a torn append but damage: the store fails
// (a *CorruptError, sticky) rather than append after them.
//
// Each writing Store holds LOCK with a shared flock for its life. A seglog
// from before the shared journal held it exclusively: the two versions
// exclude each other (this one's Open returns ErrLocked), so a store never
// appends beside a writer that takes no append lock.
//
// # Reads follow the journal
//
// Every read (Fetch, MinCommitted, Readers, Groups, Positions, Stats)
// first follows the journal - one fstat when nothing changed - and so sees
// every commit that any store acknowledged before the read began. Records
// of other stores that it reads are applied only once durable: if no fsync
// this store made covers them yet, the read fsyncs the journal first
// (shared with a group commit in progress). That fsync writes nothing of
// its own: it makes sure that what another process wrote (and perhaps
// died before fsyncing) reaches the disk before this store answers from
// it. Refresh does the same on demand and returns what went wrong; a read
// answers from what it had when following fails (Stats.RefreshErr).
//
// # Read-only
//
// OpenReadOnly opens a store without any lock and changes no byte in the
// directory: no header rewrite, no cut of a torn tail, no removal of a
// temporary snapshot or obsolete journal, no compaction, no file created.
// It reads the snapshot and the journals as Open would, skipping (and
// counting in Stats.DroppedBytes) what Open would cut. Writers may
// compact while it reads: if a file it listed is gone, the journal it read
// last was unlinked, or an older one still grew, it starts again. It
// fsyncs the directory and the journals it read (fsync changes no byte;
// it makes what it serves durable, as a writer's Open does). Its reads
// follow the journal like a writer's, with no lock (a compaction shows as
// the journal unlinked: it rereads the directory). Write methods return
// ErrReadOnly. The retention cleaner can use a read-only store: its
// MinCommitted answers from durable commits only.
//
// # Files
//
//	<dir>/LOCK                          flock'ed shared by every writing Store while open
//	<dir>/append.lock                   flock'ed exclusively for each append, compaction, recovery
//	<dir>/snapshot                      the whole state as of generation G
//	<dir>/journal-<G, 20 digits>        records appended since that snapshot
//	<dir>/snapshot.tmp                  a snapshot being written; removed by Open
//
// DirName is the store's directory in a data directory; Files lists a
// directory's entries with what each is to the store (FileKind), for
// tools that check or show them.
//
// Open creates the directory if needed with vfs.MkdirAllDurable (the parent
// of every directory it creates is fsynced). It follows no symbolic link:
// a directory, journal, snapshot or lock file that is a link is refused
// with an error wrapping ErrInvalid, so nothing outside the directory is
// written.
//
// Open, under the append lock, loads the snapshot (generation S, or an
// empty state and S = 0 when there is none), fsyncs the directory (the
// snapshot's rename may not have been durable when the last process died,
// and it is what makes older journals obsolete), deletes journals whose
// generation is below S (they are already in the snapshot), and replays
// the others in generation order, fsyncing each (its tail may have been in
// the page cache only). A last journal that holds no record, above another
// one, is what a compaction that a crash interrupted before its snapshot's
// rename left: it is deleted (the other stores go on appending to the
// journal below it). The last journal becomes the active one (created, as
// generation max(S, 1), when there is none). After removing or creating
// journals it fsyncs the directory again. So everything Open serves is
// durable; an fsync that fails fails the Open. Leftover temporary
// snapshots (snapshot*.tmp) are removed. A directory that a seglog from
// before the shared journal left with more than one journal holding
// records (a crash during its compaction) is compacted at once, so that
// the stores follow one journal. Another store that finds the journal
// replaced or the next one present does the same, under the append lock.
//
// # Journal file
//
// All integers are little-endian. A journal starts with a 16-byte header:
//
//	0        4        5          8                      16
//	+--------+--------+----------+----------------------+
//	| "SGOJ" | ver u8 | 3 zeros  | generation u64       |
//	+--------+--------+----------+----------------------+
//
// The generation must equal the one in the file name. Records follow, each:
//
//	0                    8              12       13
//	+--------------------+--------------+--------+----------------------+
//	| checksum u64       | length u32   | type u8| body (length-1 bytes)|
//	+--------------------+--------------+--------+----------------------+
//	checksum = xxhash64 of bytes [8, 12+length): the length, type and body.
//	1 <= length <= MaxRecordBytes.
//
// Bodies, by type (str = uvarint byte length, then the bytes; names are
// 1..MaxNameBytes bytes; no trailing bytes are allowed):
//
//	1 commit batch:  group str | time i64 (unix ns) | n uvarint (>= 1) |
//	                 n x ( topic str | partition u32 (<= 2^31-1) |
//	                       offset u64 (<= 2^63-1) | metadata str )
//	2 delete group:  group str
//	3 subscribe:     group str | topic str
//	4 unsubscribe:   group str | topic str
//	5 delete topic:  topic str
//
// Type 5 is new with DeleteTopic: a seglog from before it reports a
// journal that holds one as corrupt (a compaction folds it into the
// snapshot, whose format has not changed). The other types and the
// snapshot are as before: a directory written by an earlier version opens.
//
// Commit and CommitBatch both write one commit-batch record, so a batch is
// all-or-nothing: a torn record fails its checksum and is dropped whole.
// Entries of one record apply in order (a repeated key: the last one wins).
// A commit registers the group's interest in each topic it names.
//
// # Snapshot file
//
// Written whole as snapshot.tmp, fsynced, renamed over snapshot, and the
// directory fsynced, so it is never torn; any failure to decode it is
// corruption.
//
//	0        4        5          8              16            24               32
//	+--------+--------+----------+--------------+-------------+----------------+
//	| "SGOS" | ver u8 | 3 zeros  | generation u64| body len u64| xxhash64(body) |
//	+--------+--------+----------+--------------+-------------+----------------+
//	body:  ngroups uvarint | per group, names strictly increasing:
//	         group str | ntopics uvarint (>= 1) | per topic, strictly increasing:
//	           topic str | nparts uvarint | per partition, strictly increasing:
//	             partition u32 | offset u64 | time i64 | metadata str
//
// A topic with no partitions is an interest without commits. Every count is
// checked against the bytes that remain before anything is allocated. Every
// uvarint must be in its shortest form and reserved bytes must be zero, so a
// state has exactly one snapshot encoding. These layouts do not change
// without a new version byte.
//
// A record or snapshot that fails to decode is a *CorruptError, naming the
// file and the byte position, which wraps ErrCorrupt. Decoders never panic.
//
// # Torn tails and corruption
//
// When replay meets a bad record at position P (too short, a length out of
// range, a checksum mismatch), it looks for any valid record starting after
// P. If there is none, the bad bytes are a torn tail (an interrupted append,
// or blocks the OS had not written): the journal is truncated to P and Open
// succeeds. If there is one, the journal is damaged in the middle: Open fails
// with a *CorruptError at P, unless Options.RecoverCorrupt is set, in which
// case the state before P is kept and the journal is truncated at P (later
// journals, which only a crash during compaction can leave, are removed).
// Except for a torn append: a bad record at P with a whole header whose
// length reaches past the end of the file, and whose body is, as far as it
// goes, the start of a well-formed one, is a torn tail whatever it holds -
// its metadata is a client's bytes and may hold a whole record, which is
// not one of the journal's. (A record whose length was damaged shows its
// whole body before the end, or a malformed one.) And except for a lost
// page: zeros from P, or from a 4 KiB boundary after P, up to the next 4
// KiB boundary of the file, before the next valid record, are what a power
// cut leaves of appends that no fsync covered when the OS had written
// later pages of them and not that one (the file's size reached the disk,
// the page's data did not); the records after it were never acknowledged
// (an fsync covering them would have covered the page), and all of it is a
// torn tail. A block of an fsynced journal that the disk itself loses, as
// zeros, is cut the same way (as RecoverCorrupt would), not refused. The
// stores beside it judge the bytes after the last whole record the same
// way. A
// record whose checksum matches but whose body is malformed is always
// corruption. A journal shorter than its header (zero length included), or
// one whose header fails its checks with no valid record anywhere after it
// (a header-sized block of zeros, its first bytes written and zeros after,
// the file's size without its data), is an interrupted creation: it holds
// no acknowledged record, since records are appended only after the
// header is fsynced and any fsync that made a record durable made the
// header durable with it; its header is rewritten and fsynced before any
// commit is accepted. A bad header in front of valid records is
// corruption: Open refuses with a *CorruptError naming the file at
// position 0. A header with the magic and a version byte above this
// seglog's is a later seglog's journal, whatever follows it (a header that
// did not reach the disk whole shows zeros, not another version): Open
// (with RecoverCorrupt too) and OpenReadOnly refuse it with a
// *CorruptError and change nothing.
//
// # Compaction
//
// When the journal passes Options.CompactBytes (or on Compact), a store,
// holding the append lock (the other stores wait to append; its own
// committers go on filling its buffer):
//
//  1. reads the journal to its end (if another store compacted first, it
//     reloads instead and stops there, unless Compact asked), writes its
//     buffer and, if any record in the journal is not durable yet, fsyncs
//     it (so the state, which only durable records reach, holds every
//     record appended; a failure here is a failed fsync);
//  2. creates journal G+1 (header, fsync, directory fsync);
//  3. writes the snapshot of the state as generation G+1 atomically;
//  4. switches to journal G+1 and deletes journal G.
//
// The other stores see journal G unlinked (readers) or journal G+1
// present (writers, under the lock) and reload from snapshot G+1.
//
// A crash before step 3's rename leaves snapshot S <= G and journals G and
// G+1 (empty): the next store to take the append lock deletes journal
// G+1, and replay gives the state. A crash after it leaves snapshot G+1,
// which already holds everything of journal G, so journal G is deleted
// unread: the generation number makes the switch exact. (Replaying it anyway
// would also converge, as every record sets absolute values - offsets,
// interest, deletion - and the snapshot already ends with the effect of its
// last records.) No store appends to journal G after step 1: the lock is
// held until the switch, and the others check for journal G+1 under it
// before appending. If step 2 or 3 fails before the snapshot's rename,
// journal G+1 is removed, the store keeps appending to journal G, the
// error is in Stats, and compaction is retried when the journal has grown
// by another CompactBytes. If the directory fsync after the rename fails,
// snapshot G+1 is in place but perhaps not durable: appending to journal G
// would be lost (the next Open deletes it unread), and relying on journal
// G+1 would trust a rename that a power cut may undo, so the store fails
// like after a failed fsync (see below); a reopen finds one snapshot or
// the other, and the journals it needs.
//
// The snapshot holds exactly one entry per (group, topic, partition): the
// latest commit.
//
// # Durability and concurrency
//
// All methods are safe for concurrent use. Appends go, under one mutex, into
// an in-memory buffer that is written to the journal (under the append
// lock) before every fsync, when it passes 64 KiB, and on Sync and Close.
//
// Reads see durable writes only. The in-memory state is the durable one:
// the snapshot and the journal records that an fsync has covered, this
// store's and the others'. Every read answers from it (Fetch,
// MinCommitted, Readers, Groups, Positions and the counts in Stats), and
// compaction snapshots it. The journal bytes a store wrote or read wait in
// a queue of pending records, in journal order, and are applied to the
// state when an fsync that covers them succeeds (one fsync covers every
// byte written before it: group commit, within a process and across
// processes); Close makes everything durable for the next Open. The queue
// holds at most about a journal's worth (CompactBytes) of records, since a
// compaction starts with an fsync. This is what the retention cleaner
// needs: it deletes segments below MinCommitted, so MinCommitted must
// never run ahead of what a power cut keeps, or the records between the
// surviving commit and the deleted segments would be lost. A write whose
// write or fsync fails never reaches the state of its store. (Another store
// may read the whole records that a write wrote before it failed: its own
// fsync makes them durable first; a commit that returned an error may or
// may not have happened.)
//
//   - SyncAlways (default): Commit returns after an fsync covering its record,
//     so a committer reads its own commit when Commit returns, and any store
//     that reads after that sees it too. Concurrent commits share fsyncs
//     (group commit): a committer that finds no fsync in progress becomes
//     the leader, writes the buffer and fsyncs on behalf of every record
//     appended so far, applies them to the state, and only then wakes the
//     others, which wait on a condition variable for "synced up to" to pass
//     their record's sequence number. Appends and reads go on during an
//     fsync.
//   - SyncInterval: a background goroutine, owned by the Store and stopped by
//     Close, writes and fsyncs every SyncInterval. A process crash may lose
//     the commits of the last interval (still in the user-space buffer); a
//     machine crash likewise. Reads lag commits by up to an interval.
//   - SyncNever: the journal is written when the buffer fills and fsynced
//     only on Sync, Close and compaction (or by a store, this one or
//     another, that fsyncs to read other stores' records). A process crash
//     may lose buffered commits, and a machine crash may also lose what the
//     OS had not written. Reads see a commit after the next such fsync.
//
// DeleteGroup, DeleteTopic, Subscribe and Unsubscribe are durable like a
// commit, and visible like one: a group's interest (and its hold on
// retention) starts and ends when the record is durable. (Whether one
// would change nothing is judged on the state only after following the
// journal, and when none of this store's records is pending; otherwise it
// is appended anyway.) A pending write that would lower MinCommitted (a
// commit that moves a group back, a new reader) does not lower it until
// it is durable: the cleaner may delete meanwhile what it would have kept,
// exactly as if it had run just before the write.
//
// A failed write or fsync (a failed directory fsync after a snapshot's
// rename included) makes the store fail-stop: the state of the file (and
// of the page cache) is then unknown, so every later write returns that
// error; reopen to recover. Reads keep answering from the durable state,
// and no longer follow the other stores (no later fsync can be trusted to
// cover what the failed one did not). A failed write leaves a torn record
// that the next store to append cuts.
//
// # What a crash leaves
//
// A store killed at any point leaves the journal with whole records, then
// perhaps a torn one of its own (the last append, never acknowledged), or
// the files of an interrupted compaction (see Compaction). The stores
// still running go on: the next append cuts the torn record (under the
// lock), the next check under the lock finds an interrupted compaction's
// journal. Records the dead store wrote but did not fsync are complete in
// the page cache: the next fsync of any store covers them, and no store
// serves them before one does. A power cut leaves what fsyncs covered;
// Open cuts the rest. So every acknowledged commit survives, and per key
// the surviving value is the last acknowledged one or one later in the
// journal.
//
// # Performance
//
// A commit allocates nothing in steady state (reused encode and pending
// buffers; map keys and metadata strings are allocated only when new, when
// the record reaches the state). An append round - one per group commit,
// or per 64 KiB under SyncNever - adds to the write and the fsync a flock
// and its release, an fstat of the journal (into a reused buffer) and a
// lookup of the next journal's name (three small allocations, for the
// error of its absence). A read adds one fstat (BenchmarkFetch: about 4 us
// where it took 0.2 us, on a loaded 2-core VM). With one store, commits per
// second are as before (BenchmarkCommitDurable); two stores on one
// directory commit more than one with as many committers, as each one's
// fsync overlaps the other's append (BenchmarkCommitStores). Replay decodes
// in place and allocates only map entries and new strings: Open of 100,000
// positions takes about 11 ms from a snapshot and 40 ms from a journal of
// 100,000 commit records (BenchmarkOpen100k).
//
// The append lock is a flock: on a network filesystem that emulates flock
// with fcntl locks (NFS), two stores of one process would not exclude each
// other. Keep the directory on a local filesystem.
package offsets
