package queue

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// run is the half-open offset range [lo, hi).
type run struct{ lo, hi int64 }

// runSet is a set of offsets as sorted, disjoint, non-adjacent runs: the
// items confirmed (or expired) above the head.
type runSet []run

// find returns the index of the first run with hi > o.
func (s runSet) find(o int64) int {
	i, _ := slices.BinarySearchFunc(s, o, func(r run, o int64) int {
		if r.hi <= o {
			return -1
		}
		return 1
	})
	return i
}

// contains reports whether o is in the set and, if so, the run holding it.
func (s runSet) contains(o int64) (run, bool) {
	i := s.find(o)
	if i < len(s) && s[i].lo <= o {
		return s[i], true
	}
	return run{}, false
}

// add puts o in the set, merging it with the runs it touches. It reports
// false when o was already there.
func (s *runSet) add(o int64) bool {
	r := *s
	i := r.find(o)
	if i < len(r) && r[i].lo <= o {
		return false
	}
	joinLeft := i > 0 && r[i-1].hi == o
	joinRight := i < len(r) && r[i].lo == o+1
	switch {
	case joinLeft && joinRight:
		r[i-1].hi = r[i].hi
		r = slices.Delete(r, i, i+1)
	case joinLeft:
		r[i-1].hi = o + 1
	case joinRight:
		r[i].lo = o
	default:
		r = slices.Insert(r, i, run{o, o + 1})
	}
	*s = r
	return true
}

// size returns how many offsets the set holds.
func (s runSet) size() int64 {
	var n int64
	for _, r := range s {
		n += r.hi - r.lo
	}
	return n
}

// clamp drops what lies outside [lo, hi).
func (s runSet) clamp(lo, hi int64) runSet {
	var out runSet
	for _, r := range s {
		r.lo, r.hi = max(r.lo, lo), min(r.hi, hi)
		if r.lo < r.hi {
			out = append(out, r)
		}
	}
	return out
}

// metaVersion starts the metadata a Queue commits with its position.
const metaVersion = "q1"

// encodeMeta writes the set as the commit metadata: "q1", then for each
// run " GAP+LEN" in decimal, where GAP is the run's start minus the end of
// the previous run (the first: minus pos) and LEN its length. Both are at
// least 1: the head is never in the set and runs never touch.
func encodeMeta(pos int64, s runSet) string {
	if len(s) == 0 {
		return ""
	}
	b := make([]byte, 0, len(metaVersion)+len(s)*6)
	b = append(b, metaVersion...)
	prev := pos
	for _, r := range s {
		b = append(b, ' ')
		b = strconv.AppendInt(b, r.lo-prev, 10)
		b = append(b, '+')
		b = strconv.AppendInt(b, r.hi-r.lo, 10)
		prev = r.hi
	}
	return string(b)
}

// decodeMeta reads what encodeMeta wrote. Empty metadata (a position that
// another tool committed, seglog offsets reset) is the empty set. Anything
// else that is not a valid encoding is an error wrapping ErrCorrupt.
func decodeMeta(pos int64, meta string) (runSet, error) {
	if meta == "" {
		return nil, nil
	}
	fields := strings.Split(meta, " ")
	if fields[0] != metaVersion {
		return nil, fmt.Errorf("%w: metadata %.40q: not written by a queue (want %q first)", ErrCorrupt, meta, metaVersion)
	}
	s := make(runSet, 0, len(fields)-1)
	prev := pos
	for _, f := range fields[1:] {
		gs, ls, ok := strings.Cut(f, "+")
		g, err1 := strconv.ParseInt(gs, 10, 64)
		l, err2 := strconv.ParseInt(ls, 10, 64)
		if !ok || err1 != nil || err2 != nil || g < 1 || l < 1 ||
			g > math.MaxInt64-prev || l > math.MaxInt64-prev-g {
			return nil, fmt.Errorf("%w: metadata run %q after offset %d", ErrCorrupt, f, prev)
		}
		lo := prev + g
		s = append(s, run{lo, lo + l})
		prev = lo + l
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("%w: metadata %q holds no run", ErrCorrupt, meta)
	}
	return s, nil
}

// lease is an open transactional read.
type lease struct {
	id       LeaseID
	item     *Item
	deadline time.Time
	idx      int // in the deadline heap
}

// leaseHeap orders open leases by deadline.
type leaseHeap []*lease

func (h leaseHeap) Len() int           { return len(h) }
func (h leaseHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h leaseHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *leaseHeap) Push(x any) {
	l := x.(*lease)
	l.idx = len(*h)
	*h = append(*h, l)
}
func (h *leaseHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return l
}

// itemHeap orders items waiting to be handed out (again) by offset.
type itemHeap []*Item

func (h itemHeap) Len() int           { return len(h) }
func (h itemHeap) Less(i, j int) bool { return h[i].Offset < h[j].Offset }
func (h itemHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *itemHeap) Push(x any)        { *h = append(*h, x.(*Item)) }
func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

// idRing remembers the last len(ids) expired lease ids, so that Confirm
// can tell an expired lease from an unknown one.
type idRing struct {
	ids  []LeaseID
	next int
	set  map[LeaseID]struct{}
}

func newIDRing(n int) *idRing {
	return &idRing{ids: make([]LeaseID, n), set: make(map[LeaseID]struct{})}
}

func (r *idRing) add(id LeaseID) {
	if old := r.ids[r.next]; old != 0 {
		delete(r.set, old)
	}
	r.ids[r.next] = id
	r.set[id] = struct{}{}
	r.next = (r.next + 1) % len(r.ids)
}

func (r *idRing) has(id LeaseID) bool {
	_, ok := r.set[id]
	return ok
}
