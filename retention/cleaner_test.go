package retention

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newCleaner(t testing.TB, s *storage.Store, c Consumed, opts Options) *Cleaner {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return t0 }
	}
	cl, err := New(s, c, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// runOnce runs the cleaner once and waits for the store to remove the
// files of the segments it deleted (they go in the background). A removal
// that fails shows in WaitDeleted, asserted by the tests that cause one,
// and in the next run.
func runOnce(t testing.TB, c *Cleaner) Report {
	t.Helper()
	rep, err := c.RunOnce(context.Background())
	require.NoError(t, err)
	_ = c.store.WaitDeleted(context.Background())
	return rep
}

func TestConsumedPolicy(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	logs := makeTopic(t, s, "orders", 2, 6, 5, at(t0)) // 6 sealed segments of 5 records: [0,5) ... [25,30)
	cons := newFakeConsumed()
	cons.set("orders", 0, 17) // [0,5) [5,10) [10,15) consumed; 17 is inside [15,20)
	cons.set("orders", 1, 0)  // a group that has not committed here holds everything
	c := newCleaner(t, s, cons, Options{Default: Policy{Consumed: true}})

	rep := runOnce(t, c)
	assert.Equal(t, 2, rep.Partitions)
	assert.Empty(t, rep.Failures)
	require.Len(t, rep.Deletions, 3)
	for i, d := range rep.Deletions {
		assert.Equal(t, Deletion{Topic: "orders", Partition: 0, BaseOffset: int64(5 * i), NextOffset: int64(5*i + 5), Bytes: d.Bytes, Reason: ReasonConsumed}, d)
		assert.Positive(t, d.Bytes)
	}
	assert.Equal(t, int64(15), logs[0].StartOffset())
	assert.Equal(t, int64(0), logs[1].StartOffset())
	assert.Equal(t, int64(30), readAll(t, logs[0], 15))
	assert.Len(t, segmentBases(t, logs[0].Dir()), 4) // 3 sealed + active

	st := c.Stats()
	assert.Equal(t, Stats{Runs: 1, DeletedSegments: 3, DeletedBytes: rep.Bytes(), LastRun: t0, LastElapsed: rep.Elapsed}, st)

	// Nothing more to do until the group moves on.
	assert.Empty(t, runOnce(t, c).Deletions)
	cons.set("orders", 0, 30)
	rep = runOnce(t, c)
	assert.Len(t, rep.Deletions, 3)
	assert.Equal(t, int64(30), logs[0].StartOffset())
}

func TestConsumedWithOffsetsStore(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	logs := makeTopic(t, s, "t", 1, 4, 5, at(t0))
	offs, err := offsets.Open(t.TempDir(), offsets.Options{})
	require.NoError(t, err)
	defer offs.Close()
	var _ Consumed = offs // *offsets.Store satisfies Consumed
	c := newCleaner(t, s, offs, Options{Default: Policy{Consumed: true}})

	// No reading group: nothing is consumed.
	assert.Empty(t, runOnce(t, c).Deletions)

	// Registered but never committed: holds everything.
	require.NoError(t, offs.Subscribe("idle", "t"))
	require.NoError(t, offs.Commit("busy", "t", 0, 20, ""))
	assert.Empty(t, runOnce(t, c).Deletions)
	assert.Equal(t, int64(0), logs[0].StartOffset())

	require.NoError(t, offs.Commit("idle", "t", 0, 10, ""))
	rep := runOnce(t, c)
	assert.Len(t, rep.Deletions, 2)
	assert.Equal(t, int64(10), logs[0].StartOffset())
}

func TestAgePolicy(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	// Segment i's records are 60-10*i minutes old: 60, 50, 40, 30, 20.
	logs := makeTopic(t, s, "t", 1, 5, 3, func(i int) time.Time { return t0.Add(-time.Duration(60-10*i) * time.Minute) })
	now := t0
	c := newCleaner(t, s, nil, Options{Default: Policy{MaxAge: 35 * time.Minute}, Now: func() time.Time { return now }})

	rep := runOnce(t, c)
	require.Len(t, rep.Deletions, 3)
	for _, d := range rep.Deletions {
		assert.Equal(t, ReasonAge, d.Reason)
	}
	assert.Equal(t, int64(9), logs[0].StartOffset())

	now = t0.Add(time.Hour) // everything expired: all but the active segment go
	rep = runOnce(t, c)
	assert.Len(t, rep.Deletions, 2)
	assert.Equal(t, int64(15), logs[0].StartOffset())
	assert.Equal(t, int64(15), logs[0].EndOffset())
}

func TestSizePolicy(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	logs := makeTopic(t, s, "t", 1, 10, 4, at(t0))
	segs, err := logs[0].Segments()
	require.NoError(t, err)
	per := segs[0].Size
	c := newCleaner(t, s, nil, Options{Default: Policy{MaxBytes: 3*per + per/2}})

	rep := runOnce(t, c)
	assert.Len(t, rep.Deletions, 7)
	st, err := logs[0].Stats()
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Size, 3*per+per/2)
	assert.Equal(t, 4, st.Segments) // 3 sealed + the empty active
	for _, d := range rep.Deletions {
		assert.Equal(t, ReasonSize, d.Reason)
	}
}

func TestCombinedPoliciesAndPerTopic(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	// Segments 60, 50, ..., 10 minutes old.
	ts := func(i int) time.Time { return t0.Add(-time.Duration(60-10*i) * time.Minute) }
	a := makeTopic(t, s, "a", 1, 6, 5, ts)
	b := makeTopic(t, s, "b", 1, 6, 5, ts)
	keep := makeTopic(t, s, "keep", 1, 6, 5, ts)
	cons := newFakeConsumed()
	cons.set("a", 0, 5)
	cons.set("b", 0, 30)
	segs, err := a[0].Segments()
	require.NoError(t, err)
	per := segs[0].Size
	c := newCleaner(t, s, cons, Options{
		Default: Policy{Consumed: true, MaxAge: 45 * time.Minute, MaxBytes: 3 * per},
		Topics: map[string]Policy{
			"b":    {Consumed: true, MinSegments: 3},
			"keep": {},
		},
	})
	rep := runOnce(t, c)
	assert.Equal(t, 2, rep.Partitions, "a topic whose policy deletes nothing is not examined")
	var got []string
	for _, d := range rep.Deletions {
		got = append(got, d.Topic+":"+string(d.Reason))
	}
	assert.Equal(t, []string{"a:consumed", "a:age", "a:size", "b:consumed", "b:consumed", "b:consumed", "b:consumed"}, got)
	assert.Equal(t, int64(15), a[0].StartOffset())
	assert.Equal(t, int64(20), b[0].StartOffset()) // 2 sealed + active kept
	assert.Equal(t, int64(0), keep[0].StartOffset())
}

func TestActiveSegmentNeverDeleted(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	require.NoError(t, s.CreateTopic("t", 1, storage.TopicConfig{}))
	l, err := s.Log("t", 0)
	require.NoError(t, err)
	fillSegments(t, l, 3, 5, at(t0.Add(-time.Hour)))
	_, err = l.Append(storage.Record{Timestamp: t0.Add(-time.Hour).UnixMilli(), Value: val(15)}) // the active segment holds a record
	require.NoError(t, err)
	cons := newFakeConsumed()
	cons.set("t", 0, 1000)
	c := newCleaner(t, s, cons, Options{Default: Policy{Consumed: true, MaxAge: time.Second, MaxBytes: 1}})

	for range 3 {
		runOnce(t, c)
		segs, err := l.Segments()
		require.NoError(t, err)
		require.Len(t, segs, 1)
		assert.True(t, segs[0].Active)
		assert.Equal(t, int64(15), segs[0].BaseOffset)
		assert.Equal(t, int64(16), readAll(t, l, l.StartOffset()))
	}
	assert.Equal(t, int64(3), c.Stats().DeletedSegments)
}

func TestDryRun(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	logs := makeTopic(t, s, "t", 2, 4, 5, at(t0.Add(-time.Hour)))
	c := newCleaner(t, s, nil, Options{Default: Policy{MaxAge: time.Minute}, DryRun: true})
	rep := runOnce(t, c)
	assert.True(t, rep.DryRun)
	assert.Len(t, rep.Deletions, 8)
	assert.Positive(t, rep.Bytes())
	for _, l := range logs {
		assert.Equal(t, int64(0), l.StartOffset())
		assert.Len(t, segmentBases(t, l.Dir()), 5)
	}
	st := c.Stats()
	assert.Equal(t, int64(1), st.DryRuns)
	assert.Zero(t, st.DeletedSegments)

	// The same plan, applied.
	real := newCleaner(t, s, nil, Options{Default: Policy{MaxAge: time.Minute}})
	applied := runOnce(t, real)
	assert.Equal(t, rep.Deletions, applied.Deletions)
}

func TestNewValidates(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{})
	for name, tc := range map[string]struct {
		c    Consumed
		opts Options
	}{
		"nil consumed, default consumed": {opts: Options{Default: Policy{Consumed: true}}},
		"nil consumed, topic consumed":   {opts: Options{Topics: map[string]Policy{"t": {Consumed: true}}}},
		"negative age":                   {opts: Options{Default: Policy{MaxAge: -1}}},
		"negative bytes":                 {opts: Options{Topics: map[string]Policy{"t": {MaxBytes: -1}}}},
		"negative min segments":          {opts: Options{Default: Policy{MinSegments: -1}}},
		"bad topic":                      {opts: Options{Topics: map[string]Policy{"../x": {}}}},
		"negative interval":              {opts: Options{Interval: -time.Second}},
	} {
		_, err := New(s, tc.c, tc.opts)
		assert.ErrorIs(t, err, ErrInvalidOptions, name)
	}
	_, err := New(nil, nil, Options{})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	c, err := New(s, nil, Options{Default: Policy{MaxAge: time.Hour}})
	require.NoError(t, err)
	assert.Equal(t, DefaultInterval, c.opts.Interval)
	require.NoError(t, c.Close())
}

// A partition that fails (a log that does not open, a Consumed that
// panics) is reported and counted; the others are cleaned, and the
// cleaner goes on. Files that cannot be removed (in the background, by
// the store) are reported by WaitDeleted, and by the next run, which
// tries them again.
func TestFailuresAreIsolated(t *testing.T) {
	root := t.TempDir()
	fsys := newFaultFS()
	s := openStore(t, root, storage.StoreOptions{Log: func() storage.Options { o := smallLog(); o.FS = fsys; return o }()})
	makeTopic(t, s, "t", 3, 4, 5, at(t0))
	require.NoError(t, s.CreateTopic("u", 2, storage.TopicConfig{}))
	// u-0 cannot open: a stray .log that is not a segment.
	require.NoError(t, os.WriteFile(filepath.Join(root, "u-0", "junk.log"), nil, 0o640))
	u1, err := s.Log("u", 1)
	require.NoError(t, err)
	fillSegments(t, u1, 4, 5, at(t0))

	cons := newFakeConsumed()
	for p := int32(0); p < 3; p++ {
		cons.set("t", p, 20)
	}
	cons.set("u", 0, 20)
	cons.set("u", 1, 20)
	cons.panics["t-1"] = true
	fsys.failRemoves(string(filepath.Separator) + "t-2" + string(filepath.Separator))
	c := newCleaner(t, s, cons, Options{Default: Policy{Consumed: true}, Workers: 2})

	rep := runOnce(t, c)
	assert.Equal(t, 5, rep.Partitions)
	failed := map[string]error{}
	for _, f := range rep.Failures {
		failed[storage.PartitionDir(f.Topic, f.Partition)] = f.Err
	}
	require.Len(t, failed, 2, "%v", failed)
	assert.ErrorIs(t, failed["u-0"], storage.ErrCorrupt)
	assert.ErrorContains(t, failed["t-1"], "panic")
	err = s.WaitDeleted(context.Background())
	assert.ErrorContains(t, err, "delete segments")
	assert.ErrorContains(t, err, "t-2")
	bg := s.DeletionFailures()
	require.Len(t, bg, 1)
	assert.Equal(t, "t", bg[0].Topic)
	assert.Equal(t, int32(2), bg[0].Partition)
	byPart := map[string]int{}
	for _, d := range rep.Deletions {
		byPart[storage.PartitionDir(d.Topic, d.Partition)]++
	}
	// t-2's segments left the log (its start offset moved) even though
	// their files could not be removed.
	assert.Equal(t, map[string]int{"t-0": 4, "t-2": 4, "u-1": 4}, byPart)
	assert.Equal(t, int64(2), c.Stats().Failures)
	t2, err := s.Log("t", 2)
	require.NoError(t, err)
	assert.Equal(t, int64(20), t2.StartOffset())

	// The next run retries the failed partitions, t-2's files included:
	// still failing, it is the run's failure.
	rep = runOnce(t, c)
	failed = map[string]error{}
	for _, f := range rep.Failures {
		failed[storage.PartitionDir(f.Topic, f.Partition)] = f.Err
	}
	require.Len(t, failed, 3, "%v", failed)
	assert.ErrorContains(t, failed["t-2"], "delete segments")
	assert.Equal(t, int64(5), c.Stats().Failures)

	delete(cons.panics, "t-1")
	fsys.failRemoves("")
	rep = runOnce(t, c)
	assert.Len(t, rep.Failures, 1) // u-0 still does not open
	t1, err := s.Log("t", 1)
	require.NoError(t, err)
	assert.Equal(t, int64(20), t1.StartOffset())
	assert.Equal(t, int64(6), c.Stats().Failures)
	assert.Len(t, segmentBases(t, t2.Dir()), 1, "t-2's files went with the retry")
	assert.Empty(t, s.DeletionFailures())
	assert.NoError(t, s.WaitDeleted(context.Background()))
}

func TestRunOnceContextAndClose(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	logs := makeTopic(t, s, "t", 4, 3, 2, at(t0.Add(-time.Hour)))
	c := newCleaner(t, s, nil, Options{Default: Policy{MaxAge: time.Minute}, Workers: 1})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := c.RunOnce(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, rep.Partitions)
	for _, l := range logs {
		assert.Equal(t, int64(0), l.StartOffset())
	}

	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	_, err = c.RunOnce(context.Background())
	assert.ErrorIs(t, err, ErrClosed)
	c.Start() // after Close: nothing
}

// A consumer whose position fell below the start gets a clear error and
// resets to the start.
func TestConsumerBelowStartResets(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	logs := makeTopic(t, s, "t", 1, 4, 5, at(t0.Add(-time.Hour)))
	l := logs[0]
	r := l.NewReader(3)
	require.True(t, r.Next()) // in the middle of segment [0,5)
	require.Equal(t, int64(3), r.Record().Offset)

	c := newCleaner(t, s, nil, Options{Default: Policy{MaxAge: time.Minute}})
	runOnce(t, c)
	require.Equal(t, int64(20), l.StartOffset())

	// The reader finishes what it holds, then gets ErrOffsetOutOfRange.
	for r.Next() {
		assert.Equal(t, string(val(r.Record().Offset)), string(r.Record().Value))
	}
	assert.ErrorIs(t, r.Err(), storage.ErrOffsetOutOfRange)
	_, err := l.Read(7, 1<<10)
	assert.ErrorIs(t, err, storage.ErrOffsetOutOfRange)
	assert.ErrorContains(t, err, "[20, 20)")
	// Reset to the start.
	assert.Equal(t, int64(20), readAll(t, l, l.StartOffset()))
}

// A topic's stored configuration sets its retention when Options.Topics
// does not name it; an entry there still wins.
func TestTopicConfigRetention(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	aged := makeTopic(t, s, "aged", 1, 5, 3, func(i int) time.Time { return t0.Add(-time.Duration(60-10*i) * time.Minute) })
	pinned := makeTopic(t, s, "pinned", 1, 5, 3, func(i int) time.Time { return t0.Add(-time.Duration(60-10*i) * time.Minute) })
	plain := makeTopic(t, s, "plain", 1, 5, 3, func(i int) time.Time { return t0.Add(-time.Duration(60-10*i) * time.Minute) })
	for _, topic := range []string{"aged", "pinned"} {
		require.NoError(t, s.AlterTopic(topic, storage.TopicConfig{RetentionAge: 35 * time.Minute}))
	}
	c := newCleaner(t, s, nil, Options{Topics: map[string]Policy{"pinned": {}}, Now: func() time.Time { return t0 }})
	assert.Equal(t, Policy{MaxAge: 35 * time.Minute}, c.Policy("aged"))

	rep := runOnce(t, c)
	require.Len(t, rep.Deletions, 3)
	assert.Equal(t, int64(9), aged[0].StartOffset(), "the topic's retention.age")
	assert.Equal(t, int64(0), pinned[0].StartOffset(), "Options.Topics wins")
	assert.Equal(t, int64(0), plain[0].StartOffset(), "no policy: nothing deleted")
}

// syncDirCounter counts directory fsyncs.
type syncDirCounter struct {
	vfs.FS
	n atomic.Int64
}

func (c *syncDirCounter) SyncDir(dir string) error {
	c.n.Add(1)
	return c.FS.SyncDir(dir)
}

// TestRunOnceOneDurableWrite: a run that deletes from many partitions
// makes their new start offsets durable with one write for all of them
// (one directory fsync: the store's start-offset checkpoint), not one per
// partition, and the starts survive a reopen.
func TestRunOnceOneDurableWrite(t *testing.T) {
	root := t.TempDir()
	fsys := &syncDirCounter{FS: vfs.Default}
	opts := smallLog()
	opts.FS = fsys
	s, err := storage.OpenStore(root, storage.StoreOptions{Log: opts})
	require.NoError(t, err)
	const parts = 8
	logs := makeTopic(t, s, "orders", parts, 4, 5, at(t0))
	cons := newFakeConsumed()
	for p := int32(0); p < parts; p++ {
		cons.set("orders", p, 12) // [0,5) [5,10) consumed
	}
	c := newCleaner(t, s, cons, Options{Default: Policy{Consumed: true}})
	for _, l := range logs {
		// The rolls left their seals and directory fsyncs to each log's
		// background flusher: done before the count starts.
		require.NoError(t, l.Checkpoint())
	}
	before := fsys.n.Load()
	rep := runOnce(t, c)
	require.Empty(t, rep.Failures)
	assert.Len(t, rep.Deletions, 2*parts)
	assert.Equal(t, int64(1), fsys.n.Load()-before, "directory fsyncs in one run")
	for _, l := range logs {
		assert.Equal(t, int64(10), l.StartOffset())
	}
	require.NoError(t, s.Close())

	s = openStore(t, root, storage.StoreOptions{Log: smallLog()})
	for p := int32(0); p < parts; p++ {
		l, err := s.Log("orders", p)
		require.NoError(t, err)
		assert.Equal(t, int64(10), l.StartOffset())
		assert.Equal(t, int64(20), readAll(t, l, 10))
	}
}
