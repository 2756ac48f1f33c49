package offsets

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seglog/seglog/internal/vfs"
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
	Generation   uint64 // of the journal the store appends to or follows
	JournalBytes int64  // size of that journal as the store knows it, its own unwritten records included
	Records      uint64 // journal records this store appended since Open
	Tailed       uint64 // journal records of other stores this store read since Open
	Reloads      uint64 // times the store reread the directory since Open (another store compacted)
	Syncs        uint64 // fsyncs of the journal by this store since Open
	Compactions  uint64 // by this store, since Open
	// CompactErr is the last compaction failure, nil after a success.
	CompactErr error
	// DroppedBytes is, for a store opened to write, what it cut from
	// journal tails (torn, or corrupt with RecoverCorrupt) since Open.
	// For a read-only store it is what it found past the last valid
	// record of the journals it read (what a writing store would cut, or
	// an append in progress), and cut nothing.
	DroppedBytes int64
	// RefreshErr is the last failure to follow the journal from a read
	// (reads then answer from what was read before), nil after a success.
	RefreshErr error
	ReadOnly   bool // opened by OpenReadOnly
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

// writableLocked is the check every write starts with, under mu.
func (s *Store) writableLocked() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.readOnly:
		return ErrReadOnly
	}
	return s.failed
}

// appendedLocked counts the record that starts at start in buf, which it
// finishes. It returns the record's sequence number and whether the caller
// must write the buffer out (it passed flushBytes) or compact.
func (s *Store) appendedLocked(start int) (seq uint64, flush, compact bool) {
	finishRecord(s.buf, start)
	s.writeSeq++
	s.stats.Records++
	return s.writeSeq, len(s.buf) >= flushBytes, s.size.Load()+int64(len(s.buf)) >= s.compactAt.Load()
}

// appended writes or compacts when appendedLocked says so, and waits for
// record seq to be durable under SyncAlways. A compaction failure is only
// recorded (in Stats): the record is appended.
func (s *Store) appended(seq uint64, flush, compact bool) error {
	switch {
	case compact:
		if err := s.compact(false); err != nil && s.failure() != nil {
			return err
		}
	case flush:
		if err := s.flush(); err != nil {
			return err
		}
	}
	if s.opts.Sync != SyncAlways {
		return nil
	}
	return s.waitUntil(seq, 0, 0, true)
}

func (s *Store) failure() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.failed
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
// SyncNever; never, when the fsync fails. Commits of several Stores to one
// key: the one later in the journal wins (see the package doc).
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
	seq, flush, compact := s.appendedLocked(start)
	s.mu.Unlock()
	return s.appended(seq, flush, compact)
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
	seq, flush, compact := s.appendedLocked(start)
	s.mu.Unlock()
	return s.appended(seq, flush, compact)
}

// writeGroupTopic appends a delete-group, delete-topic, subscribe or
// unsubscribe record, or, when the state shows it would change nothing,
// only waits for what is already appended to be durable. The state can show
// that only once it has followed the journal (a record of another Store may
// undo what it shows) and when no record of this store is pending (one of
// them may too); otherwise the record is appended anyway, which is
// harmless: records set absolute values.
func (s *Store) writeGroupTopic(typ byte, group, topic string) error {
	if err := s.refresh(); err != nil && !s.readOnly {
		if ferr := s.failure(); ferr != nil {
			return ferr
		}
	}
	s.mu.Lock()
	if err := s.writableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	var g *groupState
	var t *topicState
	if typ != recDeleteTopic {
		g = s.st.groups[group]
		if g != nil {
			t = g.topics[topic]
		}
	}
	idle := len(s.buf) == 0 && s.syncedSeqLocked() == s.writeSeq
	noop := idle && ((typ == recDeleteGroup && g == nil) ||
		(typ == recDeleteTopic && len(s.st.readers[topic]) == 0) ||
		(typ == recSubscribe && t != nil) ||
		(typ == recUnsubscribe && t == nil))
	if noop {
		s.mu.Unlock()
		return nil
	}
	start := len(s.buf)
	if typ == recDeleteTopic {
		s.buf = appendDeleteTopic(s.buf, topic)
	} else {
		s.buf = appendGroupTopic(s.buf, typ, group, topic)
	}
	// appendGroupTopic finished the record; appendedLocked finishes it
	// again, the same way.
	seq, flush, compact := s.appendedLocked(start)
	s.mu.Unlock()
	return s.appended(seq, flush, compact)
}

// syncedSeqLocked returns how many of this store's records are durable
// (and in the state). It needs mu; it takes syncMu, which comes after.
func (s *Store) syncedSeqLocked() uint64 {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.syncedSeq
}

// DeleteGroup removes a group, its positions and its interests. It is
// durable, and visible to the reads, like a commit: until then the group
// still holds retention. Deleting an unknown group does nothing. Commits
// of the group that follow the deletion in the journal (another Store's)
// create it anew.
func (s *Store) DeleteGroup(group string) error {
	if err := s.checkName("group", group); err != nil {
		return err
	}
	return s.writeGroupTopic(recDeleteGroup, group, "")
}

// DeleteTopic removes every group's positions on the topic and interest in
// it, as Unsubscribe of every group that reads it would, in one record: it
// is atomic, and it removes exactly the commits and subscriptions to the
// topic that precede it in the journal, whichever Store made them (what
// follows it stays: a group that commits on the topic afterwards reads it
// anew). A group left with no topic is gone. Durable and visible like a
// commit. Deleting a topic no group reads does nothing.
//
// The record is new in this version: a seglog from before it reports a
// journal holding one as corrupt (until a compaction has folded it into
// the snapshot, whose format has not changed).
func (s *Store) DeleteTopic(topic string) error {
	if err := s.checkName("topic", topic); err != nil {
		return err
	}
	return s.writeGroupTopic(recDeleteTopic, "", topic)
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
// Fetch returns survives a crash. Like every read, it first follows the
// journal (see Refresh).
func (s *Store) Fetch(group, topic string, partition int32) (Position, error) {
	_ = s.refresh()
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
	_ = s.refresh()
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
	_ = s.refresh()
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
	_ = s.refresh()
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
// It answers from durable writes only: a commit (or an Unsubscribe,
// DeleteGroup or DeleteTopic that would raise the minimum) counts once an
// fsync covering it has succeeded (Sync, the group commit of SyncAlways,
// the interval of SyncInterval, a compaction, Close, or this store's own
// fsync of another Store's records before it reads them), never when that
// fsync failed. So after a power cut, the commits that survive are never
// below what MinCommitted said, and no segment the cleaner deleted on its
// word was still needed.
func (s *Store) MinCommitted(topic string, partition int32) (offset int64, ok bool) {
	_ = s.refresh()
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
// durable state, like the reads (it follows the journal first, as they
// do).
func (s *Store) Stats() Stats {
	_ = s.refresh()
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.stats
	st.Groups, st.Positions = len(s.st.groups), s.st.entries
	st.JournalBytes = s.end + int64(len(s.buf))
	if s.j != nil {
		st.Generation = s.j.gen
	}
	st.CompactErr, st.RefreshErr = s.compactErr, s.refreshErr
	st.Syncs = s.syncs.Load()
	st.Tailed, st.Reloads = s.tailed, s.reloads
	st.ReadOnly = s.readOnly
	if s.readOnly {
		st.DroppedBytes = s.roDropped + s.stuckBytes
	}
	return st
}
