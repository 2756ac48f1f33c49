package offsets

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/faultfs"
)

// Two Stores open on one directory in one process behave as two processes
// do: flock locks belong to the open file, so the stores' append locks
// exclude each other.

// journalCommit is one entry of a commit record, as the journal holds it.
type journalCommit struct {
	key
	offset int64
}

// journalCommits decodes the commit records of a journal file in order.
func journalCommits(t *testing.T, path string) []journalCommit {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(data), journalHeaderSize)
	var out []journalCommit
	for off := journalHeaderSize; off < len(data); {
		size, reason, _ := checkRecordAt(data, off)
		require.Empty(t, reason, "record at %d", off)
		d := decbuf{b: data[off+recordHeaderSize : off+size]}
		if d.u8() == recCommit {
			g := string(d.name())
			d.u64()
			for range d.count(minEntryBytes) {
				tp, p, o := string(d.name()), d.partition(), d.offset()
				d.str()
				out = append(out, journalCommit{key{g, tp, p}, o})
			}
			require.Empty(t, d.err)
		}
		off += size
	}
	return out
}

// TestStoresShareDirectory: consumers of different groups, and of one
// group on different partitions, commit through their own stores on one
// directory; each store reads the others' acknowledged commits at once,
// and a reopen has them all.
func TestStoresShareDirectory(t *testing.T) {
	dir, a, b := twoStores(t)
	require.NoError(t, a.Commit("ga", "t", 0, 10, "a"))
	require.NoError(t, b.Commit("gb", "t", 0, 20, "b"))
	require.NoError(t, a.Commit("shared", "t", 0, 30, ""))
	require.NoError(t, b.Commit("shared", "t", 1, 40, ""))
	require.NoError(t, b.CommitBatch("gb", []Commit{{"u", 0, 1, ""}, {"u", 1, 2, ""}}))
	want := map[key]val{
		{"ga", "t", 0}: {10, "a"}, {"gb", "t", 0}: {20, "b"},
		{"shared", "t", 0}: {30, ""}, {"shared", "t", 1}: {40, ""},
		{"gb", "u", 0}: {1, ""}, {"gb", "u", 1}: {2, ""},
	}
	for name, s := range map[string]*Store{"a": a, "b": b} {
		assert.Equal(t, want, snapshotOf(s), "store %s reads every acknowledged commit", name)
		off, ok := s.MinCommitted("t", 0)
		assert.Equal(t, []any{int64(10), true}, []any{off, ok}, name)
	}
	assert.Positive(t, a.Stats().Tailed, "a read b's records")
	require.NoError(t, a.Close())
	require.NoError(t, b.Commit("gb", "t", 0, 21, "b"), "a's Close leaves b working")
	require.NoError(t, b.Close())
	want[key{"gb", "t", 0}] = val{21, "b"}
	s := openT(t, dir, Options{})
	assert.Equal(t, want, snapshotOf(s))
	require.NoError(t, s.Close())
}

// TestSameKeyLastInJournalWins: commits of two stores to one (group, topic,
// partition) are ordered by the journal: the later one wins, in every
// store and after a reopen, whatever their times.
func TestSameKeyLastInJournalWins(t *testing.T) {
	cases := []struct {
		name  string
		order string // which store commits, in turn: offsets 1, 2, ...
	}{
		{"a then b", "ab"},
		{"b then a", "ba"},
		{"a, b, a", "aba"},
		{"b, b, a, a, b", "bbaab"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			stores := map[byte]*Store{'a': openT(t, dir, Options{}), 'b': openT(t, dir, Options{})}
			for i := range len(c.order) {
				require.NoError(t, stores[c.order[i]].Commit("g", "t", 0, int64(i+1), string(c.order[i])))
			}
			last := len(c.order)
			want := map[key]val{{"g", "t", 0}: {int64(last), string(c.order[last-1])}}
			for _, s := range stores {
				assert.Equal(t, want, snapshotOf(s))
				require.NoError(t, s.Close())
			}
			s := openT(t, dir, Options{})
			assert.Equal(t, want, snapshotOf(s))
			require.NoError(t, s.Close())
		})
	}
}

// TestSameKeyConcurrent: two stores commit to the same keys at once, from
// several goroutines each. Whatever the interleaving, every store, a
// read-only store and a reopen agree, and each key holds the value of its
// last commit in the journal.
func TestSameKeyConcurrent(t *testing.T) {
	dir := t.TempDir()
	opts := Options{CompactBytes: 1 << 30} // one journal: its order is the oracle
	stores := []*Store{openT(t, dir, opts), openT(t, dir, opts)}
	const goroutines, perG, keys = 4, 100, 3
	inGoroutines(stores, goroutines, func(si int, s *Store, g int) {
		for i := range perG {
			off := int64(si*1_000_000 + g*1000 + i)
			assert.NoError(t, s.Commit("g", "t", int32(i%keys), off, ""))
		}
	})
	last := map[key]int64{}
	for _, c := range journalCommits(t, filepath.Join(dir, journalName(1))) {
		last[c.key] = c.offset
	}
	require.Len(t, last, keys)
	want := map[key]val{}
	for k, o := range last {
		want[k] = val{o, ""}
	}
	ro, err := OpenReadOnly(dir, Options{})
	require.NoError(t, err)
	for i, s := range append(stores, ro) {
		assert.Equal(t, want, snapshotOf(s), "store %d: the last commit in the journal wins", i)
		require.NoError(t, s.Close())
	}
	s := openT(t, dir, opts)
	assert.Equal(t, want, snapshotOf(s))
	require.NoError(t, s.Close())
}

// TestStoresConcurrentWithCompactions: two stores commit from several
// goroutines each with a small CompactBytes, so that both compact and each
// reloads after the other's compactions, while a read-only store reads.
// Every key is written by one goroutine with growing offsets, so a reader
// must never see a key go back. In the end every view is the model.
func TestStoresConcurrentWithCompactions(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncAlways, SyncNever} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{Sync: policy, CompactBytes: 8 << 10}
			stores := []*Store{openT(t, dir, opts), openT(t, dir, opts)}
			ro, err := OpenReadOnly(dir, Options{})
			require.NoError(t, err)
			const goroutines, perG = 4, 300
			stop := make(chan struct{})
			var readers sync.WaitGroup
			readers.Add(1)
			go func() {
				defer readers.Done()
				seen := map[key]int64{}
				for {
					select {
					case <-stop:
						return
					default:
					}
					for k, v := range snapshotOf(ro) {
						assert.GreaterOrEqual(t, v.offset, seen[k], "%v went back", k)
						seen[k] = v.offset
					}
				}
			}()
			inGoroutines(stores, goroutines, func(si int, s *Store, g int) {
				group := fmt.Sprintf("s%d-g%d", si, g)
				for i := 1; i <= perG; i++ {
					if i%7 == 0 {
						assert.NoError(t, s.CommitBatch(group, []Commit{{"t", 0, int64(i), ""}, {"t", 1, int64(i), ""}}))
					} else {
						assert.NoError(t, s.Commit(group, "t", int32(i%2), int64(i), "m"))
					}
				}
			})
			for _, s := range stores {
				require.NoError(t, s.Sync())
			}
			close(stop)
			readers.Wait()
			want := map[key]val{}
			for si := range stores {
				for g := range goroutines {
					group := fmt.Sprintf("s%d-g%d", si, g)
					want[key{group, "t", 0}] = val{perG, "m"}
					want[key{group, "t", 1}] = val{perG - 1, "m"}
				}
			}
			var compactions, reloads uint64
			for i, s := range append(stores, ro) {
				assert.Equal(t, want, snapshotOf(s), "store %d", i)
				st := s.Stats()
				compactions += st.Compactions
				reloads += st.Reloads
			}
			assert.Positive(t, compactions)
			assert.Positive(t, reloads, "a store followed another's compaction")
			assert.Positive(t, ro.Stats().Reloads, "the read-only store followed compactions")
			for _, s := range append(stores, ro) {
				require.NoError(t, s.Close())
			}
			s := openT(t, dir, opts)
			assert.Equal(t, want, snapshotOf(s))
			require.NoError(t, s.Close())
		})
	}
}

// TestTornAppendOfDeadStore: a store killed in the middle of a write
// leaves a torn record at the journal's end. The next store to append cuts
// it (no store writes without the append lock, so those bytes are nobody's
// write in progress) and appends after it; the stores that only read stop
// before it meanwhile. Bytes followed by a valid record are damage, not a
// torn append: the appending store fails rather than append after them.
func TestTornAppendOfDeadStore(t *testing.T) {
	record := func(group string, offset int64) []byte {
		b, start := appendCommitHead(nil, group, 1, 1)
		b = appendEntry(b, "t", 0, offset, "")
		finishRecord(b, start)
		return b
	}
	cases := []struct {
		name    string
		tail    []byte // what the dead store left
		corrupt bool
	}{
		{"record cut in its body", record("dead", 5)[:20], false},
		{"record cut in its header", record("dead", 5)[:7], false},
		{"zeros", make([]byte, 40), false},
		{"garbage, then a valid record", append([]byte("garbage!"), record("dead", 6)...), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, a, b := twoStores(t)
			require.NoError(t, a.Commit("a", "t", 0, 1, ""))
			path := filepath.Join(dir, journalName(1))
			before, err := os.Stat(path)
			require.NoError(t, err)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write(c.tail)
			require.NoError(t, err)
			require.NoError(t, f.Close())

			want := map[key]val{{"a", "t", 0}: {1, ""}}
			assert.Equal(t, want, snapshotOf(a), "a reader stops before the torn bytes")
			err = b.Commit("b", "t", 0, 2, "")
			if c.corrupt {
				require.ErrorIs(t, err, ErrCorrupt)
				assert.ErrorIs(t, b.Commit("b", "t", 0, 3, ""), ErrCorrupt, "sticky")
				_, err = Open(dir, Options{})
				assert.ErrorIs(t, err, ErrCorrupt)
				_ = b.Close()
				_ = a.Close()
				return
			}
			require.NoError(t, err)
			assert.Equal(t, int64(len(c.tail)), b.Stats().DroppedBytes)
			info, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, before.Size()+int64(len(record("b", 2))), info.Size(), "cut, then appended")
			want[key{"b", "t", 0}] = val{2, ""}
			require.NoError(t, a.Commit("a", "t", 1, 3, ""))
			want[key{"a", "t", 1}] = val{3, ""}
			assert.Equal(t, want, snapshotOf(a))
			assert.Equal(t, want, snapshotOf(b))
			require.NoError(t, a.Close())
			require.NoError(t, b.Close())
			reopenHas(t, dir, want)
		})
	}
}

// TestInterruptedCompactionBesideStores: a store that dies in the middle
// of a compaction leaves the next journal beside the one the others append
// to. Before its snapshot's rename, that journal is empty and the others
// go on with theirs (the next appender removes it); after the rename, the
// snapshot makes their journal obsolete, and the next appender must see
// the new journal and switch to it, or its commits would be deleted unread
// by the next Open.
func TestInterruptedCompactionBesideStores(t *testing.T) {
	cases := []struct {
		name    string
		renamed bool
	}{
		{"crash before the snapshot's rename", false},
		{"crash after the snapshot's rename", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a := openT(t, dir, Options{})
			ro, err := OpenReadOnly(dir, Options{})
			require.NoError(t, err)
			require.NoError(t, a.Commit("g", "t", 0, 1, ""))
			// The dead store's compaction from 1 to 2: journal 2 created;
			// with the rename, snapshot 2 holds the state of journal 1.
			require.NoError(t, os.WriteFile(filepath.Join(dir, journalName(2)), appendJournalHeader(nil, 2), 0o640))
			if c.renamed {
				data, err := os.ReadFile(filepath.Join(dir, journalName(1)))
				require.NoError(t, err)
				st := newState(0)
				require.Empty(t, replayJournal(data, 1, st).reason)
				require.NoError(t, os.WriteFile(filepath.Join(dir, snapshotName), encodeSnapshot(nil, st, 2), 0o640))
			}
			require.NoError(t, a.Commit("g", "t", 0, 2, ""))
			wantGen := uint64(1)
			if c.renamed {
				wantGen = 2
			}
			assert.Equal(t, wantGen, a.Stats().Generation)
			want := map[key]val{{"g", "t", 0}: {2, ""}}
			assert.Equal(t, want, snapshotOf(ro), "the read-only store follows")
			require.NoError(t, a.Close())
			require.NoError(t, ro.Close())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var journals []string
			for _, e := range entries {
				if k, _ := classify(e.Name()); k == FileJournal {
					journals = append(journals, e.Name())
				}
			}
			assert.Equal(t, []string{journalName(wantGen)}, journals)
			s := openT(t, dir, Options{})
			assert.Equal(t, want, snapshotOf(s))
			require.NoError(t, s.Close())
		})
	}
}

// TestOpenCompactsOlderJournals: a directory that a seglog from before the
// shared journal left with two journals holding records (a crash in a
// compaction, then appends to the new journal) is compacted by Open into
// one journal, so that readers follow a single file.
func TestOpenCompactsOlderJournals(t *testing.T) {
	dir := t.TempDir()
	j1 := appendJournalHeader(nil, 1)
	j2 := appendJournalHeader(nil, 2)
	for i, j := range []*[]byte{&j1, &j2} {
		var start int
		*j, start = appendCommitHead(*j, "g", 1, 1)
		*j = appendEntry(*j, "t", int32(i), int64(10+i), "")
		finishRecord(*j, start)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, journalName(1)), j1, 0o640))
	require.NoError(t, os.WriteFile(filepath.Join(dir, journalName(2)), j2, 0o640))
	ro, err := OpenReadOnly(dir, Options{})
	require.NoError(t, err)
	want := map[key]val{{"g", "t", 0}: {10, ""}, {"g", "t", 1}: {11, ""}}
	assert.Equal(t, want, snapshotOf(ro))
	s := openT(t, dir, Options{})
	assert.Equal(t, want, snapshotOf(s))
	assert.Equal(t, uint64(3), s.Stats().Generation)
	require.NoError(t, s.Commit("g", "t", 2, 12, ""))
	want[key{"g", "t", 2}] = val{12, ""}
	assert.Equal(t, want, snapshotOf(ro), "the read-only store followed the compaction")
	require.NoError(t, s.Close())
	require.NoError(t, ro.Close())
	files, err := Files(dir)
	require.NoError(t, err)
	var kinds []string
	for _, f := range files {
		kinds = append(kinds, f.Name+" "+f.Kind.String())
	}
	assert.Equal(t, []string{"LOCK lock", "append.lock lock", journalName(3) + " journal", "snapshot snapshot"}, kinds)
}

// TestDeleteTopic: DeleteTopic removes every group's positions on the
// topic and interest in it in one durable record; groups that read other
// topics keep them, groups left with none are gone. It removes what
// precedes it in the journal, whichever store wrote it; a later commit on
// the topic stands.
func TestDeleteTopic(t *testing.T) {
	dir, a, b := twoStores(t)
	require.NoError(t, a.Commit("only-t", "t", 0, 5, ""))
	require.NoError(t, b.CommitBatch("both", []Commit{{"t", 0, 7, ""}, {"t", 1, 8, ""}, {"u", 0, 9, ""}}))
	require.NoError(t, b.Subscribe("idle", "t"))
	require.NoError(t, b.Commit("other", "u", 0, 1, ""))

	require.NoError(t, a.DeleteTopic("t"), "the commits of both stores go")
	want := map[key]val{{"both", "u", 0}: {9, ""}, {"other", "u", 0}: {1, ""}}
	for name, s := range map[string]*Store{"a": a, "b": b} {
		assert.Equal(t, want, snapshotOf(s), name)
		assert.Nil(t, s.Readers("t"), name)
		_, ok := s.MinCommitted("t", 0)
		assert.False(t, ok, "%s: no group holds the topic", name)
		assert.Equal(t, []string{"both", "other"}, s.Groups(), "%s: groups left with no topic are gone", name)
	}
	assert.NoError(t, a.DeleteTopic("t"), "deleting it again does nothing")
	assert.NoError(t, a.DeleteTopic("never"), "a topic no group reads")
	assert.ErrorIs(t, a.DeleteTopic(""), ErrInvalid)

	require.NoError(t, b.Commit("new", "t", 0, 1, ""), "the topic, recreated, is read anew")
	want[key{"new", "t", 0}] = val{1, ""}
	assert.Equal(t, want, snapshotOf(a))
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	s := openT(t, dir, Options{})
	assert.Equal(t, want, snapshotOf(s), "durable")
	require.NoError(t, s.Compact())
	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	assert.Equal(t, want, snapshotOf(s), "through a snapshot")
	require.NoError(t, s.Close())
}

// TestForeignRecordsDurableBeforeVisible: a store that reads another's
// records fsyncs the journal before it applies them: the other may have
// written them and died before its fsync (or write without fsync, under
// SyncNever), and MinCommitted must not answer from what a power cut can
// lose.
func TestForeignRecordsDurableBeforeVisible(t *testing.T) {
	dir := t.TempDir()
	rec := &recFS{FS: vfs.Default}
	reader := openT(t, dir, Options{FS: rec})
	writer := openT(t, dir, Options{Sync: SyncNever})
	require.NoError(t, writer.Commit("g", "t", 0, 7, ""))
	require.NoError(t, writer.flush()) // written, not fsynced
	before := len(rec.calls())
	off, ok := reader.MinCommitted("t", 0)
	assert.Equal(t, []any{int64(7), true}, []any{off, ok})
	assert.Contains(t, rec.calls()[before:], "sync "+filepath.Join(dir, journalName(1)), "fsynced before it was read")
	require.NoError(t, writer.Close())
	require.NoError(t, reader.Close())
}

// TestFailedWriteBesideStore: a store whose journal write fails halfway
// (a full disk) is fail-stop and leaves half a record at the journal's
// end; the other store cuts it at its next append and goes on, and a
// reopen has every acknowledged commit of both. The failed store's reads
// stay where they were: after a failed write or fsync, no later fsync can
// be trusted to make what it reads durable.
func TestFailedWriteBesideStore(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New(nil)
	a := openT(t, dir, Options{})
	b := openT(t, dir, Options{FS: fs})
	require.NoError(t, b.Commit("b", "t", 0, 1, ""))
	fs.Add(faultfs.Rule{Ops: faultfs.OpWrite, Path: journalPrefix, ShortWrite: true})
	require.ErrorIs(t, b.Commit("b", "t", 0, 2, "this record is torn"), syscall.ENOSPC)
	fs.Clear()
	assert.ErrorIs(t, b.Commit("b", "t", 0, 3, ""), syscall.ENOSPC, "fail-stop")

	require.NoError(t, a.Commit("a", "t", 0, 4, ""))
	assert.Positive(t, a.Stats().DroppedBytes, "a cut the torn half")
	want := map[key]val{{"b", "t", 0}: {1, ""}, {"a", "t", 0}: {4, ""}}
	assert.Equal(t, want, snapshotOf(a))
	assert.Equal(t, map[key]val{{"b", "t", 0}: {1, ""}}, snapshotOf(b), "the failed store reads what was durable when it failed")
	assert.ErrorIs(t, b.Refresh(), syscall.ENOSPC, "and follows no more")
	require.NoError(t, a.Close())
	assert.Error(t, b.Close())
	reopenHas(t, dir, want)
}
