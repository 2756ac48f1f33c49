package offsets

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openT(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	require.NoError(t, err)
	return s
}

type key struct {
	group, topic string
	partition    int32
}

type val struct {
	offset   int64
	metadata string
}

// snapshotOf is the whole visible state of s, for comparing with a model or
// with the state after a reopen.
// twoStores opens two stores on a new directory, as two processes would
// share it.
func twoStores(t *testing.T) (dir string, a, b *Store) {
	t.Helper()
	dir = t.TempDir()
	return dir, openT(t, dir, Options{}), openT(t, dir, Options{})
}

// reopenHas checks that a store opened on dir reads want and drops
// nothing, and closes it.
func reopenHas(t *testing.T, dir string, want map[key]val) {
	t.Helper()
	s := openT(t, dir, Options{})
	assert.Equal(t, want, snapshotOf(s))
	assert.Zero(t, s.Stats().DroppedBytes)
	require.NoError(t, s.Close())
}

// inGoroutines runs f(si, s, g) in goroutines g = 0, ..., n-1 for each of
// the stores, and waits for them all.
func inGoroutines(stores []*Store, n int, f func(si int, s *Store, g int)) {
	var wg sync.WaitGroup
	for si, s := range stores {
		for g := range n {
			wg.Go(func() { f(si, s, g) })
		}
	}
	wg.Wait()
}

func snapshotOf(s *Store) map[key]val {
	out := map[key]val{}
	for _, g := range s.Groups() {
		for _, p := range s.Positions(g) {
			out[key{g, p.Topic, p.Partition}] = val{p.Offset, p.Metadata}
		}
	}
	return out
}

func readersOf(s *Store, topics ...string) map[string][]string {
	out := map[string][]string{}
	for _, t := range topics {
		out[t] = s.Readers(t)
	}
	return out
}

func TestCommitFetch(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	defer s.Close()

	_, err := s.Fetch("g", "t", 0)
	assert.ErrorIs(t, err, ErrNoCommit)

	before := time.Now()
	require.NoError(t, s.Commit("g", "t", 0, 0, ""))
	p, err := s.Fetch("g", "t", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(0), p.Offset, "offset 0 is a commit, not ErrNoCommit")
	assert.False(t, p.Time.Before(before.Add(-time.Millisecond)))

	require.NoError(t, s.Commit("g", "t", 0, 42, "meta"))
	p, err = s.Fetch("g", "t", 0)
	require.NoError(t, err)
	assert.Equal(t, Position{Topic: "t", Partition: 0, Offset: 42, Metadata: "meta", Time: p.Time}, p)

	_, err = s.Fetch("g", "t", 1)
	assert.ErrorIs(t, err, ErrNoCommit)
	_, err = s.Fetch("other", "t", 0)
	assert.ErrorIs(t, err, ErrNoCommit)

	require.NoError(t, s.CommitBatch("g", []Commit{{"t", 1, 7, ""}, {"u", 0, 9, "x"}, {"t", 1, 8, "last"}}))
	assert.Equal(t, map[key]val{
		{"g", "t", 0}: {42, "meta"},
		{"g", "t", 1}: {8, "last"},
		{"g", "u", 0}: {9, "x"},
	}, snapshotOf(s))
	assert.Equal(t, []string{"g"}, s.Groups())
	assert.NoError(t, s.CommitBatch("g", nil), "an empty batch does nothing")
}

func TestValidation(t *testing.T) {
	s := openT(t, t.TempDir(), Options{MaxMetadataBytes: 8})
	defer s.Close()
	long := strings.Repeat("x", MaxNameBytes+1)
	cases := []struct {
		name string
		err  error
	}{
		{"empty group", s.Commit("", "t", 0, 0, "")},
		{"empty topic", s.Commit("g", "", 0, 0, "")},
		{"long group", s.Commit(long, "t", 0, 0, "")},
		{"long topic", s.Commit("g", long, 0, 0, "")},
		{"negative partition", s.Commit("g", "t", -1, 0, "")},
		{"negative offset", s.Commit("g", "t", 0, -1, "")},
		{"metadata too long", s.Commit("g", "t", 0, 0, "123456789")},
		{"batch: empty group", s.CommitBatch("", []Commit{{"t", 0, 0, ""}})},
		{"batch: bad entry", s.CommitBatch("g", []Commit{{"t", 0, 0, ""}, {"t", 0, -5, ""}})},
		{"subscribe: empty topic", s.Subscribe("g", "")},
		{"unsubscribe: empty group", s.Unsubscribe("", "t")},
		{"delete: empty group", s.DeleteGroup("")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.ErrorIs(t, c.err, ErrInvalid)
		})
	}
	assert.Empty(t, s.Groups(), "nothing invalid was committed")
	big := make([]Commit, 1000)
	for i := range big {
		big[i] = Commit{"t", int32(i), 0, strings.Repeat("m", 8)}
	}
	s2 := openT(t, t.TempDir(), Options{MaxMetadataBytes: 1 << 20})
	defer s2.Close()
	huge := make([]Commit, 20)
	for i := range huge {
		huge[i] = Commit{"t", int32(i), 0, strings.Repeat("m", 1<<20)}
	}
	err := s2.CommitBatch("g", huge)
	assert.ErrorIs(t, err, ErrInvalid, "a batch over MaxRecordBytes")
	assert.NoError(t, s2.CommitBatch("g", huge[:10]))
	assert.NoError(t, s.CommitBatch("g", big))
	assert.Len(t, s.Positions("g"), 1000)
	require.NoError(t, s.DeleteGroup("g"))
	assert.NoError(t, s.Commit("g", "t", 0, 0, "12345678"), "metadata at the limit")

	for name, o := range map[string]Options{
		"sync policy":  {Sync: SyncPolicy(9)},
		"negative":     {CompactBytes: -1},
		"metadata cap": {MaxMetadataBytes: 2 << 20},
	} {
		_, err := Open(t.TempDir(), o)
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
}

func TestMinCommittedAndReaders(t *testing.T) {
	// SyncAlways: each write is durable, hence visible, when it returns.
	s := openT(t, t.TempDir(), Options{})
	defer s.Close()
	type want struct {
		offset int64
		ok     bool
	}
	check := func(step string, topic string, partition int32, w want) {
		off, ok := s.MinCommitted(topic, partition)
		assert.Equal(t, w, want{off, ok}, "%s: MinCommitted(%s, %d)", step, topic, partition)
	}
	check("empty", "t", 0, want{0, false})

	require.NoError(t, s.Subscribe("idle", "t"))
	assert.Equal(t, []string{"idle"}, s.Readers("t"))
	check("subscribed, no commit", "t", 0, want{0, true})
	_, err := s.Fetch("idle", "t", 0)
	assert.ErrorIs(t, err, ErrNoCommit)

	require.NoError(t, s.Commit("a", "t", 0, 50, ""))
	require.NoError(t, s.Commit("b", "t", 0, 30, ""))
	check("idle group holds", "t", 0, want{0, true})
	require.NoError(t, s.Unsubscribe("idle", "t"))
	assert.Equal(t, []string{"a", "b"}, s.Readers("t"))
	check("two groups", "t", 0, want{30, true})
	check("partition without commits", "t", 1, want{0, true})
	require.NoError(t, s.Commit("a", "t", 1, 5, ""))
	check("b has not committed on 1", "t", 1, want{0, true})
	require.NoError(t, s.Commit("b", "t", 1, 6, ""))
	check("both committed on 1", "t", 1, want{5, true})

	require.NoError(t, s.DeleteGroup("b"))
	check("after delete", "t", 0, want{50, true})
	assert.Equal(t, []string{"a"}, s.Readers("t"))
	assert.Equal(t, []string{"a"}, s.Groups(), "an unsubscribed group with no other topic is gone")
	check("other topic", "u", 0, want{0, false})

	require.NoError(t, s.Unsubscribe("a", "t"))
	check("no reader left", "t", 0, want{0, false})
	assert.Empty(t, s.Groups())
	assert.NoError(t, s.Unsubscribe("a", "t"), "idempotent")
	assert.NoError(t, s.DeleteGroup("nobody"), "idempotent")
}

// workload applies random operations to s and to a model, and returns the
// model.
func workload(t testing.TB, s *Store, rng *rand.Rand, n int, model map[key]val) {
	t.Helper()
	for i := 0; i < n; i++ {
		g := fmt.Sprintf("g%d", rng.IntN(5))
		tp := fmt.Sprintf("t%d", rng.IntN(3))
		p := int32(rng.IntN(4))
		switch r := rng.IntN(100); {
		case r < 70:
			off, md := rng.Int64N(1e6), fmt.Sprint(rng.IntN(10))
			require.NoError(t, s.Commit(g, tp, p, off, md))
			model[key{g, tp, p}] = val{off, md}
		case r < 90:
			var batch []Commit
			for j := 0; j < 1+rng.IntN(4); j++ {
				c := Commit{fmt.Sprintf("t%d", rng.IntN(3)), int32(rng.IntN(4)), rng.Int64N(1e6), ""}
				batch = append(batch, c)
			}
			require.NoError(t, s.CommitBatch(g, batch))
			for _, c := range batch {
				model[key{g, c.Topic, c.Partition}] = val{c.Offset, c.Metadata}
			}
		case r < 94:
			require.NoError(t, s.Subscribe(g, tp))
		case r < 97:
			require.NoError(t, s.Unsubscribe(g, tp))
			for k := range model {
				if k.group == g && k.topic == tp {
					delete(model, k)
				}
			}
		default:
			require.NoError(t, s.DeleteGroup(g))
			for k := range model {
				if k.group == g {
					delete(model, k)
				}
			}
		}
	}
}

func TestReplay(t *testing.T) {
	cases := []struct {
		name    string
		opts    Options
		compact bool // compact midway: snapshot plus journal
	}{
		{"journal only", Options{Sync: SyncNever}, false},
		{"snapshot then journal", Options{Sync: SyncNever}, true},
		{"frequent compaction", Options{Sync: SyncNever, CompactBytes: 2000}, false},
		{"sync always", Options{}, true},
		{"sync interval", Options{Sync: SyncInterval, SyncInterval: time.Millisecond}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rng := rand.New(rand.NewPCG(1, 2))
			model := map[key]val{}
			s := openT(t, dir, c.opts)
			workload(t, s, rng, 300, model)
			if c.compact {
				require.NoError(t, s.Compact())
			}
			workload(t, s, rng, 300, model)
			require.NoError(t, s.Sync()) // reads see durable writes only
			assert.Equal(t, model, snapshotOf(s))
			topics := []string{"t0", "t1", "t2"}
			readers := readersOf(s, topics...)
			stats := s.Stats()
			require.NoError(t, s.Close())

			s = openT(t, dir, c.opts)
			defer s.Close()
			assert.Equal(t, model, snapshotOf(s))
			assert.Equal(t, readers, readersOf(s, topics...))
			assert.Equal(t, stats.Generation, s.Stats().Generation)
			if c.compact || c.opts.CompactBytes > 0 {
				assert.Greater(t, stats.Generation, uint64(1))
			}
			files, err := os.ReadDir(dir)
			require.NoError(t, err)
			var journals int
			for _, f := range files {
				if strings.HasPrefix(f.Name(), journalPrefix) {
					journals++
				}
			}
			assert.Equal(t, 1, journals, "old journals are deleted")
		})
	}
}

func TestCompactionKeepsLatest(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: SyncNever})
	model := map[key]val{}
	workload(t, s, rand.New(rand.NewPCG(3, 4)), 2000, model)
	require.NoError(t, s.Subscribe("idle", "t9"))
	require.NoError(t, s.Compact())

	data, err := os.ReadFile(filepath.Join(dir, snapshotName))
	require.NoError(t, err)
	st, gen, _, reason := decodeSnapshot(data)
	require.Empty(t, reason)
	assert.Equal(t, s.Stats().Generation, gen)
	got := map[key]val{}
	n := 0
	for gname, g := range st.groups {
		for tname, tp := range g.topics {
			for p, pos := range tp.parts {
				got[key{gname, tname, p}] = val{pos.offset, pos.metadata}
				n++
			}
		}
	}
	assert.Equal(t, model, got, "the snapshot holds exactly the latest commit per key")
	assert.Equal(t, len(model), n)
	assert.Equal(t, len(model), st.entries)
	assert.Contains(t, st.readers["t9"], "idle", "interest without commits is kept")
	assert.Equal(t, encodeSnapshot(nil, st, gen), data, "the encoding is canonical")

	info, err := os.Stat(filepath.Join(dir, journalName(gen)))
	require.NoError(t, err)
	assert.Equal(t, int64(journalHeaderSize), info.Size(), "a new, empty journal")
	require.NoError(t, s.Close())
}

// TestCompactionCrashPoints rebuilds the directory as a crash at each step of
// a compaction from generation G to G+1 would leave it, and checks that Open
// gives the same state.
func TestCompactionCrashPoints(t *testing.T) {
	type before struct {
		journal, snapshot []byte // of generation G
		gen               uint64
	}
	build := func(t *testing.T) (string, map[key]val, before) {
		dir := t.TempDir()
		s := openT(t, dir, Options{Sync: SyncNever})
		model := map[key]val{}
		rng := rand.New(rand.NewPCG(5, 6))
		workload(t, s, rng, 200, model)
		require.NoError(t, s.Compact())
		workload(t, s, rng, 200, model)
		require.NoError(t, s.Sync())
		var b before
		var err error
		b.gen = s.Stats().Generation
		b.journal, err = os.ReadFile(filepath.Join(dir, journalName(b.gen)))
		require.NoError(t, err)
		b.snapshot, err = os.ReadFile(filepath.Join(dir, snapshotName))
		require.NoError(t, err)
		require.NoError(t, s.Compact())
		require.NoError(t, s.Close())
		return dir, model, b
	}
	write := func(t *testing.T, path string, data []byte) {
		require.NoError(t, os.WriteFile(path, data, 0o640))
	}
	cases := []struct {
		name  string
		crash func(t *testing.T, dir string, b before)
	}{
		{"after the snapshot rename, before the journal switch", func(t *testing.T, dir string, b before) {
			write(t, filepath.Join(dir, journalName(b.gen)), b.journal)
		}},
		{"new journal created, snapshot not renamed", func(t *testing.T, dir string, b before) {
			write(t, filepath.Join(dir, journalName(b.gen)), b.journal)
			write(t, filepath.Join(dir, snapshotName), b.snapshot)
			write(t, filepath.Join(dir, snapshotName+".tmp"), []byte("half a snapshot"))
		}},
		{"new journal with a torn header, snapshot not renamed", func(t *testing.T, dir string, b before) {
			write(t, filepath.Join(dir, journalName(b.gen)), b.journal)
			write(t, filepath.Join(dir, snapshotName), b.snapshot)
			require.NoError(t, os.Truncate(filepath.Join(dir, journalName(b.gen+1)), 5))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, model, b := build(t)
			c.crash(t, dir, b)
			s := openT(t, dir, Options{})
			assert.Equal(t, model, snapshotOf(s))
			_, err := os.Stat(filepath.Join(dir, snapshotName+".tmp"))
			assert.True(t, errors.Is(err, os.ErrNotExist), "the temp snapshot is removed")
			require.NoError(t, s.Commit("after", "t", 0, 1, ""))
			model[key{"after", "t", 0}] = val{1, ""}
			require.NoError(t, s.Close())
			s = openT(t, dir, Options{})
			assert.Equal(t, model, snapshotOf(s))
			require.NoError(t, s.Close())
		})
	}
}
