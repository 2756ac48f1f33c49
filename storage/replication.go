package storage

import (
	"sync"
	"sync/atomic"
)

// replication is the state a replicated log keeps beside its records: the
// idempotent producers' recent batches, the leader epochs and the high
// watermark (published in view.hw), each with the files that make it
// durable. Guarded by writeMu;
// epochs also by epochMu, for readers of the cache.
type replication struct {
	producers *producerState
	snapshots []int64 // offsets of the producer snapshot files, sorted

	epochMu    sync.Mutex
	epochs     *epochCache
	stampEpoch int32 // the epoch SetLeaderEpoch stamps on appends; -1: none
	// epochsDirty: the cache in memory moved its start past the file's.
	epochsDirty bool
	// truncationPending is the end of a truncation that a crash
	// interrupted, found at open; -1: none.
	truncationPending int64

	// hwCheckpointed is the high watermark last written to its file.
	hwCheckpointed atomic.Int64
}

func (r *replication) init() {
	r.producers = newProducerState()
	r.epochs = &epochCache{}
	r.stampEpoch = -1
	r.truncationPending = -1
}

// The leader-epoch cache's changes and reads, under epochMu: its writers
// hold writeMu too, its readers (LeaderEpochs, EndOffsetForEpoch) only
// epochMu.

// addEpoch records that epoch starts at offset.
func (r *replication) addEpoch(epoch int32, offset int64) {
	r.epochMu.Lock()
	defer r.epochMu.Unlock()
	r.epochs.entries = append(r.epochs.entries, EpochEntry{Epoch: epoch, StartOffset: offset})
}

// truncateEpochsFrom drops the epochs from offset on (a truncation to
// offset) and reports whether the cache changed.
func (r *replication) truncateEpochsFrom(offset int64) bool {
	r.epochMu.Lock()
	defer r.epochMu.Unlock()
	return r.epochs.truncateFrom(offset)
}

// truncateEpochsBefore moves the cache's start to start (a deletion from
// the front), in memory only: epochsDirty records that the file differs.
func (r *replication) truncateEpochsBefore(start int64) {
	r.epochMu.Lock()
	defer r.epochMu.Unlock()
	r.epochsDirty = r.epochs.truncateBefore(start) || r.epochsDirty
}

// leaderEpochs returns a copy of the cache's entries, oldest first.
func (r *replication) leaderEpochs() []EpochEntry {
	r.epochMu.Lock()
	defer r.epochMu.Unlock()
	return append([]EpochEntry(nil), r.epochs.entries...)
}

// endOffsetForEpoch is EndOffsetForEpoch for a log whose end is end.
func (r *replication) endOffsetForEpoch(epoch int32, end int64) (foundEpoch int32, endOffset int64) {
	r.epochMu.Lock()
	defer r.epochMu.Unlock()
	es := r.epochs.entries
	i := len(es) - 1
	for i >= 0 && es[i].Epoch > epoch {
		i--
	}
	if i < 0 {
		return -1, -1
	}
	if i == len(es)-1 {
		return es[i].Epoch, end
	}
	return es[i].Epoch, es[i+1].StartOffset
}
