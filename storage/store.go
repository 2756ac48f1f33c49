package storage

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cespare/xxhash/v2"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// MaxTopicLength is the longest topic name (Kafka's limit).
const MaxTopicLength = 249

// ValidateTopic checks a topic name: 1 to 249 characters of
// [a-zA-Z0-9._-], and not "." or "..". Names are checked before anything
// touches the filesystem, so no name can reach outside the root.
func ValidateTopic(name string) error {
	if name == "" || len(name) > MaxTopicLength || name == "." || name == ".." {
		return fmt.Errorf("%w: %q: want 1 to %d characters of [a-zA-Z0-9._-], not . or ..", ErrInvalidTopic, truncateName(name), MaxTopicLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q: character %q at %d is not one of [a-zA-Z0-9._-]", ErrInvalidTopic, truncateName(name), c, i)
		}
	}
	return nil
}

func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// PartitionDir returns the directory name of a partition: <topic>-<n>.
func PartitionDir(topic string, partition int32) string {
	return topic + "-" + strconv.Itoa(int(partition))
}

// ParsePartitionDir splits a partition directory name into topic and
// partition; ok is false for anything else.
func ParsePartitionDir(name string) (topic string, partition int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.Itoa(int(p)) != name[i+1:] {
		return "", 0, false
	}
	if ValidateTopic(name[:i]) != nil {
		return "", 0, false
	}
	return name[:i], int32(p), true
}

// StoreOptions configure a Store.
type StoreOptions struct {
	// Log configures every partition log. Its Budget is replaced by the
	// store's.
	Log Options
	// MaxOpenFiles caps the files (and as many memory maps) that all
	// partitions hold open together. The default is half of the process's
	// open-file limit, at most a third of vm.max_map_count and at least 64.
	MaxOpenFiles int
}

// Store is many topics and partitions under one root directory. Partition
// logs are opened on first use; their files are closed when idle, so that
// the open files and maps of the whole store stay within MaxOpenFiles.
// A Store is safe for concurrent use.
type Store struct {
	root   string
	opts   StoreOptions
	budget *segment.Budget

	// mu guards topics, logs, deleting and closed. It is never held
	// while a log opens (recovery can take long) or closes: a slot in
	// logs stands for a log being opened.
	mu       sync.Mutex
	topics   map[string]int
	logs     map[string]*logSlot // by partition directory name
	deleting map[string]bool     // topics whose logs DeleteTopic is closing
	closed   bool

	// startsMu guards starts, the store's start-offset checkpoint as it is
	// on disk (startoffsets.go), and serializes its writes. It is taken
	// before any Log's writeMu.
	// cfgMu serializes the writes of topic configurations with a
	// partition's open, which reads its topic's and repairs its own copy
	// (partitionConfig).
	cfgMu sync.Mutex

	startsMu sync.Mutex
	starts   map[string]int64 // by partition directory name

	// deleter removes the files of the segments AdvanceStartOffsets took
	// out of their logs, in the background (deleter.go).
	deleter deleter

	lock *dirLock      // exclusive flock on the root directory
	rr   atomic.Uint64 // round-robin partitioner
	stop chan struct{}
	wg   sync.WaitGroup
}

// OpenStore opens (creating if needed) the store at root.
func OpenStore(root string, opts StoreOptions) (*Store, error) {
	opts.Log = opts.Log.withDefaults()
	if err := opts.Log.validate(); err != nil {
		return nil, err
	}
	if opts.MaxOpenFiles <= 0 {
		opts.MaxOpenFiles = defaultMaxOpenFiles()
	}
	s := &Store{root: root, opts: opts, budget: segment.NewBudget(opts.MaxOpenFiles), topics: map[string]int{}, logs: map[string]*logSlot{}, deleting: map[string]bool{}, stop: make(chan struct{})}
	s.opts.Log.Budget = s.budget
	s.opts.Log.externalFlusher = true
	s.opts.Log.unlocked = true // the store's lock covers its logs
	fsys := opts.Log.FS
	if opts.Log.ReadOnly {
		// A reader beside a writing process: no lock, no change.
		if fi, err := fsys.Lstat(root); err != nil {
			return nil, fmt.Errorf("storage: open store: %w", err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("storage: open store: %s is not a directory", root)
		}
	} else {
		// Durable: the root's entry in its parent is fsynced when created.
		if err := vfs.MkdirAllDurable(fsys, root, opts.Log.DirMode); err != nil {
			return nil, fmt.Errorf("storage: open store: %w", err)
		}
		lock, err := lockDir(root)
		if err != nil {
			return nil, err
		}
		s.lock = lock
	}
	if err := s.loadTopics(); err != nil {
		s.lock.unlock()
		return nil, err
	}
	if err := s.loadStartOffsets(); err != nil {
		s.lock.unlock()
		return nil, err
	}
	if opts.Log.Sync == SyncInterval && !opts.Log.ReadOnly {
		s.wg.Add(1)
		go everyTick(&s.wg, s.stop, s.opts.Log.SyncInterval, s.flushAll)
	}
	return s, nil
}

// loadTopics finds the topics from the partition directories under the
// root, finishing deletions that a crash interrupted (unless read-only).
func (s *Store) loadTopics() error {
	root, fsys, readOnly := s.root, s.opts.Log.FS, s.opts.Log.ReadOnly
	entries, err := fsys.ReadDir(root)
	if err != nil {
		return fmt.Errorf("storage: open store: %w", err)
	}
	parts := map[string][]int32{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".deleted") {
			if readOnly {
				continue
			}
			if err := fsys.RemoveAll(filepath.Join(root, name)); err != nil {
				return fmt.Errorf("storage: finish deleting %s: %w", name, err)
			}
			continue
		}
		topic, p, ok := ParsePartitionDir(name)
		if !ok {
			continue // not a partition: the offsets store, a marker, notes
		}
		if e.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("storage: open store: %w: %s is a symbolic link; partition directories must be real directories inside the root", ErrCorrupt, filepath.Join(root, name))
		}
		if !e.IsDir() {
			continue
		}
		parts[topic] = append(parts[topic], p)
	}
	for topic, ps := range parts {
		slices.Sort(ps)
		for i, p := range ps {
			if p != int32(i) {
				return fmt.Errorf("storage: open store: %w: topic %s has partition %d but not %d", ErrCorrupt, topic, p, i)
			}
		}
		s.topics[topic] = len(ps)
	}
	return nil
}

func defaultMaxOpenFiles() int {
	n := 1024
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur > 0 {
		n = int(min(rl.Cur/2, 1<<20))
	}
	if b, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		if m, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && m > 0 {
			n = min(n, m/3)
		}
	}
	return max(n, 64)
}

// Root returns the store's root directory.
func (s *Store) Root() string { return s.root }

// OpenFiles reports the files that partition segments hold open now.
func (s *Store) OpenFiles() int { return s.budget.OpenFiles() }

// logSlot is a partition's log in the store: ready is closed once the
// first caller of Log (or Follower) has opened it (l, or f in a read-only
// store) or failed (err).
type logSlot struct {
	ready chan struct{}
	l     *Log
	f     *Follower
	err   error
}

// close closes the slot's log or follower, if it opened.
func (slot *logSlot) close() error {
	switch {
	case slot.l != nil:
		return slot.l.Close()
	case slot.f != nil:
		return slot.f.Close()
	}
	return nil
}

// Log returns a partition's log, opening it on first use. The Log stays
// valid until the store is closed or the topic deleted; do not Close it.
// Partitions open concurrently: one partition's recovery does not hold up
// the others (callers for the same partition wait for its opening). A
// read-only store has followers instead (Follower): Log returns
// ErrReadOnly.
func (s *Store) Log(topic string, partition int32) (*Log, error) {
	if s.opts.Log.ReadOnly {
		return nil, fmt.Errorf("%w: the store's partitions are read through Store.Follower", ErrReadOnly)
	}
	slot, err := s.slot(topic, partition)
	if err != nil {
		return nil, err
	}
	return slot.l, nil
}

// Follower returns a partition's follower in a read-only store
// (StoreOptions.Log.ReadOnly), opening it on first use: what Log is to a
// writable store. It stays valid until the store is closed; do not Close
// it. On a writable store it returns an error wrapping ErrInvalidOptions:
// read through Log.
func (s *Store) Follower(topic string, partition int32) (*Follower, error) {
	if !s.opts.Log.ReadOnly {
		return nil, fmt.Errorf("%w: the store is writable: its partitions are read through Store.Log", ErrInvalidOptions)
	}
	slot, err := s.slot(topic, partition)
	if err != nil {
		return nil, err
	}
	return slot.f, nil
}

// slot returns a partition's opened slot, opening its log (or follower)
// on first use.
func (s *Store) slot(topic string, partition int32) (*logSlot, error) {
	if err := ValidateTopic(topic); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	n, ok := s.topics[topic]
	if !ok || s.deleting[topic] {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	if partition < 0 || int(partition) >= n {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s has partitions 0 to %d, not %d", ErrInvalidPartition, topic, n-1, partition)
	}
	name := PartitionDir(topic, partition)
	slot, ok := s.logs[name]
	if ok {
		s.mu.Unlock()
		<-slot.ready
		if slot.err != nil {
			return nil, slot.err
		}
		return slot, nil
	}
	slot = &logSlot{ready: make(chan struct{})}
	s.logs[name] = slot
	s.mu.Unlock()

	l, f, err := s.openLog(name)
	s.mu.Lock()
	if err != nil {
		delete(s.logs, name) // the next caller tries again
	}
	slot.l, slot.f, slot.err = l, f, err
	close(slot.ready)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return slot, nil
}

// OpenPartition is a partition whose log is open: Log in a writable
// store, Follower in a read-only one.
type OpenPartition struct {
	Topic     string
	Partition int32
	Log       *Log
	Follower  *Follower
}

// Stats returns the partition's Stats, from its log or its follower.
func (p OpenPartition) Stats() (Stats, error) {
	if p.Follower != nil {
		return p.Follower.Stats()
	}
	return p.Log.Stats()
}

// OpenPartitions lists the partitions whose logs are open now (opening
// none), sorted: for monitoring, which must not open what nobody uses.
func (s *Store) OpenPartitions() []OpenPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]OpenPartition, 0, len(s.logs))
	for name, slot := range s.logs {
		select {
		case <-slot.ready:
		default:
			continue // still opening
		}
		if slot.l == nil && slot.f == nil {
			continue
		}
		topic, p, _ := ParsePartitionDir(name)
		out = append(out, OpenPartition{Topic: topic, Partition: p, Log: slot.l, Follower: slot.f})
	}
	slices.SortFunc(out, func(a, b OpenPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// closeSlots waits for each slot's log to be opened and closes it.
func closeSlots(slots []*logSlot) error {
	var errs []error
	for _, slot := range slots {
		<-slot.ready
		errs = append(errs, slot.close())
	}
	return errors.Join(errs...)
}

// openLog opens a partition's log with its topic's configuration: a Log,
// or a Follower in a read-only store.
func (s *Store) openLog(name string) (*Log, *Follower, error) {
	dir := filepath.Join(s.root, name)
	cfg, err := s.partitionConfig(name)
	if err != nil {
		return nil, nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	opts := cfg.apply(s.opts.Log)
	opts.startFloor = s.startFloor(name)
	if opts.ReadOnly {
		f, err := OpenFollower(dir, opts)
		return nil, f, err
	}
	l, err := Open(dir, opts)
	return l, nil, err
}

// Partition chooses the partition for a record key: xxhash64 of the key
// modulo the partition count when there is a key, round-robin when the
// key is nil.
func (s *Store) Partition(topic string, key []byte) (int32, error) {
	n, err := s.Partitions(topic)
	if err != nil {
		return 0, err
	}
	return s.partitionFor(key, n), nil
}

func (s *Store) partitionFor(key []byte, n int) int32 {
	if key == nil {
		return int32(s.rr.Add(1) % uint64(n))
	}
	return int32(xxhash.Sum64(key) % uint64(n))
}

// Sync fsyncs every open log. A read-only store returns ErrReadOnly.
func (s *Store) Sync() error {
	if s.opts.Log.ReadOnly {
		return ErrReadOnly
	}
	var errs []error
	for _, l := range s.openLogs() {
		if err := l.Sync(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Store) openLogs() []*Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Log, 0, len(s.logs))
	for _, slot := range s.logs {
		select {
		case <-slot.ready:
			if slot.l != nil {
				out = append(out, slot.l)
			}
		default: // still opening: nothing of it to flush yet
		}
	}
	return out
}

// flushAll is the store's SyncInterval flusher: every open log, one
// goroutine for them all.
func (s *Store) flushAll() {
	for _, l := range s.openLogs() {
		l.flushIfDirty()
	}
}

// Close stops the background flusher and the removal of deleted
// segments' files (after the partition in hand: the files left lie below
// the durable start offsets, and the next open removes them), and closes
// every open log cleanly.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	slots := s.logs
	s.logs = map[string]*logSlot{}
	s.mu.Unlock()
	s.wg.Wait()
	var errs []error
	for _, l := range s.deleter.stop() {
		errs = append(errs, l.removeDropped(false))
	}
	err := errors.Join(append(errs, closeSlots(slices.Collect(maps.Values(slots))))...)
	var closed []*Log
	for _, slot := range slots {
		if slot.l != nil {
			closed = append(closed, slot.l)
		}
	}
	stampClosed(closed)
	s.lock.unlock()
	if err != nil {
		return fmt.Errorf("storage: close store: %w", err)
	}
	return nil
}
