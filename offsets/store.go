package offsets

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seglog/seglog/vfs"
)

// SyncPolicy says when commits are fsynced. Its names and order are
// storage.SyncPolicy's (which also has every-n).
type SyncPolicy int

const (
	// SyncDefault is the zero value: SyncAlways.
	SyncDefault SyncPolicy = iota
	// SyncNever leaves flushing to Sync, Close and compaction.
	SyncNever
	// SyncInterval fsyncs every Options.SyncInterval in the background.
	SyncInterval
	// SyncAlways fsyncs before every write returns; concurrent writes share
	// one fsync.
	SyncAlways
)

// String returns the policy's name.
func (p SyncPolicy) String() string {
	switch p {
	case SyncDefault:
		return "default"
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return "SyncPolicy(" + strconv.Itoa(int(p)) + ")"
}

// Options configure a Store. The zero value is usable. OpenReadOnly uses
// only FS and RecoverCorrupt (it still validates the others).
type Options struct {
	FS               vfs.FS        // nil: vfs.Default
	Sync             SyncPolicy    // default SyncAlways
	SyncInterval     time.Duration // for SyncInterval; default 1s
	CompactBytes     int64         // compact when the journal exceeds this; default 4 MiB
	MaxMetadataBytes int           // default 4096, at most 1 MiB
	// RecoverCorrupt makes Open keep what is before a corrupt record in the
	// middle of a journal (and truncate there) instead of failing.
	// OpenReadOnly then keeps what is before it too, and cuts nothing.
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
	appendLockName          = "append.lock"
)

func (o *Options) defaults() error {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Sync == SyncDefault {
		o.Sync = SyncAlways
	}
	if o.Sync < SyncNever || o.Sync > SyncAlways {
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

// Position is a group's committed position on a partition.
type Position struct {
	Topic     string
	Partition int32
	Offset    int64
	Metadata  string
	Time      time.Time // when committed
}

// Store is a durable per-consumer-group offset store. Several Stores, in
// one process or several, may be open on one directory; see the package
// doc.
type Store struct {
	dir      string
	opts     Options
	fs       vfs.FS
	readOnly bool
	lock     vfs.File // LOCK, flock'ed shared for the Store's life (nil: read-only)
	alock    vfs.File // append.lock, flock'ed exclusively around each append (nil: read-only)

	// fileMu guards the journal this store appends to or follows, what it
	// has read or written of it, and the fields below it. It is not held
	// during an fsync of the journal (the journal's reference count keeps
	// it open). Lock order: fileMu, then mu, then syncMu.
	fileMu sync.Mutex
	j      *journal // nil once closed (or, read-only, while the directory has no journal)
	done   bool     // Close has run
	// The journal's bytes [applied, end) are valid records that this store
	// wrote or read and that no fsync it knows of covers yet, kept in
	// pending (in journal order) until one does. st (under mu) is the state
	// at position applied.
	end        int64
	applied    int64
	pending    []byte
	foreignEnd int64      // end of the last records of other stores in pending (0: none)
	own        []ownWrite // this store's writes not known durable, in order
	writtenSeq uint64     // own records written to the journal
	ackSeq     uint64     // own records known durable
	epoch      uint64     // incremented at every switch of journal or reload
	stuckSize  int64      // read-only: size of a journal whose header was missing when last read (-1: none)
	stuckBytes int64      // read-only: bytes past the last valid record of the journal followed
	roDropped  int64      // read-only: bytes past the valid records of the older journals read
	tailBuf    []byte
	jstat      syscall.Stat_t
	spare      []byte // the buffer a writer swaps in for buf
	snapBuf    []byte
	compactErr error
	refreshErr error
	tailed     uint64
	reloads    uint64

	// mu guards the state, the append buffer and the fields below it.
	mu       sync.RWMutex
	closed   bool
	failed   error // sticky: a journal write or fsync failed
	st       *state
	buf      []byte // records appended and not yet written to the journal
	writeSeq uint64 // records appended since Open
	stats    Stats  // Records, Compactions, DroppedBytes

	// size mirrors end, for the compaction trigger (with the buffer's
	// length); compactAt is where it triggers.
	size      atomic.Int64
	compactAt atomic.Int64

	// syncMu guards the group-commit state.
	syncMu      sync.Mutex
	syncCond    sync.Cond
	syncing     bool   // a leader is writing, reading and fsyncing
	syncedSeq   uint64 // own records known durable
	syncedEpoch uint64 // with syncedPos: how far the state goes
	syncedPos   int64

	syncs atomic.Uint64

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// ownWrite is one write of this store's records: they end at end and the
// last one has sequence number seq.
type ownWrite struct {
	end int64
	seq uint64
}

func newStore(dir string, opts Options, readOnly bool) *Store {
	s := &Store{dir: dir, opts: opts, fs: opts.FS, readOnly: readOnly, stop: make(chan struct{}), stuckSize: -1}
	s.syncCond.L = &s.syncMu
	s.st = newState(0)
	s.compactAt.Store(opts.CompactBytes)
	return s
}

// Open opens the store in dir to read and write, creating the directory if
// needed (durably: the parents of the directories it creates are fsynced).
// Other Stores, in this process or others, may have the directory open at
// the same time (see the package doc). Under the directory's append lock
// it removes what a crash left (temporary snapshots, obsolete journals,
// torn journal tails) and replays the snapshot and journals, fsyncing what
// it replays before serving it. It refuses a dir, journal, snapshot or lock
// file that is a symbolic link (an error wrapping ErrInvalid), and returns
// ErrLocked while a seglog older than the shared journal holds the
// directory.
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
	s := newStore(dir, opts, false)
	if s.lock, err = openLock(fs, s.path(lockName), opts.FileMode); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if s.j != nil {
				_ = s.j.f.Close()
			}
			if s.alock != nil {
				_ = s.alock.Close()
			}
			_ = s.lock.Close()
		}
	}()
	if err := flock(s.lock, lockShared); err != nil {
		return nil, err
	}
	if s.alock, err = openLock(fs, s.path(appendLockName), opts.FileMode); err != nil {
		return nil, err
	}
	s.fileMu.Lock()
	err = s.openLocked()
	s.fileMu.Unlock()
	if err != nil {
		return nil, err
	}
	if opts.Sync == SyncInterval {
		s.wg.Add(1)
		go s.syncLoop()
	}
	return s, nil
}

// openLocked recovers the directory under the append lock; a directory
// that an older seglog left with more than one journal is compacted into
// one, so that the others can follow a single journal.
func (s *Store) openLocked() error {
	if err := flock(s.alock, lockExclusive); err != nil {
		return err
	}
	defer funlock(s.alock)
	l, err := s.recoverLocked()
	if err != nil {
		return err
	}
	s.installLocked(l)
	if l.journals > 1 {
		return s.compactLocked(true)
	}
	return nil
}

// OpenReadOnly opens the store in dir to read only, beside any number of
// Stores that write to it. It takes no lock and changes no byte in the
// directory: it creates, removes, renames and truncates nothing (a torn
// tail, a temporary snapshot or an obsolete journal stays for a writing
// Open to deal with). What it serves is durable: it fsyncs the directory
// and the journals it reads (fsync writes no byte; it makes what other
// processes wrote reach the disk). Every read follows the journal first:
// it sees the commits of other Stores that were acknowledged before it
// began (see the package doc). The write methods return ErrReadOnly.
//
// A directory that does not exist is an error wrapping fs.ErrNotExist; an
// empty one is an empty store. A corrupt snapshot or journal is a
// *CorruptError (with RecoverCorrupt, a corruption in the middle of a
// journal keeps what is before it, as Open would, without cutting).
func OpenReadOnly(dir string, opts Options) (*Store, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	fi, err := opts.FS.Lstat(dir)
	switch {
	case err != nil:
		return nil, fmt.Errorf("offsets: %w", err)
	case fi.Mode()&os.ModeSymlink != 0:
		return nil, symlinkError(dir)
	case !fi.IsDir():
		return nil, invalidf("%s is not a directory", dir)
	}
	s := newStore(dir, opts, true)
	l, err := s.loadReadOnly()
	if err != nil {
		return nil, err
	}
	s.fileMu.Lock()
	s.installLocked(l)
	s.fileMu.Unlock()
	return s, nil
}

// symlinkError is the error for a symbolic link where the store expects
// its directory or one of its files.
func symlinkError(path string) error {
	return invalidf("%s is a symbolic link; the offsets store follows none (its directory and files must be real)", path)
}

func (s *Store) path(name string) string { return filepath.Join(s.dir, name) }

func journalName(gen uint64) string { return fmt.Sprintf("%s%020d", journalPrefix, gen) }

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
// writes and fsyncs this store's records (making every write durable for
// the next Open, and for the other Stores on the directory), and releases
// the directory. Later calls return ErrClosed. On a read-only store it
// only closes its files.
func (s *Store) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	s.wg.Wait()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true // no more appends: buf is final
	err := s.failed
	s.mu.Unlock()

	s.fileMu.Lock()
	if err == nil && !s.readOnly {
		err = s.writeLocked()
		if err == nil && s.applied < s.end {
			if err = s.j.f.Sync(); err != nil {
				err = s.failLocked(fmt.Errorf("offsets: fsync journal: %w", err))
			} else {
				s.syncs.Add(1)
				s.durableLocked(s.epoch, s.end)
			}
		}
	}
	if s.j != nil {
		s.releaseLocked(s.j)
		s.j = nil
	}
	s.done = true
	s.fileMu.Unlock()
	for _, f := range []vfs.File{s.alock, s.lock} {
		if f == nil {
			continue
		}
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("offsets: %w", cerr)
		}
	}
	s.syncMu.Lock()
	s.syncCond.Broadcast() // committers whose records did not make it see the failure
	s.syncMu.Unlock()
	return err
}
