package crashtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/vfs"
)

const (
	offTopic  = "t"
	offGroups = 3
	offParts  = 3
)

// offsetsOptions compacts every few dozen commits, so that crashes land in
// compactions (new journal, snapshot, switch, removal of the old journal).
func offsetsOptions(fsys vfs.FS, sync offsets.SyncPolicy) offsets.Options {
	return offsets.Options{FS: fsys, Sync: sync, CompactBytes: 700}
}

type offKey struct {
	group string
	part  int32
}

// offModel is what an offsets store must answer after a crash.
type offModel struct {
	syncAlways bool
	// last is the latest commit made per key (acknowledged or not);
	// commits only move forward, as a consumer's do.
	last map[offKey]int64
	// acked is the last acknowledged (durable) commit per key.
	acked map[offKey]int64
	// pending are commits after the acknowledged one, not yet known to
	// be durable (written under SyncNever, or in flight at the crash).
	pending map[offKey][]int64
	// ahead lists the times MinCommitted answered more than the durable
	// commits allow: the cleaner would delete records that a crash then
	// gives back to a consumer.
	ahead []string
}

func newOffModel(syncAlways bool) *offModel {
	return &offModel{syncAlways: syncAlways, last: map[offKey]int64{}, acked: map[offKey]int64{}, pending: map[offKey][]int64{}}
}

func (m *offModel) ackAll() {
	for k, p := range m.pending {
		if len(p) > 0 {
			m.acked[k] = p[len(p)-1]
		}
	}
	clear(m.pending)
}

// offRun drives an offsets store and its model.
type offRun struct {
	m    *offModel
	fsys vfs.FS
	dir  string
	sync offsets.SyncPolicy
	s    *offsets.Store
	rng  *rand.Rand
	// compactions and syncs are the store's counts (Stats) last seen.
	compactions, syncs uint64
}

func (r *offRun) open() error {
	s, err := offsets.Open(r.dir, offsetsOptions(r.fsys, r.sync))
	if err != nil {
		return err
	}
	r.s = s
	r.compactions, r.syncs = s.Stats().Compactions, s.Stats().Syncs
	return r.observe()
}

// observe checks that MinCommitted is not above the durable commits: the
// minimum over the groups with an acknowledged commit on the topic of
// their acknowledged commit on the partition (0 when they have none
// there). A pending commit of a new reader may lower it once durable; the
// store does not count it before (see the offsets package doc).
func (r *offRun) observe() error {
	durable := map[string]bool{}
	for k := range r.m.acked {
		durable[k.group] = true
	}
	for p := int32(0); p < offParts; p++ {
		v, ok := r.s.MinCommitted(offTopic, p)
		if !ok || len(durable) == 0 {
			continue
		}
		low := int64(-1)
		for g := range durable {
			o := r.m.acked[offKey{g, p}]
			if low < 0 || o < low {
				low = o
			}
		}
		if v > low {
			r.m.ahead = append(r.m.ahead, fmt.Sprintf("partition %d: MinCommitted answered %d while the durable commits allow %d", p, v, low))
		}
	}
	return nil
}

func (r *offRun) close() error {
	if r.s == nil {
		return nil
	}
	err := r.s.Close()
	r.s = nil
	if err == nil {
		r.m.ackAll()
	}
	return err
}

func (r *offRun) next(k offKey) int64 {
	off := r.m.last[k] + 1 + int64(r.rng.IntN(20))
	r.m.last[k] = off
	return off
}

func (r *offRun) committed(err error, keys []offKey, offs []int64) error {
	compacted := false
	if err == nil {
		// A compaction (started by the commit when the journal grew past
		// CompactBytes) starts with an fsync of everything appended, and
		// its snapshot holds everything: if it fsynced (even if it then
		// failed) or finished, every commit so far is durable.
		st := r.s.Stats()
		compacted = st.Compactions > r.compactions || st.Syncs > r.syncs
		r.compactions, r.syncs = st.Compactions, st.Syncs
	}
	for i, k := range keys {
		if err == nil && r.m.syncAlways {
			r.m.acked[k] = offs[i]
			r.m.pending[k] = nil
			continue
		}
		r.m.pending[k] = append(r.m.pending[k], offs[i])
	}
	if err != nil {
		return err
	}
	if compacted {
		r.m.ackAll()
	}
	return r.observe()
}

// commit commits the next offset of a random group and partition.
func (r *offRun) commit() error {
	k := offKey{"g" + strconv.Itoa(r.rng.IntN(offGroups)), int32(r.rng.IntN(offParts))}
	off := r.next(k)
	err := r.s.Commit(k.group, offTopic, k.part, off, "m"+strconv.FormatInt(off, 10))
	return r.committed(err, []offKey{k}, []int64{off})
}

// commitBatch commits every partition of a random group at once.
func (r *offRun) commitBatch() error {
	g := "g" + strconv.Itoa(r.rng.IntN(offGroups))
	var keys []offKey
	var offs []int64
	var batch []offsets.Commit
	for p := int32(0); p < offParts; p++ {
		k := offKey{g, p}
		off := r.next(k)
		keys, offs = append(keys, k), append(offs, off)
		batch = append(batch, offsets.Commit{Topic: offTopic, Partition: p, Offset: off})
	}
	return r.committed(r.s.CommitBatch(g, batch), keys, offs)
}

func (r *offRun) syncStore() error {
	if err := r.s.Sync(); err != nil {
		return err
	}
	r.m.ackAll()
	r.compactions, r.syncs = r.s.Stats().Compactions, r.s.Stats().Syncs
	return r.observe()
}

func (r *offRun) compact() error {
	if err := r.s.Compact(); err != nil {
		return err
	}
	// The snapshot holds the whole state: everything is durable.
	r.m.ackAll()
	r.compactions, r.syncs = r.s.Stats().Compactions, r.s.Stats().Syncs
	return r.observe()
}

// check verifies a reopened store: every key's position is its last
// acknowledged commit or a later one that was pending; MinCommitted is the
// minimum of the positions; MinCommitted never answered, before the crash,
// more than the durable commits allowed. It returns the number of acknowledged commits checked.
func (m *offModel) check(s *offsets.Store) (int, error) {
	var errs []error
	keys := map[offKey]bool{}
	for k := range m.acked {
		keys[k] = true
	}
	for k, p := range m.pending {
		if len(p) > 0 {
			keys[k] = true
		}
	}
	checked := 0
	got := map[offKey]int64{}
	for k := range keys {
		pos, err := s.Fetch(k.group, offTopic, k.part)
		acked, isAcked := m.acked[k]
		allowed := slices.Clone(m.pending[k])
		if isAcked {
			allowed = append(allowed, acked)
		}
		switch {
		case errors.Is(err, offsets.ErrNoCommit):
			if isAcked {
				errs = append(errs, fmt.Errorf("%s/%d: no commit after the crash, %d was acknowledged", k.group, k.part, acked))
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("%s/%d: fetch: %w", k.group, k.part, err))
		case !slices.Contains(allowed, pos.Offset):
			errs = append(errs, fmt.Errorf("%s/%d: committed %d after the crash; acknowledged %d (acknowledged: %v), pending since %v", k.group, k.part, pos.Offset, acked, isAcked, m.pending[k]))
		default:
			got[k] = pos.Offset
			if isAcked {
				checked++
			}
		}
	}
	readers := s.Readers(offTopic)
	for p := int32(0); p < offParts; p++ {
		v, ok := s.MinCommitted(offTopic, p)
		if len(readers) == 0 {
			if ok {
				errs = append(errs, fmt.Errorf("partition %d: MinCommitted %d with no reader", p, v))
			}
			continue
		}
		want := int64(-1)
		for _, g := range readers {
			o, has := got[offKey{g, p}]
			if !has {
				o = 0
			}
			if want < 0 || o < want {
				want = o
			}
		}
		if !ok || v != want {
			errs = append(errs, fmt.Errorf("partition %d: MinCommitted %d (ok %v), the positions say %d", p, v, ok, want))
		}
	}
	if len(m.ahead) > 0 {
		errs = append(errs, fmt.Errorf("before the crash, %d answers of MinCommitted ran ahead of the durable commits; the first: %s", len(m.ahead), m.ahead[0]))
	}
	return checked, errors.Join(errs...)
}

type offWorkload struct {
	sync   offsets.SyncPolicy
	seed   uint64
	script func(r *offRun) error
	m      *offModel
}

func (w *offWorkload) Run(fsys vfs.FS, root string) error {
	w.m = newOffModel(w.sync == offsets.SyncAlways)
	r := &offRun{m: w.m, fsys: fsys, dir: filepath.Join(root, "offsets"), sync: w.sync, rng: rand.New(rand.NewPCG(w.seed, 2))}
	if err := r.open(); err != nil {
		return err
	}
	err := w.script(r)
	if err == nil {
		err = r.close()
	} else if r.s != nil {
		_ = r.s.Close()
	}
	return err
}

func (w *offWorkload) Check(fsys vfs.FS, root string) (int, error) {
	s, err := offsets.Open(filepath.Join(root, "offsets"), offsetsOptions(fsys, w.sync))
	if err != nil {
		return 0, fmt.Errorf("reopen: %w", err)
	}
	n, err := w.m.check(s)
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close after the check: %w", cerr)
	}
	return n, err
}

func (r *offRun) reopen() error {
	if err := r.close(); err != nil {
		return err
	}
	return r.open()
}

// The offsets workloads, by name.
var offsetsWorkloads = map[string]func() Workload{
	// Durable commits and batches (SyncAlways), automatic and explicit
	// compactions, clean reopens.
	"offsets/commit-always": func() Workload {
		return &offWorkload{sync: offsets.SyncAlways, seed: 11, script: func(r *offRun) error {
			for i := 0; i < 170; i++ {
				var err error
				switch k := r.rng.IntN(20); {
				case k < 14:
					err = r.commit()
				case k < 18:
					err = r.commitBatch()
				case k < 19:
					err = r.compact()
				default:
					err = r.reopen()
				}
				if err != nil {
					return err
				}
			}
			return nil
		}}
	},
	// Commits acknowledged by an explicit Sync (SyncNever), compactions
	// and reopens.
	"offsets/commit-sync": func() Workload {
		return &offWorkload{sync: offsets.SyncNever, seed: 12, script: func(r *offRun) error {
			for i := 0; i < 400; i++ {
				var err error
				switch k := r.rng.IntN(20); {
				case k < 12:
					err = r.commit()
				case k < 15:
					err = r.commitBatch()
				case k < 18:
					err = r.syncStore()
				case k < 19:
					err = r.compact()
				default:
					err = r.reopen()
				}
				if err != nil {
					return err
				}
			}
			return nil
		}}
	},
}
