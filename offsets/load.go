package offsets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/seglog/seglog/vfs"
)

// loaded is a state read from the directory, and the journal to append to
// or follow after it.
type loaded struct {
	st       *state
	j        *journal // nil: read-only, and the directory has no journal
	end      int64    // valid length of j (0: its header is missing)
	journals int      // journals at or above the snapshot's generation
	dropped  int64    // bytes past the valid records (cut, unless read-only)
	tail     int64    // read-only: of dropped, those at the end of j
}

// listing is what the store makes of its directory's entries.
type listing struct {
	snapshot bool
	gens     []uint64 // journals, sorted
	temps    []string // interrupted snapshot writes
}

// classify says what a name in the store's directory is, and a journal's
// generation.
func classify(name string) (FileKind, uint64) {
	switch {
	case name == lockName || name == appendLockName:
		return FileLock, 0
	case name == snapshotName:
		return FileSnapshot, 0
	case strings.HasPrefix(name, snapshotName) && strings.HasSuffix(name, vfs.TempSuffix):
		// Whatever the temporary name: older versions used one of their
		// own per write.
		return FileTemp, 0
	}
	rest, ok := strings.CutPrefix(name, journalPrefix)
	if gen, err := strconv.ParseUint(rest, 10, 64); ok && len(rest) == 20 && err == nil {
		return FileJournal, gen
	}
	return FileOther, 0
}

// listDir lists the store's directory. A file of the store (not a
// temporary one) that is a symbolic link or not a regular file is an error
// wrapping ErrInvalid.
func listDir(fs vfs.FS, dir string) (listing, error) {
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return listing{}, fmt.Errorf("offsets: %w", err)
	}
	var ls listing
	for _, e := range entries {
		kind, gen := classify(e.Name())
		switch kind {
		case FileOther:
			continue // not ours
		case FileTemp:
			ls.temps = append(ls.temps, e.Name())
			continue
		}
		if err := checkType(dir+string(os.PathSeparator)+e.Name(), e.Type()); err != nil {
			return listing{}, err
		}
		switch kind {
		case FileJournal:
			ls.gens = append(ls.gens, gen)
		case FileSnapshot:
			ls.snapshot = true
		}
	}
	slices.Sort(ls.gens)
	return ls, nil
}

// checkType refuses a symbolic link or a non-regular file where the store
// expects one of its files.
func checkType(path string, mode os.FileMode) error {
	if mode&os.ModeSymlink != 0 {
		return symlinkError(path)
	}
	if !mode.IsRegular() {
		return invalidf("%s is not a regular file", path)
	}
	return nil
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

// readAll reads an open file whole, refusing one over limit bytes.
func readAll(f vfs.File, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("offsets: %s: %d bytes, more than the %d allowed: %w", f.Name(), fi.Size(), limit, vfs.ErrTooLarge)
	}
	data := make([]byte, fi.Size())
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("offsets: read %s: %w", f.Name(), err)
	}
	return data[:n], nil // shorter if it was cut meanwhile
}

// recoverLocked loads the snapshot, replays the journals and opens the
// active one, repairing what a crash left. It runs under the append lock
// (at Open, and when another store switched journals), so no other store
// writes meanwhile.
//
// What it serves must be durable, whatever the store that wrote last did
// before it died: the directory is fsynced before anything is deleted (a
// snapshot rename may not be durable yet, and it is what makes older
// journals obsolete), every journal replayed is fsynced (its tail may be
// in the page cache only), and the directory is fsynced again after
// removals and creations, before any commit is accepted.
func (s *Store) recoverLocked() (*loaded, error) {
	ls, err := listDir(s.fs, s.dir)
	if err != nil {
		return nil, err
	}
	for _, name := range ls.temps {
		// A snapshot write that a crash interrupted: only the holder of
		// the append lock writes one. Removing a link removes the link
		// only.
		if err := s.fs.Remove(s.path(name)); err != nil {
			return nil, fmt.Errorf("offsets: remove temporary snapshot: %w", err)
		}
	}
	l := &loaded{st: newState(0)}
	var snapGen uint64
	if ls.snapshot {
		path := s.path(snapshotName)
		data, err := vfs.ReadFile(s.fs, path, maxSnapshotBytes)
		if err != nil {
			return nil, fmt.Errorf("offsets: %w", err)
		}
		st, gen, pos, reason := decodeSnapshot(data)
		if reason != "" {
			return nil, &CorruptError{File: path, Pos: pos, Reason: reason}
		}
		l.st, snapGen = st, gen
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	live, changed, err := s.replayJournalsLocked(ls.gens, snapGen, l)
	if err != nil {
		return nil, err
	}
	if err := s.activateLocked(l, live, snapGen, changed); err != nil {
		return nil, err
	}
	return l, nil
}

// replayed is a journal that recovery replayed.
type replayed struct {
	gen     uint64
	path    string
	records int
	size    int // of the file
	end     int // valid prefix
}

// replayJournalsLocked replays the journals from the snapshot's generation
// on into l, removing older ones (and, after a recovered corruption, later
// ones), and an empty journal that an interrupted compaction left. changed
// says whether files were removed (the directory needs an fsync).
func (s *Store) replayJournalsLocked(gens []uint64, snapGen uint64, l *loaded) (live []replayed, changed bool, err error) {
	stopped := false // a corruption was recovered: later journals are dropped
	for _, gen := range gens {
		path := s.path(journalName(gen))
		if gen < snapGen || stopped {
			if err := s.fs.Remove(path); err != nil {
				return nil, false, fmt.Errorf("offsets: remove obsolete journal: %w", err)
			}
			changed = true
			continue
		}
		data, err := vfs.ReadFile(s.fs, path, 1<<62)
		if err != nil {
			return nil, false, fmt.Errorf("offsets: %w", err)
		}
		res := replayJournal(data, gen, l.st)
		if res.reason != "" {
			if !s.opts.RecoverCorrupt || res.newer {
				return nil, false, &CorruptError{File: path, Pos: int64(res.end), Reason: res.reason}
			}
			stopped = true
		}
		live = append(live, replayed{gen, path, res.records, len(data), res.end})
	}
	// A journal with no record above another one is what a crash left
	// when a compaction had created it but not yet renamed its snapshot
	// (after the rename, the snapshot makes the other one obsolete): the
	// stores that were appending go on appending to the other one, so it
	// goes, and they need not switch.
	for len(live) > 1 && live[len(live)-1].records == 0 {
		if err := s.fs.Remove(live[len(live)-1].path); err != nil {
			return nil, false, fmt.Errorf("offsets: remove an empty journal that a compaction left: %w", err)
		}
		changed = true
		live = live[:len(live)-1]
	}
	return live, changed, nil
}

// activateLocked makes the replayed journals durable (a torn tail cut, a
// missing header written), creates the first journal if there is none,
// and opens the last one for appending into l.
func (s *Store) activateLocked(l *loaded, live []replayed, snapGen uint64, changed bool) error {
	for _, r := range live {
		if r.end < r.size || r.end < journalHeaderSize {
			// A torn or corrupt tail, or a header that never reached
			// the disk (then the file holds no record): cut, rewrite
			// the header if needed, fsync.
			if err := s.cutJournal(r.path, r.gen, r.end); err != nil {
				return err
			}
			l.dropped += int64(r.size - r.end)
		} else if err := s.syncFile(r.path); err != nil {
			return err
		}
	}
	active := uint64(0)
	if len(live) > 0 {
		last := live[len(live)-1]
		active, l.end = last.gen, int64(max(last.end, journalHeaderSize))
	} else {
		active = max(snapGen, 1)
		if err := s.cutJournal(s.path(journalName(active)), active, 0); err != nil {
			return err
		}
		changed = true
		l.end = journalHeaderSize
	}
	if changed {
		if err := s.fs.SyncDir(s.dir); err != nil {
			return fmt.Errorf("offsets: %w", err)
		}
	}
	f, err := openNoFollow(s.fs, s.path(journalName(active)), os.O_RDWR|os.O_APPEND, s.opts.FileMode)
	if err != nil {
		return err
	}
	l.j, l.journals = s.newJournal(f, active), max(len(live), 1)
	return nil
}

// syncFile fsyncs a file of the store.
func (s *Store) syncFile(path string) error {
	return s.withFile(path, os.O_RDWR, "fsync", func(f vfs.File) error { return f.Sync() })
}

// cutJournal truncates (or creates) a journal to end bytes, rewriting its
// header when end is inside it, and fsyncs it. Creating one needs a
// directory fsync after it, which is the caller's.
func (s *Store) cutJournal(path string, gen uint64, end int) error {
	if end < journalHeaderSize {
		end = 0
	}
	return s.withFile(path, os.O_RDWR|os.O_CREATE, "repair journal", func(f vfs.File) error {
		err := f.Truncate(int64(end))
		if err == nil && end == 0 {
			_, err = f.Write(appendJournalHeader(nil, gen))
		}
		if err == nil {
			err = f.Sync()
		}
		return err
	})
}

// withFile opens the file at path with flag (an error opening it is
// returned as it is), runs do on it and closes it; an error of do or
// Close is returned as "offsets: <what> <path>: <error>".
func (s *Store) withFile(path string, flag int, what string, do func(f vfs.File) error) error {
	f, err := openNoFollow(s.fs, path, flag, s.opts.FileMode)
	if err != nil {
		return err
	}
	err = do(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("offsets: %s %s: %w", what, path, err)
	}
	return nil
}

// loadAttempts bounds how often loadReadOnly starts again because writers
// changed the directory while it read.
const loadAttempts = 20

// errChanged marks an attempt of loadReadOnly that met a change made
// meanwhile by a writer: it starts again.
var errChanged = errors.New("changed while read")

// loadReadOnly reads the snapshot and the journals as Open would, without a
// lock and without changing anything. Writers may compact meanwhile (a
// journal or snapshot it listed is gone, a journal it read as the last one
// is unlinked, an older journal still grows): it then starts again. A torn
// tail is skipped (and counted), not cut; a corruption in the middle of
// the last journal is read again before it is believed (a writer may have
// been cutting a torn tail and appending while it read). It fsyncs the
// directory and the journals it read, so that what it serves is durable.
func (s *Store) loadReadOnly() (*loaded, error) {
	var err error
	for attempt := 1; attempt <= loadAttempts; attempt++ {
		var l *loaded
		l, err = s.tryLoadReadOnly(attempt == loadAttempts)
		if !errors.Is(err, errChanged) {
			return l, err
		}
	}
	return nil, fmt.Errorf("offsets: %s changed on each of %d attempts to read it: %w", s.dir, loadAttempts, err)
}

// openedJournal is a journal a read-only load opened, and the size it read.
type openedJournal struct {
	f    vfs.File
	size int
}

// readSnapshotReadOnly reads the snapshot for a read-only load; a snapshot
// gone meanwhile is errChanged (a compaction replaced it: look again).
func (s *Store) readSnapshotReadOnly() (*state, uint64, error) {
	path := s.path(snapshotName)
	f, err := openNoFollow(s.fs, path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, fmt.Errorf("%w: %s", errChanged, path)
	}
	if err != nil {
		return nil, 0, err
	}
	data, err := readAll(f, maxSnapshotBytes)
	_ = f.Close()
	if err != nil {
		return nil, 0, err
	}
	st, gen, pos, reason := decodeSnapshot(data)
	if reason != "" {
		return nil, 0, &CorruptError{File: path, Pos: pos, Reason: reason}
	}
	return st, gen, nil
}

// closeJournals closes the journals a read-only load opened: all of them
// when it failed, else all but the last, which it follows.
func closeJournals(files []openedJournal, all bool) {
	for i, o := range files {
		if all || i < len(files)-1 {
			_ = o.f.Close()
		}
	}
}

// checkUnchanged checks that what a read-only load read still stands: the
// older journals final (a store appending to one would have appended after
// what was read) and the last one still linked (or a compaction replaced
// it meanwhile); errChanged if not.
func checkUnchanged(files []openedJournal) error {
	for i, o := range files {
		fi, err := o.f.Stat()
		if err != nil {
			return fmt.Errorf("offsets: %w", err)
		}
		if i < len(files)-1 && fi.Size() != int64(o.size) || i == len(files)-1 && unlinked(fi) {
			return fmt.Errorf("%w: %s", errChanged, o.f.Name())
		}
	}
	return nil
}

// syncServedReadOnly makes durable what a read-only load serves: the
// rename of the snapshot, the removal of journals and the journals' tails
// may still be in the page cache of the process that made them.
func (s *Store) syncServedReadOnly(snapshot bool, files []openedJournal) error {
	if snapshot || len(files) > 0 {
		if err := syncReadOnly(s.fs.SyncDir(s.dir)); err != nil {
			return fmt.Errorf("offsets: %w", err)
		}
	}
	for _, o := range files {
		if err := syncReadOnly(o.f.Sync()); err != nil {
			return fmt.Errorf("offsets: fsync %s: %w", o.f.Name(), err)
		}
	}
	s.syncs.Add(uint64(len(files)))
	return nil
}

func (s *Store) tryLoadReadOnly(last bool) (_ *loaded, err error) {
	ls, err := listDir(s.fs, s.dir)
	if err != nil {
		return nil, err
	}
	l := &loaded{st: newState(0)}
	var snapGen uint64
	if ls.snapshot {
		if l.st, snapGen, err = s.readSnapshotReadOnly(); err != nil {
			return nil, err
		}
	}
	var gens []uint64
	for _, g := range ls.gens {
		if g >= snapGen {
			gens = append(gens, g)
		}
	}
	if !last && ls.snapshot && (len(gens) == 0 || gens[0] != snapGen) {
		// A compaction writes journal G before snapshot G: this listing
		// is older than the snapshot read.
		return nil, fmt.Errorf("%w: no journal %d beside snapshot %d", errChanged, snapGen, snapGen)
	}
	var files []openedJournal
	defer func() { closeJournals(files, err != nil) }()
	for _, gen := range gens {
		path := s.path(journalName(gen))
		f, err := openNoFollow(s.fs, path, os.O_RDONLY, 0)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", errChanged, path)
		}
		if err != nil {
			return nil, err
		}
		files = append(files, openedJournal{f: f})
		data, err := readAll(f, 1<<62)
		if err != nil {
			return nil, err
		}
		files[len(files)-1].size = len(data)
		res := replayJournal(data, gen, l.st)
		if res.reason != "" {
			if !last && len(files) == len(gens) && !res.newer {
				return nil, fmt.Errorf("%w: %s: %s", errChanged, path, res.reason)
			}
			if !s.opts.RecoverCorrupt || res.newer {
				return nil, &CorruptError{File: path, Pos: int64(res.end), Reason: res.reason}
			}
			l.tail = int64(len(data) - res.end)
			l.dropped += l.tail
			l.end = int64(res.end)
			break // what follows a corruption is dropped, as Open would
		}
		l.tail = int64(len(data) - res.end)
		l.dropped += l.tail
		l.end = int64(res.end)
	}
	if !last {
		if err := checkUnchanged(files); err != nil {
			return nil, err
		}
	}
	if err := s.syncServedReadOnly(ls.snapshot, files); err != nil {
		return nil, err
	}
	l.journals = len(files)
	if len(files) > 0 {
		// After a corruption (RecoverCorrupt), the journal that holds it
		// is the one followed, never past it.
		l.j = s.newJournal(files[len(files)-1].f, gens[len(files)-1])
	}
	if l.end < journalHeaderSize {
		l.end = 0
	}
	return l, nil
}

// syncReadOnly ignores the failure of an fsync that a read-only filesystem
// refuses: it has nothing to write.
func syncReadOnly(err error) error {
	if errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}

// Lock modes.
const (
	lockShared    = syscall.LOCK_SH | syscall.LOCK_NB
	lockExclusive = syscall.LOCK_EX
)

// openLock opens (creating) a lock file of the store, refusing a symbolic
// link.
func openLock(fs vfs.FS, path string, mode os.FileMode) (vfs.File, error) {
	return openNoFollow(fs, path, os.O_RDWR|os.O_CREATE, mode)
}

// flock takes a lock on a lock file: shared and without waiting
// (ErrLocked if a seglog older than the shared journal holds LOCK), or
// exclusive, waiting for the holder (append.lock, held only for an
// append). A file with no OS file underneath (a test FS) is not locked.
func flock(f vfs.File, how int) error {
	osf := f.OSFile()
	if osf == nil {
		return nil
	}
	for {
		err := syscall.Flock(int(osf.Fd()), how)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("%w: %s", ErrLocked, f.Name())
		}
		return fmt.Errorf("offsets: lock %s: %w", f.Name(), err)
	}
}

// funlock releases a lock taken by flock.
func funlock(f vfs.File) {
	if osf := f.OSFile(); osf != nil {
		_ = syscall.Flock(int(osf.Fd()), syscall.LOCK_UN)
	}
}
