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
