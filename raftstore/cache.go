package raftstore

import "sync/atomic"

// DefaultCacheBatches is how many batches GetLog keeps decoded by default.
const DefaultCacheBatches = 8

// cachedBatch is one batch split into its records' values (encoded
// entries). It is immutable once built: readers share it without a lock.
type cachedBatch struct {
	base   int64    // offset of values[0]
	values [][]byte // the record at offset base+i is values[i]
}

// batchCache holds the batches read or written last, so that GetLog of
// the entries of one batch (raft reads them one at a time, in order: the
// leader replicating, a follower applying) reads and verifies the batch
// once. A lookup is a few atomic loads: no lock.
//
// It never answers for an offset that no longer holds the entry it
// cached: every caller checks the offset against the log's range first,
// and whatever replaces entries at an offset (a cut from the back) clears
// the cache while holding the store's shape lock exclusively.
type batchCache struct {
	slots []atomic.Pointer[cachedBatch]
	next  atomic.Uint64
}

func newBatchCache(n int) *batchCache {
	return &batchCache{slots: make([]atomic.Pointer[cachedBatch], max(n, 0))}
}

// get returns the cached value at offset off, or nil.
func (c *batchCache) get(off int64) []byte {
	for i := range c.slots {
		b := c.slots[i].Load()
		if b != nil && off >= b.base && off-b.base < int64(len(b.values)) {
			return b.values[off-b.base]
		}
	}
	return nil
}

// put adds b, replacing the oldest entry.
func (c *batchCache) put(b *cachedBatch) {
	if len(c.slots) == 0 {
		return
	}
	i := c.next.Add(1) % uint64(len(c.slots))
	c.slots[i].Store(b)
}

// clear empties the cache.
func (c *batchCache) clear() {
	for i := range c.slots {
		c.slots[i].Store(nil)
	}
}

// recentMisses remembers the offsets of the last few reads that missed
// the cache, so that GetLog can tell a reader going through the log in
// order (raft catching a follower up, or applying) from one reading here
// and there: the first caches the batch it reads, the second reads the
// one entry it wants without copying or caching its batch. A reader in
// order misses twice per batch at most; a few slots serve several such
// readers at once.
type recentMisses struct {
	slots [4]atomic.Int64
	next  atomic.Uint32
}

// sequential records a miss at off and reports whether the offset before
// it missed recently.
func (m *recentMisses) sequential(off int64) bool {
	seq := false
	for i := range m.slots {
		if m.slots[i].Load() == off-1 {
			seq = true
			break
		}
	}
	i := m.next.Add(1) % uint32(len(m.slots))
	m.slots[i].Store(off)
	return seq
}
