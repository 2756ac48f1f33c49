package segment

import "sync"

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
type Budget struct {
	mu    sync.Mutex // guards the fields below
	limit int        // segments
	open  []*Segment // clock ring
	hand  int
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
