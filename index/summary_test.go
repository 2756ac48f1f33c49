package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// summaryModel drives an offset index and a time index through random
// operations and compares every lookup with a plain search of the entries
// it appended (the model). While it appends, reader goroutines look up
// beside it.
type summaryModel struct {
	t        *testing.T
	r        *rand.Rand
	dir      string
	maxBytes int
	noWarm   bool // search without the warm section, so that every lookup uses the summary
	ox       *OffsetIndex
	tx       *TimeIndex
	offs     []OffsetPosition // the model: the entries in use, in order
	times    []TimeOffset
	// The next entries to append, generated ahead so that readers can
	// check a lookup beside Append against them without locking.
	nextOff  OffsetPosition
	nextTime TimeOffset
}

func (m *summaryModel) opath() string { return m.dir + "/00.index" }
func (m *summaryModel) tpath() string { return m.dir + "/00.timeindex" }

func (m *summaryModel) openWritable() {
	var err error
	m.ox, err = OpenOffset(m.opath(), testBase, Options{Writable: true, MaxBytes: m.maxBytes})
	require.NoError(m.t, err)
	m.tx, err = OpenTime(m.tpath(), testBase, Options{Writable: true, MaxBytes: m.maxBytes})
	require.NoError(m.t, err)
	m.setWarm(m.ox, m.tx)
}

// setWarm turns the warm section off in a just-opened index when the model
// says so.
func (m *summaryModel) setWarm(ox *OffsetIndex, tx *TimeIndex) {
	if m.noWarm {
		ox.f.warm, tx.f.warm = math.MaxInt, math.MaxInt
	}
}

func (m *summaryModel) close() {
	require.NoError(m.t, m.ox.Close())
	require.NoError(m.t, m.tx.Close())
}

// genOffsets returns the k offset entries after last, with random gaps.
func (m *summaryModel) genOffsets(k int) []OffsetPosition {
	return genEntries(&m.nextOff, k, func(e *OffsetPosition) {
		e.Offset += 1 + m.r.Int64N(4)
		e.Position += 1 + m.r.Int64N(200)
	})
}

func (m *summaryModel) genTimes(k int) []TimeOffset {
	return genEntries(&m.nextTime, k, func(e *TimeOffset) {
		e.Timestamp += 1 + m.r.Int64N(1000)
		e.Offset += 1 + m.r.Int64N(4)
	})
}

// genEntries returns k entries after *next, each made from the one before
// by step, and leaves the last in *next.
func genEntries[E entry](next *E, k int, step func(*E)) []E {
	out := make([]E, k)
	for i := range out {
		step(next)
		out[i] = *next
	}
	return out
}

func (m *summaryModel) resetGenerators() {
	m.nextOff = OffsetPosition{Offset: testBase, Position: 0}
	if n := len(m.offs); n > 0 {
		m.nextOff = m.offs[n-1]
	}
	m.nextTime = TimeOffset{Timestamp: -3_000_000 + m.r.Int64N(1000), Offset: testBase}
	if n := len(m.times); n > 0 {
		m.nextTime = m.times[n-1]
	}
}

// wantOffset is the model's answer to an offset lookup over entries.
func wantOffset(entries []OffsetPosition, target int64) OffsetPosition {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Offset > target })
	if i == 0 {
		return OffsetPosition{Offset: testBase}
	}
	return entries[i-1]
}

func wantTime(entries []TimeOffset, target int64) (TimeOffset, bool) {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Timestamp > target })
	if i == 0 {
		return TimeOffset{Timestamp: -1, Offset: testBase}, false
	}
	return entries[i-1], true
}

// offsetTargets returns targets around every group's first entry, the
// warm section's first entry, both ends, and random ones.
func offsetTargets(r *rand.Rand, entries []OffsetPosition, random int) []int64 {
	hi := int64(testBase + 10)
	if n := len(entries); n > 0 {
		hi = entries[n-1].Offset + 10
	}
	fixed := []int64{math.MinInt64, 0, testBase - 1, testBase, testBase + 1, math.MaxInt64}
	return lookupTargets(r, entries, OffsetEntrySize, fixed, testBase-5, hi, random)
}

func timeTargets(r *rand.Rand, entries []TimeOffset, random int) []int64 {
	var lo, hi int64 // no random targets in an empty index
	if n := len(entries); n > 0 {
		lo, hi = entries[0].Timestamp-10, entries[n-1].Timestamp+10
	}
	return lookupTargets(r, entries, TimeEntrySize, []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}, lo, hi, random)
}

// lookupTargets returns the fixed targets, then the keys (what Lookup
// searches) of the entries around every group's first entry, the warm
// section's first entry and both ends, each less one, as is and plus one,
// then random targets in [lo, hi) when lo < hi.
func lookupTargets[E entry](r *rand.Rand, entries []E, size int, fixed []int64, lo, hi int64, random int) []int64 {
	ts := fixed
	n := len(entries)
	near := func(i int) {
		if i >= 0 && i < n {
			key, _ := entries[i].fields()
			ts = append(ts, key-1, key, key+1)
		}
	}
	for g := 0; g < n; g += 1 << groupShift {
		near(g - 1)
		near(g)
		near(g + 1)
	}
	w := warmBytes / size
	for _, i := range []int{0, n - w - 1, n - w, n - w + 1, n - 1} {
		near(i)
	}
	if lo < hi {
		for range random {
			ts = append(ts, lo+r.Int64N(hi-lo))
		}
	}
	return ts
}

// check compares lookups in ox and tx (the model's, or others holding the
// same entries) with the model.
func (m *summaryModel) check(what string, ox *OffsetIndex, tx *TimeIndex) {
	m.t.Helper()
	require.Equal(m.t, len(m.offs), ox.Len(), what)
	require.Equal(m.t, len(m.times), tx.Len(), what)
	for _, target := range offsetTargets(m.r, m.offs, 300) {
		require.Equal(m.t, wantOffset(m.offs, target), ox.Lookup(target), "%s: offset lookup %d of %d entries", what, target, len(m.offs))
	}
	for _, target := range timeTargets(m.r, m.times, 300) {
		e, ok := wantTime(m.times, target)
		got, gotOK := tx.Lookup(target)
		require.Equal(m.t, e, got, "%s: time lookup %d of %d entries", what, target, len(m.times))
		require.Equal(m.t, ok, gotOK, what)
	}
}

// appendConcurrently appends k entries to both indexes while readers look
// up beside the writer: a lookup must return the model's answer for some
// entry count between the counts the reader saw before and after it.
func (m *summaryModel) appendConcurrently(k int) {
	offs, times := m.genOffsets(k), m.genTimes(k)
	allOffs := append(append([]OffsetPosition(nil), m.offs...), offs...)
	allTimes := append(append([]TimeOffset(nil), m.times...), times...)
	var bad atomic.Int64
	var firstBad atomic.Value
	report := func(format string, args ...any) {
		if bad.Add(1) == 1 {
			firstBad.Store(fmt.Sprintf(format, args...))
		}
	}
	runReaders(2, func(seed int, stopped func() bool) {
		r := rand.New(rand.NewPCG(uint64(seed), 99))
		for !stopped() {
			hiOff := allOffs[len(allOffs)-1].Offset + 5
			target := testBase - 2 + r.Int64N(hiOff-testBase+2)
			l1 := m.ox.Len()
			got := m.ox.Lookup(target)
			l2 := m.ox.Len()
			lo, hi := wantOffset(allOffs[:l1], target), wantOffset(allOffs[:l2], target)
			if got.Offset < lo.Offset || got.Offset > hi.Offset || (got.Position != 0 && got != wantOffset(allOffs[:l2], got.Offset)) {
				report("offset lookup %d with %d..%d entries: %v, want between %v and %v", target, l1, l2, got, lo, hi)
			}
			lt := allTimes[len(allTimes)-1].Timestamp
			ft := allTimes[0].Timestamp
			tt := ft - 2 + r.Int64N(lt-ft+4)
			t1 := m.tx.Len()
			te, _ := m.tx.Lookup(tt)
			t2 := m.tx.Len()
			tlo, _ := wantTime(allTimes[:t1], tt)
			thi, _ := wantTime(allTimes[:t2], tt)
			if te.Offset < tlo.Offset || te.Offset > thi.Offset {
				report("time lookup %d with %d..%d entries: %v, want between %v and %v", tt, t1, t2, te, tlo, thi)
			}
			if r.IntN(200) == 0 {
				if err := m.ox.SanityCheck(math.MaxUint32); err != nil {
					report("sanity check beside append: %v", err)
				}
			}
		}
	}, func() {
		offs, times = m.appendUntilFull(offs, times)
	})
	require.Zero(m.t, bad.Load(), "%v", firstBad.Load())
	m.offs = append(m.offs, offs...)
	m.times = append(m.times, times...)
	m.resetGenerators()
}

// appendUntilFull appends offs and times to the indexes, and returns the
// entries appended: all, or those before the index got full.
func (m *summaryModel) appendUntilFull(offs []OffsetPosition, times []TimeOffset) ([]OffsetPosition, []TimeOffset) {
	for i := range offs {
		if err := m.ox.Append(offs[i].Offset, offs[i].Position); err != nil {
			require.ErrorIs(m.t, err, ErrFull)
			require.True(m.t, m.ox.Full())
			offs = offs[:i]
			break
		}
	}
	for i := range times {
		if err := m.tx.Append(times[i].Timestamp, times[i].Offset); err != nil {
			require.ErrorIs(m.t, err, ErrFull)
			times = times[:i]
			break
		}
	}
	return offs, times
}

// TestSummaryModel compares lookups with the model across appends (with
// readers beside them), truncations, resets, seals and reopens, writable,
// read-only and live. Run it with -race.
func TestSummaryModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			// 64 KiB: 8,192 offset entries (16 groups), 5,461 time entries.
			m := &summaryModel{t: t, r: rand.New(rand.NewPCG(seed, 5)), dir: t.TempDir(), maxBytes: 64 << 10, noWarm: seed%2 == 1}
			m.resetGenerators()
			m.openWritable()
			defer func() { m.close() }()
			steps := 40
			if testing.Short() {
				steps = 15
			}
			for step := range steps {
				op := m.r.IntN(10)
				what := fmt.Sprintf("step %d op %d", step, op)
				switch op {
				case 0, 1: // append, up to past full
					m.appendConcurrently(1 + m.r.IntN(3000))
				case 2, 3: // append up to around the end of a group
					k := 1<<groupShift - len(m.offs)%(1<<groupShift) + m.r.IntN(3) - 1
					m.appendConcurrently(max(k, 1))
				case 4: // truncate
					if len(m.offs) > 0 {
						k := m.r.IntN(len(m.offs) + 1)
						to := testBase + int64(k)*5
						if k < len(m.offs) {
							to = m.offs[k].Offset
						}
						require.NoError(t, m.ox.TruncateTo(to))
						require.NoError(t, m.tx.TruncateTo(to))
						m.offs = m.offs[:sort.Search(len(m.offs), func(i int) bool { return m.offs[i].Offset >= to })]
						m.times = m.times[:sort.Search(len(m.times), func(i int) bool { return m.times[i].Offset >= to })]
						m.resetGenerators()
					}
				case 5: // reset
					require.NoError(t, m.ox.Reset())
					require.NoError(t, m.tx.Reset())
					m.offs, m.times = nil, nil
					m.resetGenerators()
				case 6: // a live open beside the writer, of the preallocated file
					lo, err := OpenOffset(m.opath(), testBase, Options{Follow: true})
					require.NoError(t, err)
					lt, err := OpenTime(m.tpath(), testBase, Options{Follow: true})
					require.NoError(t, err)
					m.setWarm(lo, lt)
					m.check(what+" live", lo, lt)
					require.NoError(t, lo.SanityCheck(math.MaxUint32))
					require.NoError(t, lo.Close())
					require.NoError(t, lt.Close())
				case 7: // seal, then reopen read-only, then writable
					require.NoError(t, m.ox.Seal())
					require.NoError(t, m.tx.Seal())
					m.check(what+" sealed", m.ox, m.tx)
					m.close()
					ro, err := OpenOffset(m.opath(), testBase, Options{})
					require.NoError(t, err)
					rt, err := OpenTime(m.tpath(), testBase, Options{})
					require.NoError(t, err)
					m.setWarm(ro, rt)
					m.check(what+" read-only", ro, rt)
					require.NoError(t, ro.SanityCheck(math.MaxUint32))
					require.NoError(t, rt.SanityCheck(testBase, math.MaxInt64))
					require.NoError(t, ro.Close())
					require.NoError(t, rt.Close())
					m.openWritable()
				case 8: // close and reopen writable (as after a restart)
					m.close()
					m.openWritable()
				case 9: // a crash: reopen a copy of the preallocated files
					copyFile(t, m.opath(), m.opath()+".crash")
					copyFile(t, m.tpath(), m.tpath()+".crash")
					m.close()
					require.NoError(t, os.Rename(m.opath()+".crash", m.opath()))
					require.NoError(t, os.Rename(m.tpath()+".crash", m.tpath()))
					m.openWritable()
				}
				m.check(what, m.ox, m.tx)
				require.NoError(t, m.ox.SanityCheck(math.MaxUint32), what)
				require.NoError(t, m.tx.SanityCheck(testBase, math.MaxInt64), what)
			}
		})
	}
}

// TestSummaryReadOnlyConcurrentFirstLookups has readers race to build the
// summary of an index opened read-only: they all get the same answers,
// and one summary wins.
func TestSummaryReadOnlyConcurrentFirstLookups(t *testing.T) {
	path := tempPath(t, "00.index")
	x, err := OpenOffset(path, testBase, Options{Writable: true})
	require.NoError(t, err)
	want := fillOffset(t, x, 5000)
	require.NoError(t, x.Close())
	for range 5 {
		ro := openOffset(t, path, Options{})
		require.Nil(t, ro.f.sum.Load(), "built lazily")
		var bad atomic.Int64
		runReaders(4, func(g int, _ func() bool) {
			for i := g; i < len(want); i += 7 {
				if ro.Lookup(want[i].Offset+5) != want[i] {
					bad.Add(1)
				}
			}
		}, func() {})
		assert.Zero(t, bad.Load())
		require.NotNil(t, ro.f.sum.Load())
		assert.Len(t, ro.f.sum.Load().k32, ro.f.groups(5000))
		require.NoError(t, ro.Close())
		assert.Nil(t, ro.f.sum.Load(), "dropped by Close")
	}
}

// TestSummaryMemory checks the summary's size on full 10 MiB indexes:
// 4 bytes per 4 KiB page of an offset index, 8 bytes per 512 time entries,
// while writable (never more than the index can need) and once sealed.
func TestSummaryMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("fills two 10 MiB indexes")
	}
	ox := openOffset(t, tempPath(t, "00.index"), Options{Writable: true})
	for i := range DefaultMaxBytes / OffsetEntrySize {
		require.NoError(t, ox.Append(testBase+1+int64(i), 1+int64(i)))
	}
	require.True(t, ox.Full())
	assert.Equal(t, 2560, len(ox.f.sum.Load().k32), "10 KiB")
	require.NoError(t, ox.Seal())
	assert.Equal(t, 2560, len(ox.f.sum.Load().k32))

	tx := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true})
	n := DefaultMaxBytes / TimeEntrySize
	for i := range n {
		require.NoError(t, tx.Append(1+int64(i), testBase+int64(i)))
	}
	require.True(t, tx.Full())
	assert.Equal(t, (n+511)/512, len(tx.f.sum.Load().k64), "13.3 KiB")

	// A sealed index that is not full keeps only the keys in use.
	sx := openOffset(t, tempPath(t, "01.index"), Options{Writable: true})
	fillOffset(t, sx, 3*512+1)
	assert.Equal(t, minSummaryKeys, len(sx.f.sum.Load().k32))
	require.NoError(t, sx.Seal())
	assert.Equal(t, 4, len(sx.f.sum.Load().k32))
}

// TestSummaryDamagedIndex looks up targets in indexes of random bytes,
// large enough to use the summary: nothing panics, and every answer is an
// entry of the index (or none).
func TestSummaryDamagedIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sorted := range []bool{false, true} {
		data := make([]byte, 5000*OffsetEntrySize)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if sorted { // sorted but for a few swapped entries
			raw := make([][2]uint32, 5000)
			for i := range raw {
				raw[i] = [2]uint32{uint32(i*7 + 1), uint32(i*100 + 1)}
			}
			for range 50 {
				a, b := r.IntN(5000), r.IntN(5000)
				raw[a], raw[b] = raw[b], raw[a]
			}
			data = rawOffset(raw...)
		}
		path := tempPath(t, "00.index")
		require.NoError(t, os.WriteFile(path, data, 0o640))
		entries, err := DecodeOffsetEntries(data, testBase)
		require.NoError(t, err)
		in := map[OffsetPosition]bool{{Offset: testBase}: true}
		for _, e := range entries {
			in[e] = true
		}
		for _, opts := range []Options{{}, {Follow: true}, {Writable: true, MaxBytes: 1 << 20}} {
			x := openOffset(t, path, opts)
			for range 20000 {
				got := x.Lookup(testBase + r.Int64N(1<<33))
				require.True(t, in[got], "%v", got)
			}
			tpath := tempPath(t, "00.timeindex")
			require.NoError(t, os.WriteFile(tpath, data[:len(data)/TimeEntrySize*TimeEntrySize], 0o640))
			tx := openTime(t, tpath, opts)
			for range 20000 {
				_, _ = tx.Lookup(int64(r.Uint64()))
			}
		}
	}
}
