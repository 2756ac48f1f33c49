package crashtest

import (
	"time"

	"github.com/seglog/seglog/offsets"

	"github.com/seglog/seglog/storage"
)

// truncateDurable is truncate, then what a successful Truncate promises:
// every record it keeps is durable (whatever the sync policy).
func (r *logRun) truncateDurable(n int) error {
	if err := r.truncate(n); err != nil {
		return err
	}
	r.m.ackAll()
	return nil
}

// truncateOlder truncates into a segment before the active one, when
// there is one: the cut falls in an older, possibly unflushed segment.
func (r *logRun) truncateOlder() error {
	segs, err := r.l.Segments()
	if err != nil {
		return err
	}
	if len(segs) < 2 {
		return r.truncateDurable(1)
	}
	old := segs[r.rng.IntN(len(segs)-1)]
	span := max(old.NextOffset-old.BaseOffset, 1)
	back := r.m.end - (old.BaseOffset + r.rng.Int64N(span))
	return r.truncateDurable(int(max(back, 1)))
}

// mixedScript appends, syncs, rolls, truncates into the active and into
// older segments, and closes and reopens the log, at random: the
// operations whose durability depends on the policy and on the
// background flusher of rolled segments.
func mixedScript(r *logRun) error {
	if err := r.append(3); err != nil {
		return err
	}
	for i := 0; i < 110; i++ {
		var err error
		switch k := r.rng.IntN(24); {
		case k < 12:
			err = r.append(4)
		case k < 14:
			err = r.syncLog()
		case k < 16:
			err = r.l.Roll()
		case k < 18:
			err = r.truncateDurable(6)
		case k < 20:
			err = r.truncateOlder()
		case k < 22:
			err = r.reopen()
		default:
			err = r.deleteBefore()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func init() {
	// Each sync policy crossed with rolls, truncations into the active
	// and into older segments, and reopen sessions.
	logWorkloads["log/mixed-never"] = func() Workload {
		return &logWorkload{sync: storage.SyncNever, seed: 7, script: mixedScript}
	}
	logWorkloads["log/mixed-interval"] = func() Workload {
		return &logWorkload{sync: storage.SyncInterval, interval: time.Millisecond, seed: 8, script: mixedScript}
	}
	logWorkloads["log/mixed-always"] = func() Workload {
		return &logWorkload{sync: storage.SyncAlways, seed: 9, script: mixedScript}
	}
}

func init() {
	// Journal rotations at a high rate: a compaction every few commits
	// (a new journal created, its header written and fsynced, the
	// snapshot renamed, the old journal removed), under both policies,
	// with reopens; the lazy mode tears the new journal's header.
	for name, sp := range map[string]struct {
		sync  offsets.SyncPolicy
		seed  uint64
		steps int
	}{"offsets/rotate-always": {offsets.SyncAlways, 13, 150}, "offsets/rotate-sync": {offsets.SyncNever, 14, 260}} {
		offsetsWorkloads[name] = func() Workload {
			return &offWorkload{sync: sp.sync, seed: sp.seed, script: func(r *offRun) error {
				for i := 0; i < sp.steps; i++ {
					var err error
					switch k := r.rng.IntN(12); {
					case k < 7:
						err = r.commit()
					case k < 8:
						err = r.commitBatch()
					case k < 9:
						err = r.syncStore()
					case k < 11:
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
		}
	}
}
