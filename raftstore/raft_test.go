package raftstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/storage"
)

// testFSM applies commands that carry a unique id (so that a command
// retried after a lost leadership counts once) and keeps a hash of the
// sequence of (index, command) it applied, so that replicas can be
// compared. restored is the highest index a snapshot restore brought it
// to: a node's own snapshots are at or below the end of its log, so a
// restore past it is a snapshot installed from the leader.
type testFSM struct {
	mu      sync.Mutex
	ids     map[uint64]bool
	hash    uint64 // fnv-1a over (index, data) of every command applied
	applied uint64 // index of the last command applied

	restored atomic.Uint64
}

func newTestFSM() *testFSM { return &testFSM{ids: map[uint64]bool{}, hash: 14695981039346656037} }

func (f *testFSM) Apply(l *raft.Log) interface{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(l.Data) != 8 {
		return fmt.Errorf("command of %d bytes", len(l.Data))
	}
	f.ids[binary.BigEndian.Uint64(l.Data)] = true
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], f.hash)
	h.Write(b[:])
	binary.BigEndian.PutUint64(b[:], l.Index)
	h.Write(b[:])
	h.Write(l.Data)
	f.hash = h.Sum64()
	f.applied = l.Index
	return nil
}

func (f *testFSM) state() (ids int, hash, applied uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ids), f.hash, f.applied
}

func (f *testFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := binary.BigEndian.AppendUint64(nil, f.hash)
	b = binary.BigEndian.AppendUint64(b, f.applied)
	for id := range f.ids {
		b = binary.BigEndian.AppendUint64(b, id)
	}
	return fsmSnapshot(b), nil
}

func (f *testFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	if len(b) < 16 || len(b)%8 != 0 {
		return fmt.Errorf("snapshot of %d bytes", len(b))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hash = binary.BigEndian.Uint64(b)
	f.applied = binary.BigEndian.Uint64(b[8:])
	f.ids = map[uint64]bool{}
	for p := 16; p < len(b); p += 8 {
		f.ids[binary.BigEndian.Uint64(b[p:])] = true
	}
	for {
		r := f.restored.Load()
		if f.applied <= r || f.restored.CompareAndSwap(r, f.applied) {
			break
		}
	}
	return nil
}

type fsmSnapshot []byte

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}

// lockedBuffer collects raft's logs, shown when a test fails.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type testNode struct {
	id    raft.ServerID
	addr  raft.ServerAddress
	dir   string
	store *Store
	trans *raft.InmemTransport
	fsm   *testFSM
	raft  *raft.Raft
}

type testCluster struct {
	t     *testing.T
	nodes []*testNode
	logs  *lockedBuffer
	opts  Options
	// trailing is raft's TrailingLogs for the nodes started from now on.
	trailing uint64
}

// Raft's TrailingLogs: many until a follower is sent away (a follower
// that lags on a loaded machine is then served from the log, not sent a
// snapshot: see TestRaftCluster), few from then on, so that the others
// compact past it.
const (
	manyTrailingLogs = 5000
	fewTrailingLogs  = 100
)

func (c *testCluster) config(id raft.ServerID) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = id
	// Short enough for a quick test, long enough that a loaded machine
	// (two cores, the race detector) does not lose leaders all the time;
	// the test survives lost leaderships anyway.
	conf.HeartbeatTimeout = 500 * time.Millisecond
	conf.ElectionTimeout = 500 * time.Millisecond
	conf.LeaderLeaseTimeout = 500 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	// Let the leader take up to MaxAppendEntries commands per StoreLogs
	// (one batch, one fsync) from the single goroutine that applies.
	conf.BatchApplyCh = true
	// Snapshot and compact often, keeping few entries once trailing is
	// fewTrailingLogs, so that a follower that was away needs a snapshot.
	conf.SnapshotThreshold = 500
	conf.SnapshotInterval = 100 * time.Millisecond
	conf.TrailingLogs = c.trailing
	conf.LogOutput = c.logs
	conf.LogLevel = "WARN"
	return conf
}

// start opens node n's stores from its directory and starts raft on them.
func (c *testCluster) start(n *testNode) {
	t := c.t
	var err error
	n.store, err = Open(n.dir, c.opts)
	require.NoError(t, err)
	snaps, err := raft.NewFileSnapshotStore(filepath.Join(n.dir, "snapshots"), 2, c.logs)
	require.NoError(t, err)
	// A transport timeout well above the default 500 ms. On a loaded
	// machine a follower can take longer than that to answer; the leader
	// then takes an RPC that succeeded for a failure, retries from an old
	// next index and may send a snapshot older than the follower's log.
	// hashicorp/raft v1.8.0 mishandles that on a MonotonicLogStore (see
	// TestRaftCluster): it removes every entry, the ones after the
	// snapshot included, keeps its in-memory last index, accepts the
	// next entries after it, and panics applying the ones it removed
	// (GetLog: log not found). That is not the store's bug; make it rare.
	_, n.trans = raft.NewInmemTransportWithTimeout(n.addr, 10*time.Second)
	for _, o := range c.nodes {
		if o != n && o.trans != nil {
			o.trans.Connect(n.addr, n.trans)
			n.trans.Connect(o.addr, o.trans)
		}
	}
	n.fsm = newTestFSM()
	n.raft, err = raft.NewRaft(c.config(n.id), n.fsm, n.store, n.store, snaps, n.trans)
	require.NoError(t, err)
}

// shutdown shuts raft down on node n and disconnects it: nothing changes
// its stores from then on; they stay open.
func (c *testCluster) shutdown(n *testNode) {
	require.NoError(c.t, n.raft.Shutdown().Error())
	if n.trans == nil {
		return
	}
	for _, o := range c.nodes {
		if o != n && o.trans != nil {
			o.trans.Disconnect(n.addr)
		}
	}
	require.NoError(c.t, n.trans.Close())
	n.trans = nil
}

// stop shuts raft down on node n (unless shutdown did), disconnects it
// and closes its stores.
func (c *testCluster) stop(n *testNode) {
	c.shutdown(n)
	require.NoError(c.t, n.store.Close())
	n.raft = nil
}

func newTestCluster(t *testing.T, n int, opts Options) *testCluster {
	c := &testCluster{t: t, logs: &lockedBuffer{}, opts: opts, trailing: manyTrailingLogs}
	var servers []raft.Server
	for i := 0; i < n; i++ {
		node := &testNode{id: raft.ServerID(fmt.Sprintf("node%d", i)), addr: raft.ServerAddress(fmt.Sprintf("addr%d", i)), dir: t.TempDir()}
		c.nodes = append(c.nodes, node)
		servers = append(servers, raft.Server{ID: node.id, Address: node.addr})
	}
	for _, node := range c.nodes {
		c.start(node)
	}
	require.NoError(t, c.nodes[0].raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("raft's log:\n%s", c.logs.String())
		}
		for _, node := range c.nodes {
			if node.raft != nil {
				_ = node.raft.Shutdown().Error()
				_ = node.store.Close()
			}
		}
	})
	return c
}

// waitFor polls cond until it holds; it fails the test only after a
// minute, a liveness bound that no correct run comes near.
func (c *testCluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *testCluster) leader() *testNode {
	c.t.Helper()
	var l *testNode
	c.waitFor("a leader", func() bool {
		for _, n := range c.nodes {
			if n.raft != nil && n.raft.State() == raft.Leader {
				l = n
				return true
			}
		}
		return false
	})
	return l
}

// apply applies the commands with ids [from, to) through the leader,
// retrying those whose future failed (a lost leadership) on the next one.
func (c *testCluster) apply(from, to uint64) {
	c.t.Helper()
	pending := make([]uint64, 0, to-from)
	for id := from; id < to; id++ {
		pending = append(pending, id)
	}
	for round := 0; len(pending) > 0; round++ {
		require.Less(c.t, round, 20, "commands keep failing")
		l := c.leader()
		futures := make([]raft.ApplyFuture, len(pending))
		for i, id := range pending {
			futures[i] = l.raft.Apply(binary.BigEndian.AppendUint64(nil, id), 10*time.Second)
		}
		var failed []uint64
		for i, f := range futures {
			if err := f.Error(); err != nil {
				failed = append(failed, pending[i])
				continue
			}
			require.Nil(c.t, f.Response())
		}
		pending = failed
	}
}

// converged waits until every running node applied what the leader did
// and checks that they applied the same sequence.
func (c *testCluster) converged(ids int) {
	c.t.Helper()
	// A barrier makes the leader apply everything it committed. A
	// leadership lost meanwhile (a loaded machine) fails it: ask the next
	// leader.
	var l *testNode
	for round := 0; ; round++ {
		l = c.leader()
		err := l.raft.Barrier(10 * time.Second).Error()
		if err == nil {
			break
		}
		require.Less(c.t, round, 20, "barriers keep failing: %v", err)
	}
	_, _, want := l.fsm.state()
	c.waitFor("every node to apply the leader's log", func() bool {
		for _, n := range c.nodes {
			if n.raft == nil {
				continue
			}
			if _, _, applied := n.fsm.state(); applied < want {
				return false
			}
		}
		return true
	})
	lids, lhash, lapplied := l.fsm.state()
	assert.Equal(c.t, ids, lids, "every command applied once")
	for _, n := range c.nodes {
		if n.raft == nil {
			continue
		}
		nids, nhash, napplied := n.fsm.state()
		if napplied == lapplied {
			assert.Equal(c.t, lhash, nhash, "%s applied another sequence", n.id)
			assert.Equal(c.t, lids, nids, n.id)
		}
	}
}

// TestRaftCluster runs hashicorp/raft on Stores: three nodes over the
// in-memory transport elect a leader, apply 10,000 commands, survive a
// restart of the leader from its directory, and bring back a follower
// that was away while the leader compacted its log, with InstallSnapshot.
//
// Leaderships may be lost at any step on a loaded machine: applies and
// barriers are retried on the next leader, and whatever must hold for
// whichever node leads is checked on every running node.
//
// A failure seen under load ("panic: log not found" in raft's
// processLogs, on a follower) comes from hashicorp/raft v1.8.0, not from
// the store: a follower given a snapshot older than the end of its log
// (the leader took a timed-out InstallSnapshot or AppendEntries for a
// failure and sent the snapshot again) removes every entry on a
// MonotonicLogStore (removeOldLogs: DeleteRange(first, last)), the ones
// after the snapshot included, but keeps its in-memory last index; it
// then accepts the entries after that index (its store is empty, so any
// first index is valid, as raft-wal allows) and panics applying the ones
// between the snapshot and them (hashicorp/raft#697, fix proposed in
// #704). The long transport timeout and many trailing logs until the
// follower goes away make it rare; nothing here hides it.
func TestRaftCluster(t *testing.T) {
	// Small segments, so that compaction frees some.
	c := newTestCluster(t, 3, Options{Log: storage.Options{SegmentBytes: 16 << 10}})

	// Elect and apply.
	begin := time.Now()
	c.apply(0, 10_000)
	c.converged(10_000)
	t.Logf("10,000 commands applied in %v", time.Since(begin))

	// Restart the leader from disk: close its stores, reopen them from
	// the same directory, rejoin.
	old := c.leader()
	c.stop(old)
	reopened, err := Open(old.dir, c.opts)
	require.NoError(t, err)
	first, last := firstLast(t, reopened)
	require.NotZero(t, last)
	var entry raft.Log
	require.NoError(t, reopened.GetLog(last, &entry), "the last entry reads back")
	require.NoError(t, reopened.GetLog(first, &entry), "the first entry reads back")
	term, err := reopened.GetUint64([]byte("CurrentTerm"))
	require.NoError(t, err)
	assert.NotZero(t, term)
	require.NoError(t, reopened.Close())
	c.start(old)
	c.apply(10_000, 11_000)
	c.converged(11_000)
	t.Logf("leader restarted at %v", time.Since(begin))
	_, _, applied := old.fsm.state()
	assert.Positive(t, applied, "the restarted node applies again")

	// A follower goes away; the others move on and compact past it.
	leader := c.leader()
	var away *testNode
	for _, n := range c.nodes {
		if n != leader {
			away = n
			break
		}
	}
	// Its last index once raft stopped on it: nothing is appended to it
	// after that.
	c.shutdown(away)
	_, awayLast := firstLast(t, away.store)
	c.stop(away)
	c.trailing = fewTrailingLogs
	for _, n := range c.nodes {
		if n.raft != nil {
			conf := c.config(n.id)
			require.NoError(t, n.raft.ReloadConfig(raft.ReloadableConfig{
				TrailingLogs:      conf.TrailingLogs,
				SnapshotInterval:  conf.SnapshotInterval,
				SnapshotThreshold: conf.SnapshotThreshold,
				HeartbeatTimeout:  conf.HeartbeatTimeout,
				ElectionTimeout:   conf.ElectionTimeout,
			}))
		}
	}
	next := uint64(11_000)
	for {
		c.apply(next, next+1000)
		next += 1000
		// Whichever of the others leads when the follower comes back
		// must lack the entry after its last one (the leadership may
		// change meanwhile on a loaded machine): both compacted past it.
		past := true
		for _, n := range c.nodes {
			if n == away {
				continue
			}
			f, err := n.store.FirstIndex()
			require.NoError(t, err)
			past = past && f > awayLast+1
			require.Less(t, next, uint64(40_000), "%s never compacted past index %d (first index %d)", n.id, awayLast, f)
		}
		if past {
			break
		}
	}
	t.Logf("the others compacted past the follower at %v, %d commands", time.Since(begin), next)
	c.start(away)
	c.converged(int(next))
	t.Logf("follower caught up at %v", time.Since(begin))
	// Its own snapshots are at or below awayLast.
	assert.Greater(t, away.fsm.restored.Load(), awayLast, "the follower installed the leader's snapshot")
	// Installing it, raft removes every old entry (the store is
	// monotonic), after the FSM restore: wait for it. The store is empty
	// then, or already holds entries after the snapshot; the next
	// entries go to it after the snapshot's index.
	c.waitFor("the follower's old entries to be removed", func() bool {
		f, err := away.store.FirstIndex()
		require.NoError(t, err)
		return f == 0 || f > awayLast
	})
	c.apply(next, next+500)
	next += 500
	c.converged(int(next))
	// Check the follower's log with raft stopped on it, so that no
	// compaction of its own removes entries while they are read.
	c.shutdown(away)
	f, l := firstLast(t, away.store)
	assert.Greater(t, f, awayLast, "old entries removed")
	away.store.shapeMu.RLock()
	base := away.store.base
	away.store.shapeMu.RUnlock()
	assert.NotZero(t, base, "the emptied log took an index that did not follow its end")
	assert.Greater(t, l, f)
	for i := f; i <= l; i++ {
		require.NoError(t, away.store.GetLog(i, &entry), "index %d", i)
		assert.Equal(t, i, entry.Index)
	}
	t.Logf("done at %v", time.Since(begin))
}
