package offsets

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seglog/seglog/internal/vfs"
)

// SyncPolicy says when commits are fsynced.
type SyncPolicy int

const (
	// SyncAlways fsyncs before every write returns; concurrent writes share
	// one fsync.
	SyncAlways SyncPolicy = iota
	// SyncInterval fsyncs every Options.SyncInterval in the background.
	SyncInterval
	// SyncNever leaves flushing to Sync, Close and compaction.
	SyncNever
)

// String returns the policy's name.
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return "SyncPolicy(" + strconv.Itoa(int(p)) + ")"
}

// Options configure a Store. The zero value is usable.
type Options struct {
	FS               vfs.FS        // nil: vfs.Default
	Sync             SyncPolicy    // default SyncAlways
	SyncInterval     time.Duration // for SyncInterval; default 1s
	CompactBytes     int64         // compact when the journal exceeds this; default 4 MiB
	MaxMetadataBytes int           // default 4096, at most 1 MiB
	// RecoverCorrupt makes Open keep what is before a corrupt record in the
	// middle of a journal (and truncate there) instead of failing.
	RecoverCorrupt bool
	FileMode       os.FileMode // default vfs.DefaultFileMode
	DirMode        os.FileMode // default vfs.DefaultDirMode
}

const (
	defaultSyncInterval     = time.Second
	defaultCompactBytes     = 4 << 20
	defaultMaxMetadataBytes = 4096
	maxMaxMetadataBytes     = 1 << 20
	flushBytes              = 64 << 10
	snapshotName            = "snapshot"
	journalPrefix           = "journal-"
	lockName                = "LOCK"
)

func (o *Options) defaults() error {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Sync < SyncAlways || o.Sync > SyncNever {
		return invalidf("unknown sync policy %d", int(o.Sync))
	}
	if o.SyncInterval < 0 || o.CompactBytes < 0 || o.MaxMetadataBytes < 0 {
		return invalidf("negative SyncInterval, CompactBytes or MaxMetadataBytes")
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = defaultSyncInterval
	}
	if o.CompactBytes == 0 {
		o.CompactBytes = defaultCompactBytes
	}
	if o.MaxMetadataBytes == 0 {
		o.MaxMetadataBytes = defaultMaxMetadataBytes
	}
	if o.MaxMetadataBytes > maxMaxMetadataBytes {
		return invalidf("MaxMetadataBytes %d is over %d", o.MaxMetadataBytes, maxMaxMetadataBytes)
	}
	if o.FileMode == 0 {
		o.FileMode = vfs.DefaultFileMode
	}
	if o.DirMode == 0 {
		o.DirMode = vfs.DefaultDirMode
	}
	return nil
}

// Commit is one entry of a CommitBatch.
type Commit struct {
	Topic     string
	Partition int32
	Offset    int64
	Metadata  string
}

// Position is a group's committed position on a partition.
type Position struct {
	Topic     string
	Partition int32
	Offset    int64
	Metadata  string
	Time      time.Time // when committed
}

// Stats describe a Store.
type Stats struct {
	Groups       int    // durable groups with interest in at least one topic
	Positions    int    // durable committed (group, topic, partition) entries
	Generation   uint64 // of the active journal
	JournalBytes int64  // size of the active journal, buffered bytes included
	Records      uint64 // journal records appended since Open
	Syncs        uint64 // fsyncs of the journal since Open
	Compactions  uint64 // since Open
	// CompactErr is the last compaction failure, nil after a success.
	CompactErr error
	// DroppedBytes is what Open cut from journal tails (torn or, with
	// RecoverCorrupt, corrupt).
	DroppedBytes int64
}

// Store is a durable per-consumer-group offset store. See the package doc.
type Store struct {
	dir  string
	opts Options
	fs   vfs.FS
	lock vfs.File

	// mu guards the state, the append buffer and the fields below it.
	mu     sync.RWMutex
	closed bool
	failed error // sticky: a journal write or fsync failed
	// st is the durable state: the snapshot and the records that an fsync
	// has covered. Every read answers from it, so that retention never
	// acts on a commit that a crash can lose, and compaction snapshots it.
	// pending holds the records appended after those, framed as in the
	// journal, in order; an fsync that covers them applies them to st.
	// durSeq + the number of records in pending = writeSeq.
	st         *state
	pending    []byte
	durSeq     uint64 // records applied to st
	buf        []byte // records appended and not yet written to the journal
	writeSeq   uint64 // records appended since Open
	size       int64  // of the active journal, buf included
	compactAt  int64
	compactErr error
	stats      Stats

	// fileMu guards the journal file: every Write, Sync, Close and switch.
	// Lock order: mu, then fileMu, then syncMu.
	fileMu  sync.Mutex
	journal vfs.File
	gen     uint64
	spare   []byte // the buffer the sync leader writes out
	snapBuf []byte

	// syncMu guards the group-commit state.
	syncMu    sync.Mutex
	syncCond  sync.Cond
	syncing   bool   // a leader is writing and fsyncing
	syncedSeq uint64 // records known durable

	syncs atomic.Uint64

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Open opens the store in dir, creating the directory if needed (durably:
// the parents of the directories it creates are fsynced), and replays its
// snapshot and journals, fsyncing what it replays before serving it. It
// refuses a dir, journal, snapshot or LOCK that is a symbolic link (an
// error wrapping ErrInvalid). See the package doc, Files.
func Open(dir string, opts Options) (_ *Store, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	fs := opts.FS
	dir = filepath.Clean(dir) // "link/" would follow the link
	// A symbolic link is never followed: the store writes only inside the
	// directory it was given. MkdirAllDurable fsyncs the parent of every
	// directory it creates, so an acknowledged commit cannot lose its
	// directory to a power cut.
	if fi, err := fs.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, symlinkError(dir)
	}
	if err := vfs.MkdirAllDurable(fs, dir, opts.DirMode); err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	s := &Store{dir: dir, opts: opts, fs: fs, stop: make(chan struct{})}
	s.syncCond.L = &s.syncMu
	if s.lock, err = lockDir(fs, filepath.Join(dir, lockName), opts.FileMode); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if s.journal != nil {
				_ = s.journal.Close()
			}
			_ = s.lock.Close()
		}
	}()
	if err := s.recover(); err != nil {
		return nil, err
	}
	s.compactAt = opts.CompactBytes
	if opts.Sync == SyncInterval {
		s.wg.Add(1)
		go s.syncLoop()
	}
	return s, nil
}

// symlinkError is the error for a symbolic link where the store expects
// its directory or one of its files.
func symlinkError(path string) error {
	return invalidf("%s is a symbolic link; the offsets store follows none (its directory and files must be real)", path)
}

// openNoFollow opens a file of the store, refusing a symbolic link.
func openNoFollow(fs vfs.FS, path string, flag int, mode os.FileMode) (vfs.File, error) {
	f, err := fs.OpenFile(path, flag|syscall.O_NOFOLLOW, mode)
	if errors.Is(err, syscall.ELOOP) {
		return nil, symlinkError(path)
	}
	if err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	return f, nil
}

func lockDir(fs vfs.FS, path string, mode os.FileMode) (vfs.File, error) {
	f, err := openNoFollow(fs, path, os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil, err
	}
	if osf := f.OSFile(); osf != nil {
		if err := syscall.Flock(int(osf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w: %s", ErrLocked, path)
			}
			return nil, fmt.Errorf("offsets: lock %s: %w", path, err)
		}
	}
	return f, nil
}

func (s *Store) path(name string) string { return filepath.Join(s.dir, name) }

func journalName(gen uint64) string { return fmt.Sprintf("%s%020d", journalPrefix, gen) }

// recover loads the snapshot, replays the journals and opens the active one.
//
// What it serves must be durable, whatever the previous process did before
// it died: the directory is fsynced before anything is deleted (a snapshot
// rename may not be durable yet, and it is what makes older journals
// obsolete), every journal replayed is fsynced (its tail may be in the page
// cache only), and the directory is fsynced again after removals and
// creations, before any commit is accepted.
func (s *Store) recover() error {
	entries, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("offsets: %w", err)
	}
	var gens []uint64
	hasSnap := false
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, snapshotName) && strings.HasSuffix(name, vfs.TempSuffix) {
			// A snapshot write that a crash interrupted (whatever the
			// temporary name: older versions used one of their own per
			// write). Removing a link removes the link only.
			if err := s.fs.Remove(s.path(name)); err != nil {
				return fmt.Errorf("offsets: remove temporary snapshot: %w", err)
			}
			continue
		}
		rest, isJournal := strings.CutPrefix(name, journalPrefix)
		gen, perr := strconv.ParseUint(rest, 10, 64)
		isJournal = isJournal && len(rest) == 20 && perr == nil
		if !isJournal && name != snapshotName && name != lockName {
			continue // not ours
		}
		if e.Type()&os.ModeSymlink != 0 {
			return symlinkError(s.path(name))
		}
		if !e.Type().IsRegular() {
			return invalidf("%s is not a regular file", s.path(name))
		}
		if isJournal {
			gens = append(gens, gen)
		} else if name == snapshotName {
			hasSnap = true
		}
	}
	slices.Sort(gens)

	s.st = newState(0)
	var snapGen uint64
	if hasSnap {
		path := s.path(snapshotName)
		data, err := vfs.ReadFile(s.fs, path, maxSnapshotBytes)
		if err != nil {
			return fmt.Errorf("offsets: %w", err)
		}
		st, gen, pos, reason := decodeSnapshot(data)
		if reason != "" {
			return &CorruptError{File: path, Pos: pos, Reason: reason}
		}
		s.st, snapGen = st, gen
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("offsets: %w", err)
	}

	var active uint64
	var replayed []string // journals replayed as found: to be fsynced
	changed := false      // files removed or created: fsync the directory
	stopped := false      // a corruption was recovered: later journals are dropped
	for _, gen := range gens {
		path := s.path(journalName(gen))
		if gen < snapGen || stopped {
			if err := s.fs.Remove(path); err != nil {
				return fmt.Errorf("offsets: remove obsolete journal: %w", err)
			}
			changed = true
			continue
		}
		data, err := vfs.ReadFile(s.fs, path, 1<<62)
		if err != nil {
			return fmt.Errorf("offsets: %w", err)
		}
		res := replayJournal(data, gen, s.st)
		if res.reason != "" {
			if !s.opts.RecoverCorrupt {
				return &CorruptError{File: path, Pos: int64(res.end), Reason: res.reason}
			}
			stopped = true
		}
		if res.end < len(data) || res.end < journalHeaderSize {
			// A torn or corrupt tail, or a header that never reached
			// the disk (then the file holds no record): cut, rewrite
			// the header if needed, fsync.
			if err := s.cutJournal(path, gen, res.end); err != nil {
				return err
			}
			s.stats.DroppedBytes += int64(len(data) - res.end)
			res.end = max(res.end, journalHeaderSize)
		} else {
			replayed = append(replayed, path)
		}
		active, s.size = gen, int64(res.end)
	}
	for _, path := range replayed {
		if err := s.syncFile(path); err != nil {
			return err
		}
	}
	if active == 0 {
		active = max(snapGen, 1)
		if err := s.cutJournal(s.path(journalName(active)), active, 0); err != nil {
			return err
		}
		changed = true
		s.size = journalHeaderSize
	}
	if changed {
		if err := s.fs.SyncDir(s.dir); err != nil {
			return fmt.Errorf("offsets: %w", err)
		}
	}
	f, err := openNoFollow(s.fs, s.path(journalName(active)), os.O_WRONLY|os.O_APPEND, s.opts.FileMode)
	if err != nil {
		return err
	}
	s.journal, s.gen = f, active
	return nil
}

// syncFile fsyncs a file of the store.
func (s *Store) syncFile(path string) error {
	f, err := openNoFollow(s.fs, path, os.O_RDWR, s.opts.FileMode)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("offsets: fsync %s: %w", path, err)
	}
	return nil
}

// cutJournal truncates (or creates) a journal to end bytes, rewriting its
// header when end is inside it, and fsyncs it. Creating one needs a
// directory fsync after it, which is the caller's.
func (s *Store) cutJournal(path string, gen uint64, end int) error {
	f, err := openNoFollow(s.fs, path, os.O_RDWR|os.O_CREATE, s.opts.FileMode)
	if err != nil {
		return err
	}
	if end < journalHeaderSize {
		end = 0
	}
	err = f.Truncate(int64(end))
	if err == nil && end == 0 {
		_, err = f.Write(appendJournalHeader(nil, gen))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("offsets: repair journal %s: %w", path, err)
	}
	return nil
}

func (s *Store) syncLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.Sync() // a failure is sticky and returned by later writes
		}
	}
}

// Close stops the background goroutine (SyncInterval) and waits for it,
// writes and fsyncs the journal (making every write durable for the next
// Open), and releases the directory. Later calls return ErrClosed.
func (s *Store) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.fileMu.Lock()
	err := s.failed
	if err == nil {
		if err = s.flushLocked(); err == nil {
			if err = s.journal.Sync(); err != nil {
				err = fmt.Errorf("offsets: fsync journal: %w", err)
			}
		}
	}
	if cerr := s.journal.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("offsets: %w", cerr)
	}
	s.fileMu.Unlock()
	if err == nil {
		s.durableLocked(s.writeSeq)
		s.markSynced(s.writeSeq)
	} else if s.failed == nil {
		s.failed = err
	}
	s.syncMu.Lock()
	s.syncCond.Broadcast()
	s.syncMu.Unlock()
	if cerr := s.lock.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("offsets: %w", cerr)
	}
	return err
}

// flushLocked writes the append buffer to the journal. It needs mu and
// fileMu. A failure is sticky.
func (s *Store) flushLocked() error {
	if s.failed != nil {
		return s.failed
	}
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.journal.Write(s.buf)
	s.buf = s.buf[:0]
	if err != nil {
		s.failed = fmt.Errorf("offsets: write journal: %w", err)
		return s.failed
	}
	return nil
}

// durableLocked applies to the durable state the pending records up to
// sequence number target, which an fsync has just made durable. It needs mu
// held exclusively.
func (s *Store) durableLocked(target uint64) {
	off := 0
	for s.durSeq < target && off < len(s.pending) {
		end := off + recordHeaderSize + int(binary.LittleEndian.Uint32(s.pending[off+8:]))
		decodeRecord(s.st, s.pending[off+recordHeaderSize:end]) // encoded by this package
		off = end
		s.durSeq++
	}
	n := copy(s.pending, s.pending[off:])
	s.pending = s.pending[:n]
	if n == 0 && int64(cap(s.pending)) > 2*s.opts.CompactBytes+flushBytes {
		s.pending = nil // grown by a long run without fsync: let it go
	}
}

func (s *Store) markSynced(seq uint64) {
	s.syncMu.Lock()
	if seq > s.syncedSeq {
		s.syncedSeq = seq
	}
	s.syncCond.Broadcast()
	s.syncMu.Unlock()
}

// writableLocked is the check every write starts with, under mu.
func (s *Store) writableLocked() error {
	if s.closed {
		return ErrClosed
	}
	return s.failed
}

// appendedLocked finishes the record that starts at start in buf, queues it
// in pending (it reaches the state when an fsync covers it), and writes or
// compacts when due. It returns the record's sequence number; a compaction
// failure is only recorded (the record is appended).
func (s *Store) appendedLocked(start int) (uint64, error) {
	finishRecord(s.buf, start)
	s.pending = append(s.pending, s.buf[start:]...)
	s.size += int64(len(s.buf) - start)
	s.writeSeq++
	s.stats.Records++
	seq := s.writeSeq
	if len(s.buf) >= flushBytes {
		s.fileMu.Lock()
		err := s.flushLocked()
		s.fileMu.Unlock()
		if err != nil {
			return seq, err
		}
	}
	if s.size >= s.compactAt {
		_ = s.compactLocked() // recorded in Stats; the record itself is appended
	}
	return seq, nil
}

// wait returns once record seq is durable, under SyncAlways.
func (s *Store) wait(seq uint64) error {
	if s.opts.Sync != SyncAlways {
		return nil
	}
	return s.waitDurable(seq)
}

// waitDurable returns when the records up to seq are fsynced. The first
// waiter that finds no fsync running leads: it writes the buffer and fsyncs
// for everyone; the others wait for it (group commit).
func (s *Store) waitDurable(seq uint64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for s.syncedSeq < seq {
		if s.syncing {
			s.syncCond.Wait()
			continue
		}
		s.syncing = true
		s.syncMu.Unlock()
		// Let committers that are runnable (typically those the last fsync
		// woke, committing again) append before the buffer is taken, so
		// that this fsync covers them too instead of leaving them for the
		// next one. With one committer this costs next to nothing.
		runtime.Gosched()
		target, err := s.syncOnce()
		s.syncMu.Lock()
		s.syncing = false
		if err == nil && target > s.syncedSeq {
			s.syncedSeq = target
		}
		s.syncCond.Broadcast()
		if err != nil && s.syncedSeq < seq {
			return err
		}
	}
	return nil
}

// syncOnce writes the buffer and fsyncs the journal, with appends and reads
// going on meanwhile. It returns the sequence number it made durable.
func (s *Store) syncOnce() (uint64, error) {
	s.mu.Lock()
	if err := s.writableLocked(); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	s.fileMu.Lock()
	target := s.writeSeq
	out := s.buf
	s.buf, s.spare = s.spare[:0], nil
	f := s.journal
	s.mu.Unlock()

	var err error
	if len(out) > 0 {
		if _, err = f.Write(out); err != nil {
			err = fmt.Errorf("offsets: write journal: %w", err)
		}
	}
	if err == nil {
		if err = f.Sync(); err != nil {
			err = fmt.Errorf("offsets: fsync journal: %w", err)
		}
		s.syncs.Add(1)
	}
	s.spare = out[:0]
	s.fileMu.Unlock()
	// The reads see the records up to target before their committers
	// wake (the caller marks them synced after this returns).
	s.mu.Lock()
	if err != nil {
		if s.failed == nil {
			s.failed = err
		}
	} else {
		s.durableLocked(target)
	}
	s.mu.Unlock()
	return target, err
}

// Sync writes and fsyncs everything appended so far. When it returns nil,
// the reads (Fetch, MinCommitted, ...) see every write that returned
// before it was called.
func (s *Store) Sync() error {
	s.mu.RLock()
	err := s.writableLocked()
	seq := s.writeSeq
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	return s.waitDurable(seq)
}

// Compact writes a snapshot of the whole state and starts a new journal now.
// It starts as Sync does, making every write appended durable and visible
// to the reads, so that the snapshot holds them all.
func (s *Store) Compact() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	return s.compactLocked()
}

// compactLocked snapshots the state as generation gen+1 and switches to a
// new journal; the steps and the crash argument are in the package doc.
// Commits wait meanwhile. A failure leaves the store on the old journal.
func (s *Store) compactLocked() (err error) {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	// Step 1: make every record appended durable in journal G, so that the
	// state, which is what the snapshot holds, has them all.
	if err := s.flushLocked(); err != nil {
		return err
	}
	if s.durSeq < s.writeSeq {
		if err := s.journal.Sync(); err != nil {
			if s.failed == nil {
				s.failed = fmt.Errorf("offsets: fsync journal: %w", err)
			}
			return s.failed
		}
		s.syncs.Add(1)
		s.durableLocked(s.writeSeq)
		s.markSynced(s.writeSeq)
	}
	next := s.gen + 1
	npath := s.path(journalName(next))
	defer func() {
		if err != nil {
			s.compactErr = err
			s.compactAt = s.size + s.opts.CompactBytes
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
	nf, err := s.fs.OpenFile(npath, os.O_WRONLY|os.O_APPEND, s.opts.FileMode)
	if err != nil {
		_ = s.fs.Remove(npath)
		return fmt.Errorf("offsets: %w", err)
	}
	s.snapBuf = encodeSnapshot(s.snapBuf, s.st, next)
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
			// what it needs.
			err = fmt.Errorf("offsets: fsync directory after the snapshot rename: %w", err)
			if s.failed == nil {
				s.failed = err
			}
			return err
		}
		_ = s.fs.Remove(npath)
		return fmt.Errorf("offsets: write snapshot: %w", err)
	}
	old, oldGen := s.journal, s.gen
	s.journal, s.gen, s.size = nf, next, journalHeaderSize
	s.compactAt, s.compactErr = s.opts.CompactBytes, nil
	s.stats.Compactions++
	_ = old.Close()
	_ = s.fs.Remove(s.path(journalName(oldGen))) // if it stays, Open removes it
	return nil
}

// writeSnapshot replaces the snapshot with data so that a crash leaves the
// old one or the new one, never a mix: it writes snapshot.tmp, fsyncs it,
// renames it over the snapshot and fsyncs the directory. renamed reports
// whether the rename happened: a failure after it (the directory fsync)
// leaves the new snapshot in place, durable or not. A failed rename
// changes nothing (rename is atomic).
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

func (s *Store) checkName(what, name string) error {
	if name == "" {
		return invalidf("empty %s name", what)
	}
	if len(name) > MaxNameBytes {
		return invalidf("%s name of %d bytes, more than %d", what, len(name), MaxNameBytes)
	}
	return nil
}

func (s *Store) checkCommit(topic string, partition int32, offset int64, metadata string) error {
	if err := s.checkName("topic", topic); err != nil {
		return err
	}
	if partition < 0 {
		return invalidf("negative partition %d", partition)
	}
	if offset < 0 {
		return invalidf("negative offset %d", offset)
	}
	if len(metadata) > s.opts.MaxMetadataBytes {
		return invalidf("metadata of %d bytes, more than %d", len(metadata), s.opts.MaxMetadataBytes)
	}
	return nil
}

// Commit records that group will next read offset of topic-partition, with
// optional metadata, and registers the group's interest in the topic. It is
// durable per Options.Sync (under SyncAlways, fsynced before it returns).
// The reads see it once it is durable: when it returns under SyncAlways,
// after the next fsync under SyncInterval, after Sync or a compaction under
// SyncNever; never, when the fsync fails.
func (s *Store) Commit(group, topic string, partition int32, offset int64, metadata string) error {
	if err := s.checkName("group", group); err != nil {
		return err
	}
	if err := s.checkCommit(topic, partition, offset, metadata); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	s.mu.Lock()
	if err := s.writableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	var start int
	s.buf, start = appendCommitHead(s.buf, group, now, 1)
	s.buf = appendEntry(s.buf, topic, partition, offset, metadata)
	seq, err := s.appendedLocked(start)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.wait(seq)
}

// CommitBatch commits several positions of one group atomically: they are
// one journal record, so after a crash either all or none are there. A
// repeated partition takes its last value. An empty batch does nothing.
// Durable and visible like Commit (all at once).
func (s *Store) CommitBatch(group string, commits []Commit) error {
	if err := s.checkName("group", group); err != nil {
		return err
	}
	if len(commits) == 0 {
		return nil
	}
	size := 0 // an upper bound of the encoded size, checked before encoding
	for i, c := range commits {
		if err := s.checkCommit(c.Topic, c.Partition, c.Offset, c.Metadata); err != nil {
			return fmt.Errorf("commit %d: %w", i, err)
		}
		size += len(c.Topic) + len(c.Metadata) + 2*binary.MaxVarintLen64 + 12
		if size > MaxRecordBytes {
			return invalidf("batch of more than %d bytes", MaxRecordBytes)
		}
	}
	now := time.Now().UnixNano()
	s.mu.Lock()
	if err := s.writableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	var start int
	s.buf, start = appendCommitHead(s.buf, group, now, len(commits))
	for _, c := range commits {
		s.buf = appendEntry(s.buf, c.Topic, c.Partition, c.Offset, c.Metadata)
	}
	if n := len(s.buf) - start - recordHeaderSize; n > MaxRecordBytes {
		s.buf = s.buf[:start]
		s.mu.Unlock()
		return invalidf("batch of %d bytes, more than %d", n, MaxRecordBytes)
	}
	seq, err := s.appendedLocked(start)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.wait(seq)
}

// writeGroupTopic appends a delete-group, subscribe or unsubscribe record,
// or, when the state shows it would change nothing, only waits for what is
// already appended to be durable. The state can show that only when no
// record is pending (one of them may undo what it shows); otherwise the
// record is appended anyway, which is harmless: records set absolute
// values.
func (s *Store) writeGroupTopic(typ byte, group, topic string) error {
	s.mu.Lock()
	if err := s.writableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	g := s.st.groups[group]
	var t *topicState
	if g != nil {
		t = g.topics[topic]
	}
	noop := len(s.pending) == 0 && ((typ == recDeleteGroup && g == nil) ||
		(typ == recSubscribe && t != nil) ||
		(typ == recUnsubscribe && t == nil))
	var seq uint64
	var err error
	if noop {
		seq = s.writeSeq
	} else {
		start := len(s.buf)
		s.buf = appendGroupTopic(s.buf, typ, group, topic)
		seq, err = s.appendedLocked(start)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.wait(seq)
}

// DeleteGroup removes a group, its positions and its interests. It is
// durable, and visible to the reads, like a commit: until then the group
// still holds retention. Deleting an unknown group does nothing.
func (s *Store) DeleteGroup(group string) error {
	if err := s.checkName("group", group); err != nil {
		return err
	}
	return s.writeGroupTopic(recDeleteGroup, group, "")
}

// Subscribe registers the group's interest in a topic before any commit:
// from then on the group holds every partition of the topic for retention
// (MinCommitted is 0 where it has not committed) once the subscription is
// durable. Durable and visible like a commit.
func (s *Store) Subscribe(group, topic string) error {
	if err := s.checkName("group", group); err != nil {
		return err
	}
	if err := s.checkName("topic", topic); err != nil {
		return err
	}
	return s.writeGroupTopic(recSubscribe, group, topic)
}

// Unsubscribe removes the group's interest in the topic and its positions
// there. Durable and visible like a commit: until then the group still
// holds retention on the topic.
func (s *Store) Unsubscribe(group, topic string) error {
	if err := s.checkName("group", group); err != nil {
		return err
	}
	if err := s.checkName("topic", topic); err != nil {
		return err
	}
	return s.writeGroupTopic(recUnsubscribe, group, topic)
}

// Fetch returns the group's durable position on the partition, or
// ErrNoCommit: a commit shows once it is durable (see Commit), so what
// Fetch returns survives a crash.
func (s *Store) Fetch(group, topic string, partition int32) (Position, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Position{}, ErrClosed
	}
	if g := s.st.groups[group]; g != nil {
		if t := g.topics[topic]; t != nil {
			if p, ok := t.parts[partition]; ok {
				return p.public(topic, partition), nil
			}
		}
	}
	return Position{}, ErrNoCommit
}

func (p position) public(topic string, partition int32) Position {
	return Position{Topic: topic, Partition: partition, Offset: p.offset,
		Metadata: p.metadata, Time: time.Unix(0, p.time)}
}

// Groups returns the groups of the durable state, sorted. It is nil after
// Close.
func (s *Store) Groups() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	out := make([]string, 0, len(s.st.groups))
	for g := range s.st.groups {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// Positions returns the group's durable positions sorted by topic and
// partition.
func (s *Store) Positions(group string) []Position {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g := s.st.groups[group]
	if s.closed || g == nil {
		return nil
	}
	var out []Position
	for tname, t := range g.topics {
		for p, pos := range t.parts {
			out = append(out, pos.public(tname, p))
		}
	}
	slices.SortFunc(out, func(a, b Position) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// Readers returns the groups with durable interest in the topic, sorted.
func (s *Store) Readers(topic string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := s.st.readers[topic]
	if s.closed || len(r) == 0 {
		return nil
	}
	out := make([]string, 0, len(r))
	for g := range r {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// MinCommitted is what the retention cleaner asks: the smallest committed
// offset on the partition over the groups that read the topic. ok is false
// when no group reads the topic (or the store is closed). A reader that has
// not committed on this partition holds all of it: the answer is then 0.
//
// It answers from durable writes only: a commit (or an Unsubscribe or
// DeleteGroup that would raise the minimum) counts once an fsync covering
// it has succeeded (Sync, the group commit of SyncAlways, the interval of
// SyncInterval, a compaction, Close), never when that fsync failed. So
// after a power cut, the commits that survive are never below what
// MinCommitted said, and no segment the cleaner deleted on its word was
// still needed.
func (s *Store) MinCommitted(topic string, partition int32) (offset int64, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := s.st.readers[topic]
	if s.closed || len(r) == 0 {
		return 0, false
	}
	first := true
	for gname := range r {
		p, has := s.st.groups[gname].topics[topic].parts[partition]
		if !has {
			return 0, true
		}
		if first || p.offset < offset {
			offset, first = p.offset, false
		}
	}
	return offset, true
}

// Stats returns counters and sizes; Groups and Positions count the
// durable state, like the reads.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.stats
	st.Groups, st.Positions = len(s.st.groups), s.st.entries
	st.JournalBytes, st.CompactErr = s.size, s.compactErr
	st.Syncs = s.syncs.Load()
	st.Generation = s.gen // written only with mu held exclusively
	return st
}
