package offsets

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/seglog/seglog/vfs"
)

// journal is an open journal file. Its reference count, guarded by
// Store.fileMu, lets an fsync run without fileMu: the file is closed when
// the store has switched away from it and the last fsync has returned.
type journal struct {
	f    vfs.File
	gen  uint64
	next string // path of the journal of the next generation
	refs int
}

func (s *Store) newJournal(f vfs.File, gen uint64) *journal {
	return &journal{f: f, gen: gen, next: s.path(journalName(gen + 1))}
}

// statLocked returns the journal's size and whether its directory entry
// is gone (its link count is 0: a compaction switched away from it). It
// runs on every read and append, so it fstats the OS file into a reused
// buffer (no allocation), like flock; a test FS without one gets
// File.Stat. It needs fileMu.
func (s *Store) statLocked() (size int64, gone bool, err error) {
	if osf := s.j.f.OSFile(); osf != nil {
		if err := syscall.Fstat(int(osf.Fd()), &s.jstat); err != nil {
			return 0, false, &os.PathError{Op: "fstat", Path: s.j.f.Name(), Err: err}
		}
		return s.jstat.Size, s.jstat.Nlink == 0, nil
	}
	fi, err := s.j.f.Stat()
	if err != nil {
		return 0, false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return fi.Size(), ok && st.Nlink == 0, nil
}

func (s *Store) releaseLocked(j *journal) {
	j.refs--
	if j.refs == 0 {
		_ = j.f.Close()
	}
}

// failLocked makes err the store's sticky failure (if there is none yet)
// and returns the sticky failure. It takes mu.
func (s *Store) failLocked(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		s.failed = err
	}
	return s.failed
}

// installLocked makes l the store's view: its state, and the journal to
// append to or follow from l.end. Everything l holds is durable (the
// loaders fsync what they read), so every record this store wrote before
// is too. It needs fileMu.
func (s *Store) installLocked(l *loaded) {
	if s.j != nil {
		s.releaseLocked(s.j)
	}
	s.j = l.j
	if s.j != nil {
		s.j.refs = 1
	}
	s.end, s.applied = l.end, l.end
	s.pending = s.pending[:0]
	s.own = s.own[:0]
	s.foreignEnd = 0
	s.stuckSize, s.stuckBytes, s.roDropped = -1, l.tail, l.dropped-l.tail
	s.ackSeq = s.writtenSeq
	s.epoch++
	s.mu.Lock()
	s.st = l.st
	if !s.readOnly {
		s.stats.DroppedBytes += l.dropped
	}
	s.mu.Unlock()
	s.size.Store(s.end)
	s.publishLocked()
}

// publishLocked tells the committers and readers waiting in waitUntil how
// far the state goes. It needs fileMu.
func (s *Store) publishLocked() {
	s.syncMu.Lock()
	s.syncedEpoch, s.syncedPos = s.epoch, s.applied
	if s.ackSeq > s.syncedSeq {
		s.syncedSeq = s.ackSeq
	}
	s.syncCond.Broadcast()
	s.syncMu.Unlock()
}

// durableLocked applies to the state the pending records up to position
// pos of the journal of epoch, which an fsync has just made durable (one
// that started after they were written or read: an fsync covers every byte
// of the file written before it, whichever process wrote it). It needs
// fileMu.
func (s *Store) durableLocked(epoch uint64, pos int64) {
	if epoch != s.epoch || pos <= s.applied {
		return // a reload or a switch made everything durable since
	}
	n := int(pos - s.applied)
	s.mu.Lock()
	for off := 0; off < n; {
		end := off + recordHeaderSize + int(binary.LittleEndian.Uint32(s.pending[off+8:]))
		decodeRecord(s.st, s.pending[off+recordHeaderSize:end]) // checked when read, or encoded here
		off = end
	}
	s.mu.Unlock()
	s.pending = s.pending[:copy(s.pending, s.pending[n:])]
	if len(s.pending) == 0 && int64(cap(s.pending)) > 2*s.opts.CompactBytes+flushBytes {
		s.pending = nil // grown by a long run without fsync: let it go
	}
	s.applied = pos
	i := 0
	for ; i < len(s.own) && s.own[i].end <= pos; i++ {
		s.ackSeq = s.own[i].seq
	}
	s.own = s.own[:copy(s.own, s.own[i:])]
	s.publishLocked()
}

// waitUntil returns when this store's records up to seq are durable
// (write) or when the state has reached position pos of the journal of
// epoch (reads). The first waiter that finds no round running leads one:
// it writes the buffer (write), reads what other stores appended, fsyncs
// and applies, for everyone; the others wait for it (group commit).
func (s *Store) waitUntil(seq, epoch uint64, pos int64, write bool) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for {
		if write && s.syncedSeq >= seq ||
			!write && (s.syncedEpoch > epoch || s.syncedEpoch == epoch && s.syncedPos >= pos) {
			return nil
		}
		if s.syncing {
			s.syncCond.Wait()
			continue
		}
		s.syncing = true
		s.syncMu.Unlock()
		if write {
			// Let committers that are runnable (typically those the last
			// fsync woke, committing again) append before the buffer is
			// taken, so that this fsync covers them too instead of
			// leaving them for the next one. With one committer this
			// costs next to nothing.
			runtime.Gosched()
		}
		err := s.round(write)
		s.syncMu.Lock()
		s.syncing = false
		s.syncCond.Broadcast()
		if err != nil {
			if write && s.syncedSeq >= seq {
				return nil
			}
			return err
		}
	}
}

// round writes this store's buffer under the append lock (write), or only
// reads what other stores appended (reads), then fsyncs the journal if
// anything read or written is not known durable, and applies it. Appends
// and reads go on during the fsync.
func (s *Store) round(write bool) error {
	s.fileMu.Lock()
	var err error
	switch {
	case s.done:
		err = ErrClosed
	case write && !s.readOnly:
		err = s.writeLocked()
	default:
		if err = s.failure(); err == nil {
			err = s.pollLocked()
		}
	}
	if err != nil || s.j == nil || s.end <= s.applied {
		s.fileMu.Unlock()
		return err
	}
	j, epoch, pos := s.j, s.epoch, s.end
	j.refs++
	s.fileMu.Unlock()

	err = j.f.Sync()
	s.syncs.Add(1)

	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	s.releaseLocked(j)
	if err != nil {
		// The state of the file and of the page cache is unknown: no
		// later fsync can be trusted to cover what this one did not.
		return s.failLocked(fmt.Errorf("offsets: fsync journal: %w", err))
	}
	s.durableLocked(epoch, pos)
	return nil
}

// flush writes the append buffer (SyncNever and SyncInterval, when it
// passes flushBytes), without fsync.
func (s *Store) flush() error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if s.done {
		return ErrClosed
	}
	return s.writeLocked()
}

// writeLocked writes the append buffer to the journal under the append
// lock, after reading what other stores appended (and cutting what a dead
// one left half-written), so that the journal is one sequence of whole
// records in the order the lock was taken. It needs fileMu. A failure is
// sticky: the buffer's records are lost, and the file's end is unknown.
func (s *Store) writeLocked() error {
	if err := s.failure(); err != nil {
		return err
	}
	if err := flock(s.alock, lockExclusive); err != nil {
		return s.failLocked(err)
	}
	defer funlock(s.alock)
	if err := s.currentLocked(); err != nil {
		return err
	}
	return s.appendLocked()
}

// appendLocked writes the append buffer at the journal's end. It needs
// fileMu and the append lock, and the journal's end read (currentLocked).
func (s *Store) appendLocked() error {
	s.mu.Lock()
	out, target := s.buf, s.writeSeq
	s.buf, s.spare = s.spare[:0], nil
	s.mu.Unlock()
	defer func() { s.spare = out[:0] }()
	if len(out) == 0 {
		return nil
	}
	if _, err := s.j.f.Write(out); err != nil {
		return s.failLocked(fmt.Errorf("offsets: write journal: %w", err))
	}
	s.pending = append(s.pending, out...)
	s.end += int64(len(out))
	s.size.Store(s.end)
	s.own = append(s.own, ownWrite{end: s.end, seq: target})
	s.writtenSeq = target
	return nil
}

// currentLocked brings the store up to the journal's end under the append
// lock: it reloads the directory if another store switched journals (the
// journal was unlinked, or the next generation exists: a compaction, or one
// that a crash interrupted), and otherwise reads the records appended since
// it last looked. Bytes after them that are not a record are what a store
// that died (or whose write failed) left half-written: no store is writing
// while the lock is held, so they are cut, and the cut is fsynced before
// anything is appended after it. Bytes after which a valid record follows
// are damage, not a torn append: the store fails with a *CorruptError
// (with RecoverCorrupt, they are cut like a torn tail). Failures are
// sticky. It needs fileMu and the append lock.
func (s *Store) currentLocked() error {
	size, gone, err := s.statLocked()
	if err != nil {
		return s.failLocked(fmt.Errorf("offsets: %w", err))
	}
	next, err := s.exists(s.j.next)
	if err != nil {
		return s.failLocked(err)
	}
	if gone || next || size < s.end {
		return s.reloadLocked()
	}
	if size == s.end {
		return nil
	}
	data, err := s.readTailLocked(size)
	if err != nil {
		return s.failLocked(err)
	}
	valid, malformed, reason := s.takeTailLocked(data)
	if valid == len(data) {
		return nil
	}
	if (malformed || damagedAfter(data, s.end-int64(valid), valid)) && !s.opts.RecoverCorrupt {
		return s.failLocked(&CorruptError{File: s.j.f.Name(), Pos: s.end, Reason: reason})
	}
	if err := s.j.f.Truncate(s.end); err != nil {
		return s.failLocked(fmt.Errorf("offsets: cut a torn journal tail: %w", err))
	}
	if err := s.j.f.Sync(); err != nil {
		return s.failLocked(fmt.Errorf("offsets: fsync journal: %w", err))
	}
	s.syncs.Add(1)
	s.durableLocked(s.epoch, s.end) // the fsync covered what was read too
	s.mu.Lock()
	s.stats.DroppedBytes += int64(len(data) - valid)
	s.mu.Unlock()
	return nil
}

// Sync writes and fsyncs everything this store appended so far, and
// follows the journal. When it returns nil, the reads (Fetch, MinCommitted,
// ...) see every write of this store that returned before it was called.
// A read-only store returns ErrReadOnly.
func (s *Store) Sync() error {
	s.mu.RLock()
	err := s.writableLocked()
	seq := s.writeSeq
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	if err := s.waitUntil(seq, 0, 0, true); err != nil {
		return err
	}
	return s.refresh()
}

// Compact writes a snapshot of the whole state and starts a new journal
// now, under the directory's append lock (the other Stores on the
// directory wait to append meanwhile, and reload afterwards). It starts as
// Sync does, making every write appended (by any store) durable and
// visible to the reads, so that the snapshot holds them all.
func (s *Store) Compact() error {
	s.mu.RLock()
	err := s.writableLocked()
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	return s.compact(true)
}

// compact compacts now (force) or if the journal is still over the
// threshold once the append lock is held (another store may have compacted
// first).
func (s *Store) compact(force bool) error {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if s.done {
		return ErrClosed
	}
	if err := s.failure(); err != nil {
		return err
	}
	if err := flock(s.alock, lockExclusive); err != nil {
		return s.failLocked(err)
	}
	defer funlock(s.alock)
	return s.compactLocked(force)
}

// compactLocked snapshots the state as generation gen+1 and switches to a
// new journal; the steps and the crash argument are in the package doc.
// The other stores' appends wait meanwhile (the append lock); this store's
// appends go on into its buffer. A failure of steps 2-3 leaves every store
// on the old journal. It needs fileMu and the append lock.
func (s *Store) compactLocked(force bool) (err error) {
	// Step 1: read the journal to its end and write this store's buffer,
	// then make every record in it durable, so that the state, which is
	// what the snapshot holds, has them all.
	if err := s.currentLocked(); err != nil {
		return err
	}
	if err := s.appendLocked(); err != nil {
		return err
	}
	if !force && s.end < s.compactAt.Load() {
		return nil // another store compacted first
	}
	if s.applied < s.end {
		if err := s.j.f.Sync(); err != nil {
			return s.failLocked(fmt.Errorf("offsets: fsync journal: %w", err))
		}
		s.syncs.Add(1)
		s.durableLocked(s.epoch, s.end)
	}
	next := s.j.gen + 1
	npath := s.path(journalName(next))
	defer func() {
		if err != nil {
			s.compactErr = err
			s.compactAt.Store(s.end + s.opts.CompactBytes)
		}
	}()
	if err := s.cutJournal(npath, next, 0); err != nil {
		_ = s.fs.Remove(npath)
		return err
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		_ = s.fs.Remove(npath)
		return fmt.Errorf("offsets: %w", err)
	}
	nf, err := openNoFollow(s.fs, npath, os.O_RDWR|os.O_APPEND, s.opts.FileMode)
	if err != nil {
		_ = s.fs.Remove(npath)
		return err
	}
	s.mu.RLock()
	s.snapBuf = encodeSnapshot(s.snapBuf, s.st, next)
	s.mu.RUnlock()
	renamed, err := s.writeSnapshot(s.snapBuf)
	if cap(s.snapBuf) > 4*len(s.snapBuf)+(1<<20) {
		s.snapBuf = nil
	}
	if err != nil {
		_ = nf.Close()
		if renamed {
			// Snapshot G+1 is in place, perhaps not durably. Appending
			// to journal G would be lost (Open deletes the journals
			// older than the snapshot), and switching to journal G+1
			// would rely on a rename that a power cut may undo: the
			// directory's state is unknown, as after a failed fsync.
			// Fail-stop; a reopen finds either snapshot and replays
			// what it needs. (The other stores see journal G+1 at their
			// next append and reload: either way they go on from a
			// state that holds every record.)
			return s.failLocked(fmt.Errorf("offsets: fsync directory after the snapshot rename: %w", err))
		}
		_ = s.fs.Remove(npath)
		return fmt.Errorf("offsets: write snapshot: %w", err)
	}
	s.switchJournalLocked(nf, next)
	return nil
}

// switchJournalLocked is a compaction's step 4: appends go to journal next
// (nf) from now on, and the older journals are removed. Every record is
// applied (step 1), none of this store's is waiting for an fsync.
func (s *Store) switchJournalLocked(nf vfs.File, next uint64) {
	old := s.j
	s.j = s.newJournal(nf, next)
	s.j.refs = 1
	s.end, s.applied = journalHeaderSize, journalHeaderSize
	s.pending, s.own, s.foreignEnd = s.pending[:0], s.own[:0], 0
	s.stuckSize = -1
	s.epoch++
	s.mu.Lock()
	s.stats.Compactions++
	s.mu.Unlock()
	s.size.Store(s.end)
	s.compactAt.Store(s.opts.CompactBytes)
	s.compactErr = nil
	s.publishLocked()
	s.releaseLocked(old)
	// The other stores see journal G unlinked and reload. If it stays
	// (the removal failed), they see journal G+1 at their next append,
	// and the next Open or reload removes it. Older journals are there
	// only when Open compacts what an older seglog left.
	if ls, err := listDir(s.fs, s.dir); err == nil {
		for _, gen := range ls.gens {
			if gen < next {
				_ = s.fs.Remove(s.path(journalName(gen)))
			}
		}
	}
}

// writeSnapshot replaces the snapshot with data so that a crash leaves the
// old one or the new one, never a mix: it writes snapshot.tmp, fsyncs it,
// renames it over the snapshot and fsyncs the directory. renamed reports
// whether the rename happened: a failure after it (the directory fsync)
// leaves the new snapshot in place, durable or not. A failed rename
// changes nothing (rename is atomic). Only the holder of the append lock
// writes a snapshot, so one temporary name serves.
func (s *Store) writeSnapshot(data []byte) (renamed bool, err error) {
	tmp := s.path(snapshotName + vfs.TempSuffix)
	f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, s.opts.FileMode)
	if err != nil {
		return false, err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.Rename(tmp, s.path(snapshotName))
	}
	if err != nil {
		_ = s.fs.Remove(tmp)
		return false, err
	}
	return true, s.fs.SyncDir(s.dir)
}
