package offsets

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Commit is one entry of a CommitBatch.
type Commit struct {
	Topic     string
	Partition int32
	Offset    int64
	Metadata  string
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
	return s.writeCommits(group, 1, func(b []byte) []byte {
		return appendEntry(b, topic, partition, offset, metadata)
	})
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
	return s.writeCommits(group, len(commits), func(b []byte) []byte {
		for _, c := range commits {
			b = appendEntry(b, c.Topic, c.Partition, c.Offset, c.Metadata)
		}
		return b
	})
}

// writeCommits appends a commit record of group's n positions, which
// entries appends to the record, and waits for it as Commit says. A record
// over MaxRecordBytes is dropped, and an error returned.
func (s *Store) writeCommits(group string, n int, entries func(b []byte) []byte) error {
	now := time.Now().UnixNano()
	s.mu.Lock()
	if err := s.writableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	var start int
	s.buf, start = appendCommitHead(s.buf, group, now, n)
	s.buf = entries(s.buf)
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
// harmless: records set absolute values. It checks the names first: the
// group's unless typ is recDeleteTopic, the topic's unless it is
// recDeleteGroup.
func (s *Store) writeGroupTopic(typ byte, group, topic string) error {
	if typ != recDeleteTopic {
		if err := s.checkName("group", group); err != nil {
			return err
		}
	}
	if typ != recDeleteGroup {
		if err := s.checkName("topic", topic); err != nil {
			return err
		}
	}
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
	return s.writeGroupTopic(recDeleteTopic, "", topic)
}

// Subscribe registers the group's interest in a topic before any commit:
// from then on the group holds every partition of the topic for retention
// (MinCommitted is 0 where it has not committed) once the subscription is
// durable. Durable and visible like a commit.
func (s *Store) Subscribe(group, topic string) error {
	return s.writeGroupTopic(recSubscribe, group, topic)
}

// Unsubscribe removes the group's interest in the topic and its positions
// there. Durable and visible like a commit: until then the group still
// holds retention on the topic.
func (s *Store) Unsubscribe(group, topic string) error {
	return s.writeGroupTopic(recUnsubscribe, group, topic)
}
