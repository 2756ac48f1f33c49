package offsets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// exists reports whether path exists.
func (s *Store) exists(path string) (bool, error) {
	_, err := s.fs.Lstat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("offsets: %w", err)
}

// unlinked reports whether an open file's directory entry is gone (its
// link count is 0): a compaction switched away from the journal.
func unlinked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}

// readTailLocked reads the journal from end to size (or to its end, if a
// writer cut it meanwhile) into a reused buffer.
func (s *Store) readTailLocked(size int64) ([]byte, error) {
	n := size - s.end
	if n > 1<<31 {
		n = 1 << 31 // read the rest on the next call
	}
	if int64(cap(s.tailBuf)) < n {
		s.tailBuf = make([]byte, n)
	}
	data := s.tailBuf[:n]
	got, err := s.j.f.ReadAt(data, s.end)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("offsets: read journal: %w", err)
	}
	if cap(s.tailBuf) > 4<<20 {
		s.tailBuf = nil // read once after a long absence: let it go
	}
	return data[:got], nil
}

// takeTailLocked queues the whole valid records at the start of data, the
// journal's bytes from end on, which other stores appended (this store
// writes only under fileMu, and counts what it writes). It returns the
// length it took and, if that is not all of data, why the rest is not a
// record.
func (s *Store) takeTailLocked(data []byte) (valid int, malformed bool, reason string) {
	valid, records, reason, malformed := scanRecords(data)
	if valid > 0 {
		s.pending = append(s.pending, data[:valid]...)
		s.end += int64(valid)
		s.foreignEnd = s.end
		s.tailed += uint64(records)
		s.size.Store(s.end)
	}
	return valid, malformed, reason
}

// reloadLocked rereads the directory after another store switched journals
// (or a crash left a journal to clean up). For a store opened to write it
// runs under the append lock, with the repairs of Open; a read-only store
// reads without a lock. A failure of a writing store is sticky. It needs
// fileMu (and, to write, the append lock).
func (s *Store) reloadLocked() error {
	var l *loaded
	var err error
	if s.readOnly {
		l, err = s.loadReadOnly()
	} else {
		l, err = s.recoverLocked()
	}
	if err != nil {
		if s.readOnly {
			return err
		}
		return s.failLocked(err)
	}
	s.installLocked(l)
	s.reloads++
	return nil
}

// pollLocked follows the journal without the append lock, as every read
// does first: one fstat when nothing changed. It reads the records other
// stores appended (stopping before bytes that are not a whole record: an
// append in progress, or a torn one that the next writer cuts), and
// reloads the directory when the journal was switched or cut (a writing
// store takes the append lock for that). It needs fileMu.
func (s *Store) pollLocked() error {
	if s.j == nil {
		// Read-only, and the directory had no journal: look again.
		return s.reloadLocked()
	}
	size, gone, err := s.statLocked()
	if err != nil {
		return fmt.Errorf("offsets: %w", err)
	}
	switch {
	case gone || size < s.end:
		if s.readOnly {
			return s.reloadLocked()
		}
		if err := flock(s.alock, lockExclusive); err != nil {
			return err
		}
		defer funlock(s.alock)
		return s.currentLocked()
	case s.end < journalHeaderSize:
		// Read-only, and the journal's header had not reached the disk:
		// read it again when its size changes (a writer rewrites it).
		if size == s.stuckSize {
			return nil
		}
		if err := s.reloadLocked(); err != nil {
			return err
		}
		if s.end < journalHeaderSize {
			s.stuckSize = size
		}
		return nil
	case size == s.end:
		s.stuckBytes = 0
		return nil
	}
	data, err := s.readTailLocked(size)
	if err != nil {
		return err
	}
	// Bytes after the valid records are an append in progress, or a torn
	// one that the next writer cuts: read again from the same place next
	// time.
	valid, _, _ := s.takeTailLocked(data)
	s.stuckBytes = int64(len(data) - valid)
	return nil
}

// refresh follows the journal before a read: it reads what other stores
// appended and, if that is not known durable, makes it durable (an fsync,
// shared with a round in progress) and applies it, so that a read sees
// every commit acknowledged, by any store, before it began. A failure is
// kept for Stats and Refresh; the read answers from what was read before.
// A failed (fail-stop) store follows no more.
func (s *Store) refresh() error {
	s.fileMu.Lock()
	if s.done {
		s.fileMu.Unlock()
		return ErrClosed
	}
	if err := s.failure(); err != nil {
		// After a failed write or fsync, no later fsync can be trusted to
		// cover what the page cache holds: the reads stay on the state
		// that was durable.
		s.refreshErr = err
		s.fileMu.Unlock()
		return err
	}
	err := s.pollLocked()
	epoch, need := s.epoch, s.foreignEnd
	if need <= s.applied {
		need = 0
	}
	s.refreshErr = err
	s.fileMu.Unlock()
	if err == nil && need > 0 {
		if err = s.waitUntil(0, epoch, need, false); err != nil {
			s.fileMu.Lock()
			s.refreshErr = err
			s.fileMu.Unlock()
		}
	}
	return err
}

// Refresh follows the journal now, as every read does first (Fetch,
// MinCommitted, Readers, Groups, Positions, Stats): it reads the records
// other Stores appended to the directory, fsyncs them if no fsync is known
// to cover them yet, and applies them. It returns what went wrong (a read
// returns no error: it answers from what the store had). It writes
// nothing, also on a store opened to write.
func (s *Store) Refresh() error {
	return s.refresh()
}
