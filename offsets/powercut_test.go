package offsets

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs/crashfs"
)

// cutOp is one step of a script that several stores on one directory run
// in turn: a commit, a deletion or a compaction by store s.
type cutOp struct {
	s            int
	kind         string // commit, delgroup, deltopic, unsub, compact
	group, topic string
	partition    int32
	offset       int64
}

// cutModel is, per key, every value it took in journal order (nil: no
// position), and the index of the last one that an acknowledged operation
// gave it. After a power cut, a key must hold the acknowledged value or a
// later one.
type cutModel struct {
	values map[key][]*int64
	acked  map[key]int
}

func (m *cutModel) set(k key, v *int64, ok bool) {
	if m.values[k] == nil {
		m.values[k] = []*int64{nil}
	}
	m.values[k] = append(m.values[k], v)
	if ok {
		m.acked[k] = len(m.values[k]) - 1
	}
}

// current is the last value of each key (acknowledged or not).
func (m *cutModel) current() map[key]int64 {
	out := map[key]int64{}
	for k, vs := range m.values {
		if v := vs[len(vs)-1]; v != nil {
			out[k] = *v
		}
	}
	return out
}

func (m *cutModel) apply(op cutOp, ok bool) {
	switch op.kind {
	case "commit":
		v := op.offset
		m.set(key{op.group, op.topic, op.partition}, &v, ok)
	case "delgroup", "deltopic", "unsub":
		for k := range m.current() {
			if (op.kind == "delgroup" && k.group == op.group) ||
				(op.kind == "deltopic" && k.topic == op.topic) ||
				(op.kind == "unsub" && k.group == op.group && k.topic == op.topic) {
				m.set(k, nil, ok)
			}
		}
	}
}

func (m *cutModel) check(got map[key]val) error {
	for k := range got {
		if _, ok := m.values[k]; !ok {
			return fmt.Errorf("%v: holds %d, never committed", k, got[k].offset)
		}
	}
	for k, vs := range m.values {
		g, has := got[k]
		ok := slices.ContainsFunc(vs[m.acked[k]:], func(v *int64) bool {
			return (v == nil && !has) || (v != nil && has && *v == g.offset)
		})
		if !ok {
			var want []any
			for _, v := range vs {
				if v == nil {
					want = append(want, "none")
				} else {
					want = append(want, *v)
				}
			}
			return fmt.Errorf("%v: holds %v (present %v); values in journal order %v, last acknowledged at %d", k, g.offset, has, want, m.acked[k])
		}
	}
	return nil
}

// cutScript: three stores commit the same and different keys, delete a
// group, a topic and an interest, and compact (on demand and when the
// journal passes CompactBytes), each reading what the others wrote.
func cutScript() []cutOp {
	var ops []cutOp
	off := int64(0)
	commit := func(s int, g, tp string, p int32) {
		off++
		ops = append(ops, cutOp{s: s, kind: "commit", group: g, topic: tp, partition: p, offset: off})
	}
	for round := range 3 {
		for s := range 3 {
			commit(s, "shared", "t", 0)
			commit(s, fmt.Sprintf("g%d", s), "t", int32(round))
			commit(s, "doomed", "d", int32(s))
			commit(s, "shared", "u", 1)
		}
		ops = append(ops, cutOp{s: round, kind: "compact"})
		commit((round+1)%3, "shared", "t", 0)
		ops = append(ops, cutOp{s: (round + 1) % 3, kind: "delgroup", group: "doomed"})
		commit(round, "g1", "d", 5)
		ops = append(ops, cutOp{s: (round + 2) % 3, kind: "deltopic", topic: "d"})
		ops = append(ops, cutOp{s: round, kind: "unsub", group: "shared", topic: "u"})
		ops = append(ops, cutOp{s: (round + 2) % 3, kind: "compact"})
	}
	return ops
}

// runCutScript opens three stores on dir through fs and runs the script
// until an operation fails; it returns the model of what was committed.
func runCutScript(fs *crashfs.FS, dir string) *cutModel {
	m := &cutModel{values: map[key][]*int64{}, acked: map[key]int{}}
	var stores []*Store
	defer func() {
		for _, s := range stores {
			_ = s.Close()
		}
	}()
	for range 3 {
		s, err := Open(dir, Options{FS: fs, CompactBytes: 400})
		if err != nil {
			return m
		}
		stores = append(stores, s)
	}
	for _, op := range cutScript() {
		s := stores[op.s]
		var err error
		switch op.kind {
		case "commit":
			err = s.Commit(op.group, op.topic, op.partition, op.offset, "")
		case "delgroup":
			err = s.DeleteGroup(op.group)
		case "deltopic":
			err = s.DeleteTopic(op.topic)
		case "unsub":
			err = s.Unsubscribe(op.group, op.topic)
		case "compact":
			err = s.Compact()
		}
		m.apply(op, err == nil)
		if err != nil {
			return m
		}
	}
	return m
}

// TestPowerCutBesideStoresAtEveryStep: three stores on one directory commit
// the same and different keys, delete a group, a topic and an interest,
// and compact; the power goes at every disk operation in turn (keeping
// only what was fsynced, or some of the rest too, or all of it as a
// SIGKILL would). A reopen has every acknowledged commit or a later
// value of its key, and nothing deleted by an acknowledged deletion comes
// back unless committed again.
func TestPowerCutBesideStoresAtEveryStep(t *testing.T) {
	count := func(t *testing.T) int64 {
		root := t.TempDir()
		fs, err := crashfs.New(root, crashfs.Options{})
		require.NoError(t, err)
		m := runCutScript(fs, filepath.Join(root, "offsets"))
		require.Len(t, m.acked, len(m.values), "every operation succeeds without a crash")
		return fs.Ops()
	}
	ops := count(t)
	for _, mode := range []crashfs.Mode{crashfs.Strict, crashfs.Lazy, crashfs.Kill} {
		t.Run(mode.String(), func(t *testing.T) {
			for n := int64(1); n <= ops+1; n++ {
				root := t.TempDir()
				fs, err := crashfs.New(root, crashfs.Options{Mode: mode, Seed: uint64(n), CrashAt: n})
				require.NoError(t, err)
				dir := filepath.Join(root, "offsets")
				m := runCutScript(fs, dir)
				_, err = fs.Crash()
				require.NoError(t, err)
				if _, err := os.Stat(dir); err != nil {
					continue // the directory was not durable yet: nothing was acknowledged
				}
				s, err := Open(dir, Options{})
				if !assert.NoError(t, err, "crash at operation %d", n) {
					continue
				}
				assert.NoError(t, m.check(snapshotOf(s)), "crash at operation %d", n)
				require.NoError(t, s.Close())
			}
		})
	}
}

// TestPowerCutLosesUnwrittenPages: a power cut keeps what fsyncs covered
// and, of the appends that none covered yet, any mix of pages written and
// pages whose data never reached the disk (zeros, the file's size having
// reached it): records may follow a lost page. Open cuts all of it as a
// torn tail, not as damage, and every synced commit is there.
func TestPowerCutLosesUnwrittenPages(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		root := t.TempDir()
		fs, err := crashfs.New(root, crashfs.Options{Mode: crashfs.Lazy, Seed: seed})
		require.NoError(t, err)
		dir := filepath.Join(root, "offsets")
		s, err := Open(dir, Options{FS: fs, Sync: SyncNever})
		require.NoError(t, err)
		want := map[key]val{}
		for p := range int32(50) {
			require.NoError(t, s.Commit("g", "t", p, 1, "metadata"))
			want[key{"g", "t", p}] = val{1, "metadata"}
		}
		require.NoError(t, s.Sync())
		for i := range int64(3000) { // several 64 KiB writes, never fsynced
			require.NoError(t, s.Commit("g", "t", int32(i%50), i+2, "metadata"))
		}
		_, err = fs.Crash()
		require.NoError(t, err)
		s, err = Open(dir, Options{})
		if !assert.NoError(t, err, "seed %d", seed) {
			continue
		}
		got := snapshotOf(s)
		for k, v := range want {
			assert.LessOrEqual(t, v.offset, got[k].offset, "seed %d: %v went back", seed, k)
		}
		require.NoError(t, s.Close())
	}
}
