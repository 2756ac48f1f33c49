package index

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// fullOffsetIndex returns a writable offset index of DefaultMaxBytes with
// every entry in use.
func fullOffsetIndex(b *testing.B) (*OffsetIndex, []OffsetPosition) {
	x := openOffset(b, tempPath(b, "00.index"), Options{Writable: true})
	n := DefaultMaxBytes / OffsetEntrySize
	last := OffsetPosition{}
	for i := range n {
		e := OffsetPosition{Offset: testBase + 1 + int64(i)*3, Position: 1 + int64(i)*97}
		require.NoError(b, x.Append(e.Offset, e.Position))
		last = e
	}
	require.True(b, x.Full())
	return x, []OffsetPosition{last}
}

func randomTargets(lo, hi int64) []int64 {
	r := rand.New(rand.NewPCG(7, 11))
	t := make([]int64, 1<<16)
	for i := range t {
		t[i] = lo + r.Int64N(hi-lo)
	}
	return t
}

// BenchmarkOffsetLookup looks up random offsets in a full 10 MiB index
// (1,310,720 entries), and offsets in its last 8 KiB (the warm section).
func BenchmarkOffsetLookup(b *testing.B) {
	x, last := fullOffsetIndex(b)
	warmFirst := x.Entry(x.Len() - warmBytes/OffsetEntrySize).Offset
	for _, bc := range []struct {
		name    string
		targets []int64
	}{
		{"random", randomTargets(testBase, last[0].Offset+1)},
		{"warm", randomTargets(warmFirst, last[0].Offset+1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var sink int64
			i := 0
			cpu := startCPU()
			for b.Loop() {
				sink += x.Lookup(bc.targets[i&(len(bc.targets)-1)]).Position
				i++
			}
			cpu.report(b)
			_ = sink
		})
	}
}

// BenchmarkOffsetAppend appends to a 10 MiB index, resetting it when full
// (cpu-ns/op counts the resets too: one per 1,310,720 appends).
func BenchmarkOffsetAppend(b *testing.B) {
	x := openOffset(b, tempPath(b, "00.index"), Options{Writable: true})
	i := int64(0)
	cpu := startCPU()
	defer cpu.report(b)
	for b.Loop() {
		i++
		err := x.Append(testBase+i, i)
		if err == ErrFull {
			b.StopTimer()
			require.NoError(b, x.Reset())
			i = 1
			b.StartTimer()
			err = x.Append(testBase+i, i)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTimeLookup looks up random timestamps in a full 10 MiB time
// index (873,813 entries).
func BenchmarkTimeLookup(b *testing.B) {
	x := openTime(b, tempPath(b, "00.timeindex"), Options{Writable: true})
	n := DefaultMaxBytes / TimeEntrySize
	const t0 = 1_700_000_000_000
	for i := range n {
		require.NoError(b, x.Append(t0+int64(i)*5, testBase+1+int64(i)*3))
	}
	require.True(b, x.Full())
	targets := randomTargets(t0-10, t0+int64(n)*5+10)
	var sink int64
	i := 0
	cpu := startCPU()
	for b.Loop() {
		e, _ := x.Lookup(targets[i&(len(targets)-1)])
		sink += e.Offset
		i++
	}
	cpu.report(b)
	_ = sink
}
