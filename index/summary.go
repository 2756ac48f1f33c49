package index

import "encoding/binary"

// summary is a small copy, in memory, of the search column of every 512th
// entry of an index. A lookup binary-searches it (a few KiB, in the CPU's
// cache) for the group of 512 entries that holds the answer, then searches
// that group only, in the map: one 4 KiB page of an offset index, instead
// of the dozen pages (each a likely cache miss, and a TLB miss) that a
// binary search of a full index touches below its cached top levels.
//
// Layout. Group g is entries [g*512, (g+1)*512); its key is the search
// column (cols[0]: the relative offset of an offset index, the timestamp of
// a time index, sign-flipped as column.at orders it) of its first entry:
// k32 holds 4-byte keys, k64 8-byte ones. Why 512 entries:
//   - for an offset index it is 4 KiB, exactly one page of the map, which
//     starts on a page boundary: the search of a group touches one page;
//   - 512 = 8*8*8: searchGroup searches a group in three 8-way steps, of
//     which only the first two wait for memory;
//   - memory: 4 bytes per 4 KiB page of offset index (1/1024 of it), 10 KiB
//     for a full 10 MiB index, 2 KiB for the index of a 1 GiB segment at
//     the default IndexIntervalBytes. Smaller groups buy nothing until a
//     group is a few cache lines: 256 entries still take two 8-way steps
//     that wait for memory; 64 would take one, for 8 times the memory
//     (80 KiB per full index);
//   - a time index keeps 512 entries per group (6 KiB of map, two or three
//     pages) for the same search and 8 bytes per key: 13.3 KiB for a full
//     10 MiB time index (1/768 of it), 4 KiB for a 1 GiB segment's.
//
// Publication beside append. The writer maintains the summary in append,
// in this order:
//
//  1. write the entry's bytes into the map;
//  2. if the entry starts a group (its index is a multiple of 512), write
//     its key into the summary's array in place, at a slot past every key
//     a reader reads (see below); or, when the array is full (or there is
//     none yet), copy the keys into a larger array, write the key there and
//     publish the new array (sum.Store);
//  3. publish the entry count (n.Store).
//
// A reader loads the count first, then the summary (sum.Load), and reads
// only the keys of the groups whose first entry is below the count it
// loaded: groups(n) = ceil(n/512) keys. The count's store comes after the
// key's write and after the store of the array that holds it, and the
// reader's loads come in the opposite order, so a reader that sees count
// n sees every key of the groups below n, in an array at least as large as
// the one that held them at that store (a later array holds copies of the
// same keys). It never reads the key of an entry it cannot see: the slot
// the writer may be writing while it runs is groups(n) or later, past the
// keys it reads. (The atomics order this for the race detector too.)
//
// Other operations run alone (no reader or writer beside them):
//   - TruncateTo(k) keeps the keys: the groups below k keep their first
//     entries, and append rewrites the key of a later group before it
//     publishes a count that covers it;
//   - Reset keeps the array for the next appends;
//   - Seal keeps the keys (copies, not pointers into the map, so the new
//     mapping does not matter) and trims the array to the keys in use;
//   - Close drops the summary (the count is 0 after it);
//   - an index opened writable with entries (after a restart or a crash)
//     builds its summary at open, before any reader;
//   - an index opened read-only or followed, whose count never changes, builds
//     its summary on its first search (summaryFor): readers that race to
//     build it each build one and the first to publish wins
//     (sum.CompareAndSwap). Building reads one entry per group, so it
//     touches every page of the map once; a segment's sanity check at open
//     reads every entry anyway.
//
// On a damaged index (entries out of order, which the sanity check reports)
// the searches still return a count in [0, n], never out of range.
type summary struct {
	k32 []uint32 // the keys of a 4-byte column
	k64 []uint64 // the keys of an 8-byte column, as column.at orders them
}

const (
	// groupShift is log2 of groupLen.
	groupShift = 9
	// groupLen is the number of entries per summary group, for both entry
	// sizes: see summary.
	groupLen = 1 << groupShift
	// minSummaryKeys is the first array's length on a writable index.
	minSummaryKeys = 64
)

// groups returns how many groups n entries start: ceil(n / group size).
func (f *entryFile) groups(n int) int { return (n + 1<<groupShift - 1) >> groupShift }

// buildSummary returns the summary of the first n entries, for a keys
// array of length capKeys >= f.groups(n).
func (f *entryFile) buildSummary(n, capKeys int) *summary {
	ng := f.groups(n)
	s := &summary{}
	c := f.cols[0]
	if c.width == 4 {
		s.k32 = make([]uint32, capKeys)
		for g := range ng {
			s.k32[g] = uint32(c.at(f.m, (g<<groupShift)*f.size))
		}
	} else {
		s.k64 = make([]uint64, capKeys)
		for g := range ng {
			s.k64[g] = c.at(f.m, (g<<groupShift)*f.size)
		}
	}
	return s
}

// summaryFor returns the summary of a reader that loaded count n > 0,
// building it on an index opened read-only or followed, whose count never
// changes.
func (f *entryFile) summaryFor(n int) *summary {
	if s := f.sum.Load(); s != nil {
		return s
	}
	// Only an index that is not writable gets here: a writable one has a
	// summary from open or from the append that published entry 0.
	s := f.buildSummary(n, f.groups(n))
	if f.sum.CompareAndSwap(nil, s) {
		return s
	}
	return f.sum.Load()
}

// addKey records the key of entry n, which starts group g, before the
// writer publishes count n+1 (step 2 of the publication order).
func (f *entryFile) addKey(n int, b []byte) {
	g := n >> groupShift
	c := f.cols[0]
	key := c.at(b, 0)
	s := f.sum.Load()
	if s == nil || g >= s.len() {
		// A larger array, published before the count.
		maxKeys := f.groups(f.limit)
		capKeys := minSummaryKeys
		if s != nil {
			capKeys = 2 * s.len()
		}
		capKeys = max(min(capKeys, maxKeys), g+1)
		ns := &summary{}
		if c.width == 4 {
			ns.k32 = make([]uint32, capKeys)
			if s != nil {
				copy(ns.k32, s.k32[:g])
			}
		} else {
			ns.k64 = make([]uint64, capKeys)
			if s != nil {
				copy(ns.k64, s.k64[:g])
			}
		}
		ns.set(g, key)
		f.sum.Store(ns)
		return
	}
	s.set(g, key)
}

// trimSummary shrinks the summary's array to the keys of the entries in
// use. It runs alone.
func (f *entryFile) trimSummary() {
	s := f.sum.Load()
	if s == nil {
		return
	}
	ng := f.groups(f.len())
	if ng == 0 {
		f.sum.Store(nil)
		return
	}
	if ng == s.len() {
		return
	}
	ns := &summary{}
	if s.k32 != nil {
		ns.k32 = append([]uint32(nil), s.k32[:ng]...)
	} else {
		ns.k64 = append([]uint64(nil), s.k64[:ng]...)
	}
	f.sum.Store(ns)
}

func (s *summary) len() int { return max(len(s.k32), len(s.k64)) }

func (s *summary) set(g int, key uint64) {
	if s.k32 != nil {
		s.k32[g] = uint32(key)
	} else {
		s.k64[g] = key
	}
}

// upperBound returns the number of the first ng keys at or below target.
func (s *summary) upperBound(ng int, target uint64) int {
	if s.k32 != nil {
		return keysUpperBound(s.k32[:ng], target)
	}
	return keysUpperBound(s.k64[:ng], target)
}

// keysUpperBound returns the number of keys at or below target. The keys
// are in cache: a branch-free search beats a branchy one, whose
// mispredictions (half the steps, for random targets) cost more than the
// loads. It measured 33 ns for a full index's 2,560 keys, against 86 ns
// for the same search with a branch.
func keysUpperBound[K uint32 | uint64](keys []K, target uint64) int {
	n := len(keys)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n >> 1
		// base += half when the key is at or below target, without a
		// branch (the compiler keeps a loop-carried branch here).
		base += half & -b2i(uint64(keys[base+half]) <= target)
		n -= half
	}
	if uint64(keys[base]) <= target {
		base++
	}
	return base
}

// searchGroup returns the number of leading entries whose column c is at
// or below target, given that the answer is in the full group of entries
// [first, first+512) (the key of entry first is at or below target) and
// that they are all in use. c is cols[0] of an offset or a time index.
//
// It searches the group 8 ways at a time, with 512 = 8*8*8 entries in a
// group: the 7 entries 64 apart, then the 7 entries 8 apart in the 64
// entries found, then the 7 entries after the one found. Each step's 7
// loads do not depend on each other, so their cache misses overlap, and
// the last step reads lines that the step before loaded: a lookup waits
// for two misses in the map where a binary search of the group waits for
// six. Counting the keys at or below target (no branch) gives the way; on
// a damaged index the count is still in [0, 7], so the result stays within
// the group.
func searchGroup(m []byte, size int, c column, first int, target uint64) int {
	switch {
	case size == OffsetEntrySize && c == offsetRelCol:
		return first + 1 + searchOffsetGroup((*[groupLen * OffsetEntrySize]byte)(m[first*size:]), target)
	case size == TimeEntrySize && c == timeTsCol:
		return first + 1 + searchTimeGroup((*[groupLen * TimeEntrySize]byte)(m[first*size:]), target)
	}
	return searchMap(m, size, c, first+1, first+groupLen, target)
}

// searchOffsetGroup is searchGroup for a group of offset entries: it
// returns the index in the group of the last entry at or below target.
// The probes never pass entry 511 (448+56+7); "% groupLen" only shows the
// compiler that they stay in the array, so that it checks no bounds.
func searchOffsetGroup(g *[groupLen * OffsetEntrySize]byte, target uint64) int {
	le := func(k uint) int {
		return b2i(uint64(binary.BigEndian.Uint32(g[k%groupLen*OffsetEntrySize:])) <= target)
	}
	var i uint
	for step := uint(groupLen / 8); step > 0; step /= 8 {
		i += step * uint(le(i+step)+le(i+2*step)+le(i+3*step)+le(i+4*step)+le(i+5*step)+le(i+6*step)+le(i+7*step))
	}
	return int(i)
}

// searchTimeGroup is searchOffsetGroup for a group of time entries.
func searchTimeGroup(g *[groupLen * TimeEntrySize]byte, target uint64) int {
	le := func(k uint) int {
		return b2i(binary.BigEndian.Uint64(g[k%groupLen*TimeEntrySize:])^signBit <= target)
	}
	var i uint
	for step := uint(groupLen / 8); step > 0; step /= 8 {
		i += step * uint(le(i+step)+le(i+2*step)+le(i+3*step)+le(i+4*step)+le(i+5*step)+le(i+6*step)+le(i+7*step))
	}
	return int(i)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// searchMap returns the number of leading entries of [0, hi) whose column
// c is at or below target, given that it is at least lo: a search of the
// entries [lo, hi) of the map m of entries of size bytes.
func searchMap(m []byte, size int, c column, lo, hi int, target uint64) int {
	// A branchy search beats a branch-free one here: the entries are
	// likely cache misses, and the CPU speculates down the predicted half
	// and overlaps them.
	if c.width == 4 {
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if uint64(binary.BigEndian.Uint32(m[mid*size+c.off:])) <= target {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		return lo
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if c.at(m, mid*size) <= target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// searchHot is searchMap for entries likely in cache (the warm section):
// a branch-free search, whose steps wait for each other's loads but never
// mispredict. On the warm section it measured 65 ns per lookup, against
// 87 ns for searchMap and 110 ns through the summary.
func searchHot(m []byte, size int, c column, lo, hi int, target uint64) int {
	n := hi - lo
	if n <= 0 {
		return lo
	}
	base := lo
	if c.width == 4 {
		t := uint32(target)
		for n > 1 {
			half := n >> 1
			base += half & -b2i(binary.BigEndian.Uint32(m[(base+half)*size+c.off:]) <= t)
			n -= half
		}
		return base + b2i(binary.BigEndian.Uint32(m[base*size+c.off:]) <= t)
	}
	for n > 1 {
		half := n >> 1
		base += half & -b2i(c.at(m, (base+half)*size) <= target)
		n -= half
	}
	return base + b2i(c.at(m, base*size) <= target)
}
