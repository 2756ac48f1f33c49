package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Store's topics: creating, listing and deleting them. A topic is its
// partition directories under the root, <topic>-<partition>, each holding
// the topic's configuration (topicconfig.go).

// CreateTopic creates a topic with the given number of partitions and its
// own configuration (the zero TopicConfig: the store's defaults), stored
// with the topic. Creating a topic that exists with the same count does
// nothing (AlterTopic changes a configuration); with fewer partitions it
// adds the missing ones, with the topic's configuration; with more it is
// ErrTopicExists. Partition directories left by a creation that a crash
// interrupted are completed.
func (s *Store) CreateTopic(topic string, partitions int, cfg TopicConfig) error {
	if s.opts.Log.ReadOnly {
		return ErrReadOnly
	}
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if partitions < 1 || partitions > 1<<20 {
		return fmt.Errorf("%w: %d partitions", ErrInvalidPartition, partitions)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.deleting[topic] {
		return fmt.Errorf("%w: %s is being deleted", ErrTopicExists, topic)
	}
	if n, ok := s.topics[topic]; ok {
		if n == partitions {
			return nil
		}
		if n > partitions {
			return fmt.Errorf("%w: %s has %d partitions", ErrTopicExists, topic, n)
		}
		// More partitions for an existing topic: they get its config.
		var err error
		if cfg, err = readTopicConfig(s.opts.Log.FS, filepath.Join(s.root, PartitionDir(topic, 0))); err != nil {
			return fmt.Errorf("storage: create topic %s: %w", topic, err)
		}
	}
	if _, ok := s.topics[topic]; !ok {
		// Entries of an earlier topic of this name whose directories
		// went without DeleteTopic.
		if err := s.dropStartOffsets(topic); err != nil {
			return fmt.Errorf("storage: create topic %s: %w", topic, err)
		}
	}
	existing := s.topics[topic]
	if err := s.writeTopicConfigs(topic, existing, cfg); err != nil {
		return fmt.Errorf("storage: create topic %s: %w", topic, err)
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	for p := existing; p < partitions; p++ {
		if err := s.createPartitionDir(topic, int32(p), cfg, stamp); err != nil {
			return fmt.Errorf("storage: create topic %s: %w", topic, err)
		}
	}
	if err := s.opts.Log.FS.SyncDir(s.root); err != nil {
		return fmt.Errorf("storage: create topic %s: %w", topic, err)
	}
	s.topics[topic] = partitions
	return nil
}

// hiddenName names a partition directory on its way in (why "new") or
// out ("gone"): hidden, ending in .deleted (the next open removes it), and
// short whatever the topic's name, which may take up to 251 of the 255
// bytes a directory entry holds with its partition number.
func hiddenName(why, stamp string, p int32) string {
	return "." + why + "-" + stamp + "-" + strconv.Itoa(int(p)) + ".deleted"
}

// createPartitionDir creates a partition directory of a topic whole: it is
// made under a hidden name, with its topic configuration written durably
// into it, and only then renamed into place (the caller fsyncs the root).
// A partition directory therefore never exists without its topic's
// configuration, whichever of these steps a crash interrupts: without
// it, the partitions of a topic whose creation a crash cut short would
// come back with the store's defaults, and the client's retry of the
// creation would find the topic there and change nothing. The hidden name
// ends in .deleted, so an interrupted creation's directory is removed on
// the next open, as an interrupted deletion's is. Partitions are created
// in order, so a crash leaves the first of them, which a retry completes.
func (s *Store) createPartitionDir(topic string, p int32, cfg TopicConfig, stamp string) error {
	fsys := s.opts.Log.FS
	name := PartitionDir(topic, p)
	staged := filepath.Join(s.root, hiddenName("new", stamp, p))
	if err := fsys.MkdirAll(staged, s.opts.Log.DirMode); err != nil {
		return err
	}
	if cfg != (TopicConfig{}) {
		if err := s.writeTopicConfig(staged, cfg); err != nil {
			return err
		}
	}
	return fsys.Rename(staged, filepath.Join(s.root, name))
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name       string
	Partitions int
}

// Topics lists the topics, sorted by name.
func (s *Store) Topics() []TopicInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TopicInfo, 0, len(s.topics))
	for name, n := range s.topics {
		out = append(out, TopicInfo{Name: name, Partitions: n})
	}
	slices.SortFunc(out, func(a, b TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Partitions returns the partition count of a topic.
func (s *Store) Partitions(topic string) (int, error) {
	if err := ValidateTopic(topic); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.topics[topic]
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	return n, nil
}

// DeleteTopic closes a topic's logs and removes its directories. Each is
// first renamed to a hidden name, so a crash part-way leaves either the
// partition or nothing, and the next OpenStore finishes the removal.
func (s *Store) DeleteTopic(topic string) error {
	if s.opts.Log.ReadOnly {
		return ErrReadOnly
	}
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	n, ok := s.topics[topic]
	if !ok || s.deleting[topic] {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	// New opens of the topic are refused from here; the logs open or
	// opening are closed outside the lock.
	s.deleting[topic] = true
	var slots []*logSlot
	for p := 0; p < n; p++ {
		name := PartitionDir(topic, int32(p))
		if slot, ok := s.logs[name]; ok {
			slots = append(slots, slot)
			delete(s.logs, name)
		}
	}
	s.mu.Unlock()
	errs := []error{closeSlots(slots)}
	// Before any directory goes: a topic created again must not start at
	// this one's start offsets.
	if err := s.dropStartOffsets(topic); err != nil {
		s.mu.Lock()
		delete(s.deleting, topic)
		s.mu.Unlock()
		return fmt.Errorf("storage: delete topic %s: %w", topic, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.deleting, topic)
	fsys := s.opts.Log.FS
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	for p := n - 1; p >= 0; p-- {
		name := PartitionDir(topic, int32(p))
		gone := filepath.Join(s.root, hiddenName("gone", stamp, int32(p)))
		if err := fsys.Rename(filepath.Join(s.root, name), gone); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, fsys.RemoveAll(gone))
	}
	delete(s.topics, topic)
	errs = append(errs, fsys.SyncDir(s.root))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage: delete topic %s: %w", topic, err)
	}
	return nil
}
