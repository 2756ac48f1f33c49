package offsets

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkCommitNoSync: single commits without fsync (SyncNever), over
// 1,000 keys, compaction included. Target: at least 1,000,000 commits/s.
func BenchmarkCommitNoSync(b *testing.B) {
	s := openT(b, b.TempDir(), Options{Sync: SyncNever})
	defer s.Close()
	groups := make([]string, 100)
	for i := range groups {
		groups[i] = fmt.Sprintf("group-%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.Commit(groups[i%100], "orders", int32(i/100%10), int64(i), ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkCommitDurable: SyncAlways commits by 1 and by 16 concurrent
// committers (one group each). Target: 16 committers reach at least 8 times
// the commits/s of one.
func BenchmarkCommitDurable(b *testing.B) {
	for _, committers := range []int{1, 16} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			s := openT(b, b.TempDir(), Options{})
			defer s.Close()
			rate := commitConcurrently(b, []*Store{s}, committers)
			st := s.Stats()
			b.ReportMetric(rate, "commits/s")
			b.ReportMetric(float64(st.Records)/float64(max(st.Syncs, 1)), "commits/fsync")
		})
	}
}

// commitConcurrently runs the timed part of a concurrent commit benchmark:
// committers goroutines, one group each, make b.N commits in all (rounded
// up), committer c through stores[c%len(stores)]. It returns the commits
// per second.
func commitConcurrently(b *testing.B, stores []*Store, committers int) float64 {
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := (b.N + committers - 1) / committers
	for c := range committers {
		wg.Go(func() {
			s, g := stores[c%len(stores)], fmt.Sprintf("group-%d", c)
			for i := range per {
				if err := s.Commit(g, "orders", 0, int64(i), ""); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	return float64(per*committers) / el.Seconds()
}

// BenchmarkCommitStores: SyncAlways commits by 2 and by 16 committers (one
// group each), through one store, or split over two stores open on the same
// directory, as two consumer processes would have it (flock locks belong
// to the open file, so two stores in one process exclude each other as two
// processes do): their appends take the append lock in turn, and each
// fsync covers what both wrote before it.
func BenchmarkCommitStores(b *testing.B) {
	for _, committers := range []int{2, 16} {
		for _, stores := range []int{1, 2} {
			b.Run(fmt.Sprintf("committers=%d/stores=%d", committers, stores), func(b *testing.B) {
				dir := b.TempDir()
				ss := make([]*Store, stores)
				for i := range ss {
					ss[i] = openT(b, dir, Options{})
					defer ss[i].Close()
				}
				rate := commitConcurrently(b, ss, committers)
				var records, syncs uint64
				for _, s := range ss {
					st := s.Stats()
					records, syncs = records+st.Records, syncs+st.Syncs
				}
				b.ReportMetric(rate, "commits/s")
				b.ReportMetric(float64(records)/float64(max(syncs, 1)), "commits/fsync")
			})
		}
	}
}

// BenchmarkFetch: a read of a store that nobody else writes to: it follows
// the journal first (one fstat).
func BenchmarkFetch(b *testing.B) {
	s := openT(b, b.TempDir(), Options{})
	defer s.Close()
	require.NoError(b, s.Commit("g", "t", 0, 1, ""))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Fetch("g", "t", 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen100k: Open of a store holding 100,000 positions (100 groups x
// 10 topics x 100 partitions), from a snapshot and from a journal alone.
// Target: under 100 ms.
func BenchmarkOpen100k(b *testing.B) {
	for _, snapshot := range []bool{true, false} {
		name := "journal"
		if snapshot {
			name = "snapshot"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			opts := Options{Sync: SyncNever, CompactBytes: 1 << 40}
			s := openT(b, dir, opts)
			for g := range 100 {
				group := fmt.Sprintf("group-%03d", g)
				for t := range 10 {
					topic := fmt.Sprintf("topic-%d", t)
					for p := range int32(100) {
						require.NoError(b, s.Commit(group, topic, p, int64(p)*1000+int64(g), ""))
					}
				}
			}
			if snapshot {
				require.NoError(b, s.Compact())
			}
			require.NoError(b, s.Sync()) // Stats counts durable positions
			require.Equal(b, 100_000, s.Stats().Positions)
			require.NoError(b, s.Close())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s, err := Open(dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if s.Stats().Positions != 100_000 {
					b.Fatal("wrong state")
				}
				require.NoError(b, s.Close())
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
		})
	}
}
