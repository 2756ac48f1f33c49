package crashtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// logOptions is a log that rolls every few appends (by size and by a full
// index) and indexes often, so that crashes land in rolls, index appends
// and index trims.
func logOptions(fsys vfs.FS, sync storage.SyncPolicy) storage.Options {
	return storage.Options{FS: fsys, Sync: sync, SegmentBytes: 1024, IndexIntervalBytes: 128, MaxIndexBytes: 96}
}

// logOptionsInterval is logOptions with the interval flusher's period
// (SyncInterval; zero: the default).
func logOptionsInterval(fsys vfs.FS, sync storage.SyncPolicy, interval time.Duration) storage.Options {
	o := logOptions(fsys, sync)
	o.SyncInterval = interval
	return o
}

// recordValue is the unique value of the seq-th record a workload appends
// (10 to 160 bytes).
func recordValue(seq int) string {
	return fmt.Sprintf("v%05d-", seq) + strings.Repeat(string(rune('a'+seq%26)), (seq*37)%150)
}

// logModel is what a log must hold after a crash, from what it
// acknowledged.
type logModel struct {
	syncAlways bool
	seq        int              // records appended (values made)
	vals       map[int64]string // offset -> value of the record appended there (Append returned nil)
	acked      map[int64]bool   // offsets whose record is durable (SyncAlways append, Sync or Close returned nil)
	batches    []int64          // first offsets of the batches in vals, increasing
	end        int64            // the offset the next append gets
	// maybe are values whose operation failed: they may be in the log at
	// the given offset, or not.
	maybe map[string]int64
	// gone are values removed by an acknowledged Truncate: they never
	// come back.
	gone map[string]bool
	// ackedStart is the start offset the log acknowledged (after
	// DeleteSegmentsBefore returned nil; lowered by an acknowledged
	// truncation below it).
	ackedStart int64
	// deleteReq is the largest offset passed to DeleteSegmentsBefore:
	// acknowledged records below it may be gone.
	deleteReq int64
}

func newLogModel(syncAlways bool) *logModel {
	return &logModel{syncAlways: syncAlways, vals: map[int64]string{}, acked: map[int64]bool{}, maybe: map[string]int64{}, gone: map[string]bool{}}
}

// logRun drives a log and its model. Its methods return the first error
// of the engine (the workload stops there) or a *cleanError when the log
// disagrees with the model without any crash.
type logRun struct {
	m        *logModel
	fsys     vfs.FS
	dir      string
	sync     storage.SyncPolicy
	interval time.Duration
	segBytes int64 // SegmentBytes (zero: logOptions')
	l        *storage.Log
	rng      *rand.Rand
}

// cleanError is a disagreement found while the workload runs: a bug of
// the engine (or of the workload) on a path with no crash at all.
type cleanError struct{ msg string }

func (e *cleanError) Error() string { return "without a crash: " + e.msg }

// logOptionsSized is logOptionsInterval with segments of segBytes (zero:
// logOptions'), their indexes large enough not to roll them first.
func logOptionsSized(fsys vfs.FS, sync storage.SyncPolicy, interval time.Duration, segBytes int64) storage.Options {
	o := logOptionsInterval(fsys, sync, interval)
	if segBytes > 0 {
		o.SegmentBytes, o.MaxIndexBytes = segBytes, 12288
	}
	return o
}

func (r *logRun) open() error {
	l, err := storage.Open(r.dir, logOptionsSized(r.fsys, r.sync, r.interval, r.segBytes))
	if err != nil {
		return err
	}
	r.l = l
	if l.EndOffset() != r.m.end || l.StartOffset() < r.m.ackedStart {
		return &cleanError{fmt.Sprintf("after a clean reopen the log is [%d, %d), the model [>=%d, %d)", l.StartOffset(), l.EndOffset(), r.m.ackedStart, r.m.end)}
	}
	return nil
}

func (r *logRun) close() error {
	if r.l == nil {
		return nil
	}
	err := r.l.Close()
	r.l = nil
	if err == nil {
		r.m.ackAll()
	}
	return err
}

func (m *logModel) ackAll() {
	for o := range m.vals {
		m.acked[o] = true
	}
}

// append appends one batch of 1 to n records.
func (r *logRun) append(n int) error {
	m := r.m
	recs := make([]storage.Record, 1+r.rng.IntN(n))
	for i := range recs {
		m.seq++
		recs[i] = storage.Record{Timestamp: 1_700_000_000_000 + int64(m.seq), Value: []byte(recordValue(m.seq))}
	}
	res, err := r.l.Append(recs...)
	if err != nil {
		for i, rec := range recs {
			m.maybe[string(rec.Value)] = m.end + int64(i)
		}
		return err
	}
	if res.FirstOffset != m.end || res.LastOffset != m.end+int64(len(recs))-1 {
		return &cleanError{fmt.Sprintf("append got offsets [%d, %d], expected from %d", res.FirstOffset, res.LastOffset, m.end)}
	}
	m.batches = append(m.batches, m.end)
	for i, rec := range recs {
		m.vals[m.end+int64(i)] = string(rec.Value)
		if m.syncAlways {
			m.acked[m.end+int64(i)] = true
		}
	}
	m.end += int64(len(recs))
	return nil
}

func (r *logRun) syncLog() error {
	if err := r.l.Sync(); err != nil {
		return err
	}
	r.m.ackAll()
	return nil
}

// truncate truncates back by 1 to n offsets (not below the start).
func (r *logRun) truncate(n int) error {
	m := r.m
	start := r.l.StartOffset()
	if m.end <= start {
		return nil
	}
	at := max(start, m.end-1-int64(r.rng.IntN(n)))
	// The whole batch holding at goes.
	i, found := slices.BinarySearch(m.batches, at)
	if !found {
		i--
	}
	cut := at
	if i >= 0 {
		cut = m.batches[i]
	}
	err := r.l.Truncate(at)
	if err != nil {
		// The records from cut on may or may not be gone.
		for o := cut; o < m.end; o++ {
			delete(m.acked, o)
		}
		return err
	}
	if e := r.l.EndOffset(); e != cut {
		return &cleanError{fmt.Sprintf("Truncate(%d) left the end at %d, expected %d", at, e, cut)}
	}
	for o := cut; o < m.end; o++ {
		m.gone[m.vals[o]] = true
		delete(m.vals, o)
		delete(m.acked, o)
	}
	if i >= 0 {
		m.batches = m.batches[:i]
	}
	m.end = cut
	m.ackedStart = min(m.ackedStart, r.l.StartOffset())
	return nil
}

// deleteBefore asks for the segments below a random offset to go.
func (r *logRun) deleteBefore() error {
	start := r.l.StartOffset()
	x := start + r.rng.Int64N(r.m.end-start+1)
	r.m.deleteReq = max(r.m.deleteReq, x)
	res, err := r.l.DeleteSegmentsBefore(x)
	if err != nil {
		return err
	}
	r.m.ackedStart = max(r.m.ackedStart, res.StartOffset)
	if s := r.l.StartOffset(); s != res.StartOffset || s > x {
		return &cleanError{fmt.Sprintf("DeleteSegmentsBefore(%d) returned start %d, the log says %d", x, res.StartOffset, s)}
	}
	return nil
}

func (r *logRun) reopen() error {
	if err := r.close(); err != nil {
		return err
	}
	return r.open()
}

// check verifies a reopened log against the model: offsets dense from
// StartOffset to EndOffset; every record is the one appended at its offset
// (or one whose operation failed), never a value removed by an
// acknowledged truncation; every acknowledged record not below the
// deletion requests is there; the start offset is not below the
// acknowledged one. It returns how many acknowledged records it found.
func (m *logModel) check(l *storage.Log) (int, error) {
	s, e := l.StartOffset(), l.EndOffset()
	var errs []error
	if s < m.ackedStart {
		errs = append(errs, fmt.Errorf("start offset %d is below the acknowledged start offset %d", s, m.ackedStart))
	}
	r := l.NewReader(s)
	next := s
	checked := 0
	for r.Next() && len(errs) < 10 {
		rec := r.Record()
		o, v := rec.Offset, string(rec.Value)
		if o != next {
			errs = append(errs, fmt.Errorf("offset %d follows %d: a hole", o, next-1))
		}
		next = o + 1
		switch want, ok := m.vals[o]; {
		case ok && v == want:
			if m.acked[o] {
				checked++
			}
		case m.gone[v]:
			errs = append(errs, fmt.Errorf("offset %d holds %.12s, removed by an acknowledged Truncate: resurrected", o, v))
		case m.acked[o]:
			errs = append(errs, fmt.Errorf("offset %d holds %.12s, but %.12s was acknowledged there", o, v, want))
		default:
			if mo, ok := m.maybe[v]; !ok || mo != o {
				errs = append(errs, fmt.Errorf("offset %d holds %.12s, which was never appended there (expected %.12s)", o, v, want))
			}
		}
	}
	if err := r.Err(); err != nil {
		errs = append(errs, fmt.Errorf("reading from %d: %w", next, err))
	} else if next != e && len(errs) < 10 {
		errs = append(errs, fmt.Errorf("the reader stopped at %d, the end offset is %d", next, e))
	}
	var lost []int64
	for o := range m.acked {
		if o >= m.deleteReq && (o < s || o >= e) {
			lost = append(lost, o)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		errs = append(errs, fmt.Errorf("%d acknowledged records lost (offsets %d..%d; the log is [%d, %d), deletions asked below %d)", len(lost), lost[0], lost[len(lost)-1], s, e, m.deleteReq))
	}
	return checked, errors.Join(errs...)
}

// logWorkload is a storage.Log workload: script drives a logRun.
type logWorkload struct {
	sync     storage.SyncPolicy
	interval time.Duration // SyncInterval's period (zero: the default)
	segBytes int64         // SegmentBytes (zero: logOptions')
	seed     uint64
	script   func(r *logRun) error
	m        *logModel
}

func (w *logWorkload) Run(fsys vfs.FS, root string) error {
	w.m = newLogModel(w.sync == storage.SyncAlways)
	r := &logRun{m: w.m, fsys: fsys, dir: filepath.Join(root, "t-0"), sync: w.sync, interval: w.interval, segBytes: w.segBytes, rng: rand.New(rand.NewPCG(w.seed, 1))}
	if err := r.open(); err != nil {
		return err
	}
	err := w.script(r)
	if err == nil {
		err = r.close()
	} else if r.l != nil {
		_ = r.l.Close()
	}
	return err
}

func (w *logWorkload) Check(fsys vfs.FS, root string) (int, error) {
	l, err := storage.Open(filepath.Join(root, "t-0"), logOptionsSized(fsys, w.sync, w.interval, w.segBytes))
	if err != nil {
		return 0, fmt.Errorf("reopen: %w", err)
	}
	n, err := w.m.check(l)
	if cerr := l.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close after the check: %w", cerr)
	}
	return n, err
}

// The log workloads, by name.
var logWorkloads = map[string]func() Workload{
	// Appends acknowledged one by one (SyncAlways), with size rolls, full
	// indexes and explicit rolls.
	"log/append-always": func() Workload {
		return &logWorkload{sync: storage.SyncAlways, seed: 1, script: func(r *logRun) error {
			for i := 0; i < 80; i++ {
				if err := r.append(3); err != nil {
					return err
				}
				if i%30 == 29 {
					if err := r.l.Roll(); err != nil {
						return err
					}
				}
			}
			return nil
		}}
	},
	// Appends acknowledged by an explicit Sync every few appends.
	"log/append-sync": func() Workload {
		return &logWorkload{sync: storage.SyncNever, seed: 2, script: func(r *logRun) error {
			for i := 0; i < 90; i++ {
				if err := r.append(4); err != nil {
					return err
				}
				if r.rng.IntN(3) == 0 {
					if err := r.syncLog(); err != nil {
						return err
					}
				}
			}
			return nil
		}}
	},
	// Replica truncation, within the active segment and into older ones.
	"log/truncate": func() Workload {
		return &logWorkload{sync: storage.SyncAlways, seed: 3, script: func(r *logRun) error {
			for i := 0; i < 16; i++ {
				for j := 3 + r.rng.IntN(5); j > 0; j-- {
					if err := r.append(3); err != nil {
						return err
					}
				}
				if err := r.truncate(25); err != nil {
					return err
				}
			}
			return nil
		}}
	},
	// Retention from the front.
	"log/delete-front": func() Workload {
		return &logWorkload{sync: storage.SyncAlways, seed: 4, script: func(r *logRun) error {
			for i := 0; i < 80; i++ {
				if err := r.append(3); err != nil {
					return err
				}
				if i%9 == 8 {
					if err := r.deleteBefore(); err != nil {
						return err
					}
				}
			}
			return nil
		}}
	},
	// Clean closes and reopens between appends (explicit syncs),
	// truncations and deletions from the front.
	"log/close-reopen": func() Workload {
		return &logWorkload{sync: storage.SyncNever, seed: 5, script: func(r *logRun) error {
			// An append first: see log/reopen-before-append.
			if err := r.append(3); err != nil {
				return err
			}
			for i := 0; i < 90; i++ {
				var err error
				switch k := r.rng.IntN(20); {
				case k < 13:
					err = r.append(3)
				case k < 15:
					err = r.syncLog()
				case k < 17:
					err = r.reopen()
				case k < 18:
					err = r.truncate(12)
				case k < 19:
					err = r.l.Roll()
				default:
					err = r.deleteBefore()
				}
				if err != nil {
					return err
				}
			}
			return nil
		}}
	},
	// A new log closed (or synced) before its first append, reopened,
	// then appended to.
	"log/reopen-before-append": func() Workload {
		return &logWorkload{sync: storage.SyncAlways, seed: 6, script: func(r *logRun) error {
			if err := r.syncLog(); err != nil {
				return err
			}
			if err := r.reopen(); err != nil {
				return err
			}
			for i := 0; i < 12; i++ {
				if err := r.append(3); err != nil {
					return err
				}
			}
			return nil
		}}
	},
}
