package crashtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/retention"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

const (
	retTopic = offTopic // the offsets helpers commit on offTopic
	retParts = 2
	retGroup = "g0"
)

// retWorkload is a store with a topic of two partitions, a consumer group
// that commits its position as it reads, and the cleaner deleting
// consumed segments (RunOnce, consumed policy). The invariant: after a
// crash, no record at or above the group's durable committed offset was
// deleted, and the logs and the offsets store keep their own invariants.
type retWorkload struct {
	offSync offsets.SyncPolicy
	seed    uint64
	steps   int
	logs    [retParts]*logModel
	off     *offModel
}

func (w *retWorkload) dirs(root string) (string, string) {
	return filepath.Join(root, "store"), filepath.Join(root, "offsets")
}

func (w *retWorkload) Run(fsys vfs.FS, root string) (err error) {
	for p := range w.logs {
		w.logs[p] = newLogModel(true)
	}
	w.off = newOffModel(w.offSync == offsets.SyncAlways)
	rng := rand.New(rand.NewPCG(w.seed, 3))
	storeDir, offDir := w.dirs(root)
	st, err := storage.OpenStore(storeDir, storage.StoreOptions{Log: logOptions(fsys, storage.SyncAlways)})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	if err := st.CreateTopic(retTopic, retParts, storage.TopicConfig{}); err != nil {
		return err
	}
	or := &offRun{m: w.off, fsys: fsys, dir: offDir, sync: w.offSync, rng: rng}
	if err := or.open(); err != nil {
		return err
	}
	defer func() {
		if cerr := or.close(); err == nil {
			err = cerr
		}
	}()
	cleaner, err := retention.New(st, or.s, retention.Options{Default: retention.Policy{Consumed: true}, Workers: 1})
	if err != nil {
		return err
	}
	defer cleaner.Close()

	for i := 0; i < w.steps; i++ {
		p := int32(rng.IntN(retParts))
		l, err := st.Log(retTopic, p)
		if err != nil {
			return err
		}
		lr := &logRun{m: w.logs[p], l: l, rng: rng}
		switch k := rng.IntN(10); {
		case k < 6:
			err = lr.append(3)
		case k < 8:
			// The group reads on and commits a position at or below the end.
			key := offKey{retGroup, p}
			from := or.m.last[key]
			off := from + rng.Int64N(w.logs[p].end-from+1)
			or.m.last[key] = off
			err = or.committed(or.s.Commit(retGroup, retTopic, p, off, ""), []offKey{key}, []int64{off})
		case k < 9:
			if w.offSync != offsets.SyncAlways {
				err = or.syncStore()
			}
		default:
			var rep retention.Report
			rep, err = cleaner.RunOnce(context.Background())
			if err == nil && len(rep.Failures) > 0 {
				err = rep.Failures[0].Err
			}
			if err != nil {
				break
			}
			// The starts are durable when RunOnce returns: they never
			// move back.
			for p := range w.logs {
				if l, lerr := st.Log(retTopic, int32(p)); lerr == nil {
					w.logs[p].ackedStart = max(w.logs[p].ackedStart, l.StartOffset())
				}
			}
			// The store removes the files in the background; every other
			// run waits for it, so that crash points fall both beside
			// the removal and after it.
			if rng.IntN(2) == 0 {
				err = st.WaitDeleted(context.Background())
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *retWorkload) Check(fsys vfs.FS, root string) (checked int, err error) {
	storeDir, offDir := w.dirs(root)
	os, err := offsets.Open(offDir, offsetsOptions(fsys, w.offSync))
	if err != nil {
		return 0, fmt.Errorf("reopen offsets: %w", err)
	}
	defer func() {
		if cerr := os.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close offsets after the check: %w", cerr)
		}
	}()
	st, err := storage.OpenStore(storeDir, storage.StoreOptions{Log: logOptions(fsys, storage.SyncAlways)})
	if err != nil {
		return 0, fmt.Errorf("reopen store: %w", err)
	}
	defer func() {
		if cerr := st.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close store after the check: %w", cerr)
		}
	}()
	n, err := w.off.check(os)
	checked += n
	errs := []error{err}
	if parts, perr := st.Partitions(retTopic); perr != nil || parts != retParts {
		// The topic is created before anything is acknowledged.
		if w.anyAcked() {
			errs = append(errs, fmt.Errorf("topic %s has %d partitions after the crash (%v)", retTopic, parts, perr))
		}
		return checked, errors.Join(errs...)
	}
	for p := int32(0); p < retParts; p++ {
		l, err := st.Log(retTopic, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("partition %d: %w", p, err))
			continue
		}
		// The durable committed offset: acknowledged records below it may
		// have been deleted, none at or above it.
		var committed int64
		if pos, err := os.Fetch(retGroup, retTopic, p); err == nil {
			committed = pos.Offset
		}
		m := w.logs[p]
		m.deleteReq = committed
		n, err := m.check(l)
		checked += n
		if err != nil {
			errs = append(errs, fmt.Errorf("partition %d (durable commit %d): %w", p, committed, err))
		}
	}
	return checked, errors.Join(errs...)
}

func (w *retWorkload) anyAcked() bool {
	for _, m := range w.logs {
		if len(m.acked) > 0 {
			return true
		}
	}
	return false
}

// The retention workloads, by name.
var retentionWorkloads = map[string]func() Workload{
	// Durable commits (SyncAlways).
	"retention/consumed-always": func() Workload {
		return &retWorkload{offSync: offsets.SyncAlways, seed: 21, steps: 130}
	},
	// Commits made durable by an explicit Sync now and then (SyncNever):
	// the cleaner must go by the durable ones only.
	"retention/consumed-sync": func() Workload {
		return &retWorkload{offSync: offsets.SyncNever, seed: 22, steps: 130}
	},
}
