// Package raftstore owns seglog's storage for hashicorp/raft (v1.8): a
// LogStore (raft.LogStore and raft.MonotonicLogStore) over one
// storage.Log, a crash-safe StableStore, and Store, both in one directory,
// which is what raft.NewRaft takes as its logs and stable arguments:
//
//	store, err := raftstore.Open(dir, raftstore.Options{})
//	...
//	r, err := raft.NewRaft(conf, fsm, store, store, snapshots, transport)
//
// # Layout
//
//	<dir>/
//	  stable      the StableStore's journal (the directory is flock'ed)
//	  tail-cut    redo record of a DeleteRange from the back, while one runs
//	  log/        the storage.Log of the entries (see package storage)
//
// # Entries and indexes
//
// Each raft.Log is one record of the log (format.go draws the encoding:
// version, flags, type, index, term, appended-at, data, extensions), and
// all the entries of one StoreLogs call are one batch, appended and
// fsynced together. Raft index = offset + 1 + base, and FirstIndex and
// LastIndex come from the log's StartOffset and EndOffset (0, 0 when it is
// empty). base is 0 for a log that raft filled from index 1; it changes
// only when the log is empty and raft stores an entry that does not follow
// the old end, which a monotonic store must accept (raft removes every
// entry after installing a snapshot, then continues at the snapshot's
// index + 1, as raft-wal allows). seglog has no way to restart an empty
// log at a chosen offset, so the mapping moves instead. Every entry
// stores its own index: Open derives base from the first entry and checks
// it against the last, and GetLog checks the index of what it returns.
//
// # Deleting
//
// Raft deletes a prefix after a snapshot, a suffix when a follower's
// entries conflict with a new leader's, and everything after installing a
// snapshot. DeleteRange documents how each maps to storage: a prefix
// frees whole segments only (DeleteSegmentsBefore), so FirstIndex may
// stay below the max asked for; raft asks again at its next snapshot and
// only ever reads entries it has not compacted, and keeping a few more
// entries lets the leader serve a lagging follower from the log instead
// of a snapshot. (raft-wal, by contrast, records the new first index in
// its metadata database and hides the entries below it; raft-boltdb
// deletes exactly, key by key.) A suffix is cut exactly, even inside a
// batch, and crash-safely (a redo record keeps the part of the batch
// below the cut until it is appended again).
//
// # Durability
//
// StoreLogs returns after its batch is durable: it calls Log.Sync (one
// fdatasync, shared by concurrent callers). DeleteRange from the back is
// fsynced before it returns; from the front, the log's start offset is
// advanced durably before files are removed. StableStore.Set appends a
// checksummed record to its journal and fsyncs it. A crash at any point
// loses nothing that was acknowledged (tested by killing a child process
// with SIGKILL). Options.NoSync turns the StoreLogs fsync off, for tests
// and benchmarks only.
//
// # Concurrency
//
// Every method is safe for concurrent use, as raft needs: it stores from
// its main goroutine, deletes a prefix from its snapshot goroutine, and
// reads from replication goroutines. Writers (StoreLogs, DeleteRange)
// are serialized. GetLog, FirstIndex and LastIndex take no lock that an
// append or a front deletion holds; only a rebase of the mapping and a
// cut from the back exclude them briefly. GetLog keeps the last few
// batches decoded (Options.CacheBatches), filled by StoreLogs and by
// reads in index order, so that raft reading the entries of a batch one by
// one (replicating, applying) reads and verifies the batch once; a read
// with no neighbour decodes its one entry from a pooled buffer instead.
//
// # Errors
//
// GetLog of an index outside [FirstIndex, LastIndex] returns
// raft.ErrLogNotFound itself (raft compares it with ==). StoreLogs whose
// first index does not follow LastIndex returns ErrNonContiguous and
// stores nothing. Get and GetUint64 of an unset key return ErrKeyNotFound,
// whose message is "not found" (raft compares the message). Data on disk
// that cannot be what this package wrote is an error wrapping ErrCorrupt
// (and storage.ErrCorrupt).
package raftstore
