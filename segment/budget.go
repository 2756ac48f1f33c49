package segment

import (
	"slices"
	"sync"
	"sync/atomic"
)

// FilesPerSegment is what one open segment holds: three file descriptors
// (.log, .index, .timeindex), each also memory-mapped.
const FilesPerSegment = 3

// Budget caps the files and memory maps that open segments hold, across
// every segment that shares it (a whole Store). Segments open their files
// on first use and register here; when a new one would go over the limit,
// the least recently used segments that no reader is using are closed
// (a clock sweep, so that a read only sets a flag). A closed segment reopens
// transparently on its next use.
//
// The limit can only be exceeded when every open segment is in use by a
// reader or writer at that moment; it is then restored by the next opening.
//
// It also bounds the memory that reads through the segments' maps add to
// the process: the pages a read touches stay mapped (and count in its
// RSS) until released. Once reads have touched MaxMappedReadBytes since
// the last release, the pages of every open segment's map are released
// (madvise DONTNEED): they stay in the page cache, and the next read of
// them faults them back in.
type Budget struct {
	mu    sync.Mutex // guards the fields below
	limit int        // segments
	open  []*Segment // clock ring
	hand  int

	touched   atomic.Int64 // bytes read through maps since the last release, with fault-around
	releasing atomic.Bool

	points pointCache
}

// MaxMappedReadBytes is how much reads may fault into the maps of a
// Budget's segments before their pages are released.
const MaxMappedReadBytes = 32 << 20

// faultAround is what one page fault of a file map may map around the
// page read (Linux's fault_around_bytes default).
const faultAround = 64 << 10

// noteMappedRead counts n bytes read through a map and releases every
// map's pages when the reads since the last release pass
// MaxMappedReadBytes. The caller may hold a segment's mu for reading.
func (b *Budget) noteMappedRead(n int64) {
	if b.touched.Add(n+faultAround) < MaxMappedReadBytes || !b.releasing.CompareAndSwap(false, true) {
		return
	}
	defer b.releasing.Store(false)
	b.touched.Store(0)
	b.mu.Lock()
	segs := slices.Clone(b.open)
	b.mu.Unlock()
	for _, s := range segs {
		s.dropMappedPages()
	}
}

// NewBudget returns a budget of maxFiles open files (and as many maps).
// Values below 2*FilesPerSegment are raised to that.
func NewBudget(maxFiles int) *Budget {
	return &Budget{limit: max(maxFiles, 2*FilesPerSegment) / FilesPerSegment}
}

// Open reports how many segments hold open files now.
func (b *Budget) Open() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.open)
}

// OpenFiles reports the files held open by the budget's segments.
func (b *Budget) OpenFiles() int { return b.Open() * FilesPerSegment }

// admit registers s, which is about to open its files, evicting others as
// needed. The caller holds s.mu for writing.
func (b *Budget) admit(s *Segment) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for tries := 2 * len(b.open); len(b.open) >= b.limit && tries > 0; tries-- {
		if b.hand >= len(b.open) {
			b.hand = 0
		}
		v := b.open[b.hand]
		if v.used.Swap(false) || !v.mu.TryLock() {
			b.hand++
			continue
		}
		v.closeFilesLocked()
		v.mu.Unlock()
		b.removeAt(b.hand)
	}
	b.open = append(b.open, s)
}

// release unregisters s, whose files are closed. The caller holds s.mu.
func (b *Budget) release(s *Segment) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, v := range b.open {
		if v == s {
			b.removeAt(i)
			return
		}
	}
}

func (b *Budget) removeAt(i int) {
	last := len(b.open) - 1
	b.open[i] = b.open[last]
	b.open[last] = nil
	b.open = b.open[:last]
}

// maxPointPositions bounds a Budget's point cache: 4 bytes each, 8 MiB.
const maxPointPositions = 2 << 20

// pointKey names the batch at pos of a segment as it is now: a batch
// written again at the same position after a truncation has another cuts.
type pointKey struct {
	s    *Segment
	pos  int64
	cuts uint64
}

// pointBatch is what the point cache keeps of a batch: its header, and
// where each record starts (after the header), and the last one ends.
type pointBatch struct {
	h      Header
	starts []uint32
}

// pointCache keeps, for recently read uncompressed batches, where each of
// their records starts, so that a point read (Segment.ReadRecord) preads
// only its record. It holds at most maxPointPositions positions; when full,
// about half of the batches are dropped (in map order, which is random).
// Batches of deleted segments stay until dropped so: the bound holds, and
// a key never matches a batch other than the one it was read from.
type pointCache struct {
	mu sync.Mutex
	m  map[pointKey]pointBatch
	n  int
}

func (c *pointCache) get(k pointKey) (pointBatch, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[k]
	return b, ok
}

func (c *pointCache) put(k pointKey, b pointBatch) {
	if len(b.starts) > maxPointPositions/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[pointKey]pointBatch{}
	}
	if c.n+len(b.starts) > maxPointPositions {
		for key, v := range c.m {
			delete(c.m, key)
			c.n -= len(v.starts)
			if c.n <= maxPointPositions/2 {
				break
			}
		}
	}
	if old, ok := c.m[k]; ok {
		c.n -= len(old.starts)
	}
	c.m[k] = b
	c.n += len(b.starts)
}
