package crashtest

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// The replication state of a log under power cuts: idempotent producers
// (their state snapshotted at rolls and Close, rebuilt from the batches
// after the snapshot), leader epochs (leader-epoch-checkpoint, written
// before the first batch of an epoch) and the high watermark
// (high-watermark, written by Sync, rolls, Truncate and Close).

// producerModel is what one idempotent producer sent.
type producerModel struct {
	epoch int16
	seq   int32
	// last is its last acknowledged batch, as sent, and the offsets it
	// got; nil when the producer's last attempt failed or was truncated
	// away (a retry may then be new data).
	last      []byte
	lastFirst int64
}

// replModel is the replication state a log acknowledged.
type replModel struct {
	producers []*producerModel
	epoch     int32 // the latest epoch SetLeaderEpoch acknowledged (-1: none)
	// epochOf maps an offset holding an acknowledged record to the epoch
	// it was appended in.
	epochOf map[int64]int32
}

// appendProducer appends a batch of 1 to 3 records from producer p.
func (r *logRun) appendProducer(rm *replModel, p int) error {
	m, pm := r.m, rm.producers[p]
	recs := make([]segment.Record, 1+r.rng.IntN(3))
	for i := range recs {
		m.seq++
		recs[i] = segment.Record{Timestamp: 1_700_000_000_000 + int64(m.seq), Value: []byte(recordValue(m.seq))}
	}
	batch, err := segment.AppendBatch(nil, recs, segment.EncodeOptions{ProducerID: int64(p + 1), ProducerEpoch: pm.epoch, BaseSequence: pm.seq, LeaderEpoch: rm.epoch})
	if err != nil {
		return err
	}
	pm.last = nil
	res, err := r.l.AppendBatch(batch)
	if err != nil {
		for i, rec := range recs {
			m.maybe[string(rec.Value)] = m.end + int64(i)
		}
		return err
	}
	if res.Duplicate || res.FirstOffset != m.end {
		return &cleanError{fmt.Sprintf("producer %d: append got offset %d (duplicate %v), expected %d", p+1, res.FirstOffset, res.Duplicate, m.end)}
	}
	m.batches = append(m.batches, m.end)
	for i, rec := range recs {
		m.vals[m.end+int64(i)] = string(rec.Value)
		m.acked[m.end+int64(i)] = true
		rm.epochOf[m.end+int64(i)] = rm.epoch
	}
	pm.last, pm.lastFirst = batch, m.end
	pm.seq += int32(len(recs))
	m.end += int64(len(recs))
	return nil
}

// newEpoch makes the log the leader's in the next epoch.
func (r *logRun) newEpoch(rm *replModel) error {
	if err := r.l.SetLeaderEpoch(rm.epoch + 1); err != nil {
		return err
	}
	rm.epoch++
	return nil
}

// truncateRepl truncates (truncateDurable) and forgets what the cut
// removed: producers whose last batch went start a new producer epoch.
func (r *logRun) truncateRepl(rm *replModel, n int) error {
	err := r.truncateDurable(n)
	for _, pm := range rm.producers {
		if pm.last == nil || pm.lastFirst >= r.m.end || err != nil {
			pm.last = nil
			pm.epoch++
			pm.seq = 0
		}
	}
	for o := range rm.epochOf {
		if _, ok := r.m.vals[o]; !ok {
			delete(rm.epochOf, o)
		}
	}
	return err
}

// checkRepl checks a reopened log's replication state against what it
// acknowledged: the high watermark within the log; for every epoch that
// has acknowledged records, EndOffsetForEpoch names that epoch and ends
// after them (a follower asking would not cut them); and a retry of each
// producer's last acknowledged batch is a duplicate with its offsets.
func (rm *replModel) check(l *storage.Log, acked map[int64]bool) error {
	var errs []error
	if hw := l.HighWatermark(); hw < l.StartOffset() || hw > l.EndOffset() {
		errs = append(errs, fmt.Errorf("high watermark %d outside [%d, %d]", hw, l.StartOffset(), l.EndOffset()))
	}
	last := map[int32]int64{} // epoch -> its last acknowledged offset
	for o, e := range rm.epochOf {
		if e >= 0 && acked[o] && o >= l.StartOffset() {
			last[e] = max(last[e], o)
		}
	}
	for e, o := range last {
		found, end, err := l.EndOffsetForEpoch(e)
		if err != nil {
			errs = append(errs, err)
		} else if found != e || end <= o {
			errs = append(errs, fmt.Errorf("EndOffsetForEpoch(%d) = epoch %d ending at %d, but offset %d was acknowledged in epoch %d", e, found, end, o, e))
		}
	}
	for p, pm := range rm.producers {
		if pm.last == nil || pm.lastFirst < l.StartOffset() {
			continue
		}
		res, err := l.AppendBatch(pm.last)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("producer %d: retrying its last acknowledged batch: %w", p+1, err))
		case !res.Duplicate || res.FirstOffset != pm.lastFirst:
			errs = append(errs, fmt.Errorf("producer %d: its last acknowledged batch (offset %d) retried got offset %d, duplicate %v: written twice", p+1, pm.lastFirst, res.FirstOffset, res.Duplicate))
		}
	}
	return errors.Join(errs...)
}

// replWorkload is a logWorkload whose check also checks the replication
// state.
type replWorkload struct {
	logWorkload
	rm *replModel
}

func (w *replWorkload) Check(fsys vfs.FS, root string) (int, error) {
	n, err := w.logWorkload.Check(fsys, root)
	if err != nil {
		return n, err
	}
	l, err := storage.Open(filepath.Join(root, "t-0"), logOptionsSized(fsys, w.sync, w.interval, w.segBytes))
	if err != nil {
		return n, fmt.Errorf("reopen: %w", err)
	}
	err = w.rm.check(l, w.m.acked)
	if cerr := l.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close after the check: %w", cerr)
	}
	return n, err
}

func init() {
	// Three idempotent producers appending (SyncAlways) under leader
	// epochs that move on, with the high watermark set and synced,
	// rolls, truncations and reopens.
	logWorkloads["log/replication"] = func() Workload {
		w := &replWorkload{rm: &replModel{epoch: -1, epochOf: map[int64]int32{}}}
		for range 3 {
			w.rm.producers = append(w.rm.producers, &producerModel{})
		}
		w.logWorkload = logWorkload{sync: storage.SyncAlways, seed: 51, script: func(r *logRun) error {
			rm := w.rm
			if err := r.newEpoch(rm); err != nil {
				return err
			}
			for i := 0; i < 140; i++ {
				var err error
				switch k := r.rng.IntN(30); {
				case k < 20:
					err = r.appendProducer(rm, r.rng.IntN(len(rm.producers)))
				case k < 22:
					err = r.newEpoch(rm)
				case k < 25:
					if err = r.l.SetHighWatermark(r.l.StartOffset() + r.rng.Int64N(r.l.EndOffset()-r.l.StartOffset()+1)); err == nil {
						err = r.syncLog()
					}
				case k < 26:
					err = r.l.Roll()
				case k < 28:
					err = r.truncateRepl(rm, 6)
				default:
					// The epoch is the leader's state in memory: set again.
					if err = r.reopen(); err == nil {
						err = r.l.SetLeaderEpoch(rm.epoch)
					}
				}
				if err != nil {
					return err
				}
			}
			return nil
		}}
		return w
	}
}
