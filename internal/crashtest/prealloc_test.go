package crashtest

import "github.com/seglog/seglog/storage"

// preallocScript appends to segments of 48 KiB, syncing after about one
// append in syncEvery, with a roll, a reopen or a truncation now and then.
// A writer whose Syncs cover little (at most 32 KiB) has zeros written
// ahead of its data up to the roll size; one whose Syncs cover more has
// blocks reserved with fallocate: either way the active .log is longer
// than its data, and every crash point falls with a zero tail (whole, or
// torn in lazy mode) past the last batch, which recovery must take for
// the end of the data, never for records or for damage.
func preallocScript(steps, syncEvery int) func(r *logRun) error {
	return func(r *logRun) error {
		for i := 0; i < steps; i++ {
			var err error
			switch k := r.rng.IntN(syncEvery * 10); {
			case k < 10:
				err = r.syncLog()
			case k < 11:
				err = r.l.Roll()
			case k < 12:
				err = r.reopen()
			case k < 13:
				err = r.truncateDurable(5)
			default:
				err = r.append(4)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

const preallocSegmentBytes = 48 << 10

func init() {
	// Zeros written ahead: SyncAlways, and explicit Syncs every few
	// appends.
	logWorkloads["log/prealloc-always"] = func() Workload {
		return &logWorkload{sync: storage.SyncAlways, segBytes: preallocSegmentBytes, seed: 41, script: preallocScript(260, 50)}
	}
	logWorkloads["log/prealloc-sync"] = func() Workload {
		return &logWorkload{sync: storage.SyncNever, segBytes: preallocSegmentBytes, seed: 42, script: preallocScript(420, 4)}
	}
	// Blocks reserved with fallocate: Syncs that cover more than 32 KiB.
	logWorkloads["log/prealloc-fallocate"] = func() Workload {
		return &logWorkload{sync: storage.SyncNever, segBytes: preallocSegmentBytes, seed: 43, script: preallocScript(420, 120)}
	}
}
