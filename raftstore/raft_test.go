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
// compared. Restores after started is set count installed snapshots.
type testFSM struct {
	mu      sync.Mutex
	ids     map[uint64]bool
	hash    uint64 // fnv-1a over (index, data) of every command applied
	applied uint64 // index of the last command applied

	started  atomic.Bool
	restores atomic.Int32
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
	if f.started.Load() {
		f.restores.Add(1)
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
}

func (c *testCluster) config(id raft.ServerID) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = id
	conf.HeartbeatTimeout = 200 * time.Millisecond
	conf.ElectionTimeout = 200 * time.Millisecond
	conf.LeaderLeaseTimeout = 200 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	// Let the leader take up to MaxAppendEntries commands per StoreLogs
	// (one batch, one fsync) from the single goroutine that applies.
	conf.BatchApplyCh = true
	// Snapshot and compact often, keeping few entries, so that a
	// follower that was away needs a snapshot.
	conf.SnapshotThreshold = 500
	conf.SnapshotInterval = 100 * time.Millisecond
	conf.TrailingLogs = 100
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
	_, n.trans = raft.NewInmemTransport(n.addr)
	for _, o := range c.nodes {
		if o != n && o.trans != nil {
			o.trans.Connect(n.addr, n.trans)
			n.trans.Connect(o.addr, o.trans)
		}
	}
	n.fsm = newTestFSM()
	n.raft, err = raft.NewRaft(c.config(n.id), n.fsm, n.store, n.store, snaps, n.trans)
	require.NoError(t, err)
	n.fsm.started.Store(true)
}

// stop shuts raft down on node n, disconnects it and closes its stores.
func (c *testCluster) stop(n *testNode) {
	require.NoError(c.t, n.raft.Shutdown().Error())
	for _, o := range c.nodes {
		if o != n && o.trans != nil {
			o.trans.Disconnect(n.addr)
		}
	}
	require.NoError(c.t, n.trans.Close())
	n.trans = nil
	require.NoError(c.t, n.store.Close())
	n.raft = nil
}

func newTestCluster(t *testing.T, n int, opts Options) *testCluster {
	c := &testCluster{t: t, logs: &lockedBuffer{}, opts: opts}
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
	l := c.leader()
	// A barrier makes the leader apply everything it committed.
	require.NoError(c.t, l.raft.Barrier(10*time.Second).Error())
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

	// A follower goes away; the leader moves on and compacts past it.
	leader := c.leader()
	var away *testNode
	for _, n := range c.nodes {
		if n != leader {
			away = n
			break
		}
	}
	_, awayLast := firstLast(t, away.store)
	c.stop(away)
	next := uint64(11_000)
	for {
		c.apply(next, next+1000)
		next += 1000
		f, err := leader.store.FirstIndex()
		require.NoError(t, err)
		if f > awayLast+1 {
			break
		}
		require.Less(t, next, uint64(40_000), "the leader never compacted past index %d (first index %d)", awayLast, f)
	}
	t.Logf("leader compacted past the follower at %v, %d commands", time.Since(begin), next)
	c.start(away)
	c.converged(int(next))
	t.Logf("follower caught up at %v", time.Since(begin))
	assert.Positive(t, away.fsm.restores.Load(), "the follower installed the leader's snapshot")
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
