// Package crashtest holds seglog's power-loss tests: workloads of storage,
// offsets and retention run over vfs/crashfs, which forgets
// whatever was not fsynced when it simulates a crash, and are checked
// after a reopen against what the engine acknowledged. A SIGKILL keeps
// the page cache, so only these tests catch a missing fsync.
//
// The harness (this file) is small: a Workload runs a deterministic
// sequence of engine operations, recording what was acknowledged, and
// checks a reopened engine against it. Sweep runs it once without a crash
// to count the disk-changing operations, then once per crash point N:
// operation N and every later one fail (the power went), the disk is
// rebuilt from what was durable (crashfs.Crash), some points also crash
// again during the recovery that follows, and a last reopen is checked.
//
// The tests (the _test.go files) define the workloads and their
// invariants, and say which cases are known to fail. A short sweep (a
// sample of the crash points) runs with go test; SEGLOG_CRASHTEST=long
// (make crashtest) tries every crash point of every workload, in strict
// and in lazy mode, and prints how many points and records it checked.
package crashtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/crashfs"
)

// Workload is one crash test. A Workload value is used for one crash
// point: Sweep makes a new one for each.
type Workload interface {
	// Run opens the engine under root through fsys and runs the
	// workload, recording what the engine acknowledged, until it ends or
	// an operation fails; it returns the first error. It closes what it
	// opened (a crashed engine's Close fails, which is fine).
	Run(fsys vfs.FS, root string) error
	// Check reopens the engine under root through fsys after a crash,
	// checks it against what Run acknowledged and closes it. It returns
	// how many acknowledged items (records, commits) it checked, and an
	// error for a broken invariant or a failed operation. It may run
	// several times after one Run (crashes during recovery).
	Check(fsys vfs.FS, root string) (checked int, err error)
}

// Config describes a sweep.
type Config struct {
	// Name names the workload in results and failures.
	Name string
	// New makes a fresh workload.
	New func() Workload
	// Mode is the crash mode (strict or lazy); lazy crash points are
	// seeded by the point number.
	Mode crashfs.Mode
	// Points is how many crash points to try, spread evenly over the
	// workload's operations; 0 tries every one.
	Points int
	// RecoveryEvery makes every RecoveryEvery-th crash point also crash
	// during recovery (0: never), once or twice, at an operation drawn
	// from [1, RecoveryOps] (default 40).
	RecoveryEvery int
	RecoveryOps   int
	// Dir is a scratch directory (emptied and reused for every point).
	Dir string
	// MaxFailures stops the sweep after this many failing points
	// (default 3).
	MaxFailures int
}

// Failure is a crash point after which a check failed.
type Failure struct {
	// Point is the operation number at which the workload crashed
	// (TotalOps+1: after the workload ended).
	Point int64
	// Recovery lists the operation numbers at which the recoveries after
	// it crashed, in order.
	Recovery []int64
	// Err is what the check found.
	Err error
	// History is the workload's last operations before the crash.
	History []string
	// Report is what survived the (first) crash.
	Report crashfs.Report
}

func (f Failure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "crash at operation %d", f.Point)
	if len(f.Recovery) > 0 {
		fmt.Fprintf(&b, ", then during recovery at operations %v", f.Recovery)
	}
	fmt.Fprintf(&b, ": %v\n  last operations before the crash:\n", f.Err)
	for _, h := range f.History {
		fmt.Fprintf(&b, "    %s\n", h)
	}
	b.WriteString("  " + strings.ReplaceAll(strings.TrimRight(f.Report.String(), "\n"), "\n", "\n  "))
	return b.String()
}

// Result is what a sweep covered and found.
type Result struct {
	Name            string
	Mode            crashfs.Mode
	TotalOps        int64 // disk-changing operations of a run without crash
	Points          int   // crash points tried
	RecoveryCrashes int   // crashes during recovery
	Checked         int   // acknowledged items checked, over all reopens
	Failures        []Failure
	Elapsed         time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("%s (%s): %d crash points of %d operations, %d crashes during recovery, %d acknowledged items checked, %d failing points, %v",
		r.Name, r.Mode, r.Points, r.TotalOps+1, r.RecoveryCrashes, r.Checked, len(r.Failures), r.Elapsed.Round(time.Millisecond))
}

// Sweep runs the workload at crash points (see the package doc). It
// returns an error when the workload fails without a crash: the harness
// or the workload is wrong, not the engine's durability.
func Sweep(cfg Config) (Result, error) {
	if cfg.RecoveryOps <= 0 {
		cfg.RecoveryOps = 40
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = 3
	}
	res := Result{Name: cfg.Name, Mode: cfg.Mode}
	began := time.Now()
	defer func() { res.Elapsed = time.Since(began) }()

	// A run without a crash counts the operations.
	if err := emptyDir(cfg.Dir); err != nil {
		return res, err
	}
	fsys, err := crashfs.New(cfg.Dir, crashfs.Options{})
	if err != nil {
		return res, err
	}
	if err := cfg.New().Run(fsys, cfg.Dir); err != nil {
		return res, fmt.Errorf("%s: the workload fails without a crash: %w", cfg.Name, err)
	}
	res.TotalOps = fsys.Ops()

	for _, point := range points(res.TotalOps+1, cfg.Points) {
		f, checked, rcrashes, err := crashAt(cfg, point)
		if err != nil {
			return res, err
		}
		res.Points++
		res.Checked += checked
		res.RecoveryCrashes += rcrashes
		if f != nil {
			res.Failures = append(res.Failures, *f)
			if len(res.Failures) >= cfg.MaxFailures {
				break
			}
		}
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// points returns n crash points spread over [1, last] (all when n is 0
// or at least last), always including the last (a crash after the
// workload ended).
func points(last int64, n int) []int64 {
	var out []int64
	if n <= 0 || int64(n) >= last {
		for p := int64(1); p <= last; p++ {
			out = append(out, p)
		}
		return out
	}
	for i := 0; i < n-1; i++ {
		out = append(out, 1+int64(i)*(last-1)/int64(n-1))
	}
	return append(out, last)
}

// crashAt runs one crash point: the workload crashes at operation point,
// recoveries may crash too, and the last reopen is checked.
func crashAt(cfg Config, point int64) (f *Failure, checked, rcrashes int, err error) {
	if err := emptyDir(cfg.Dir); err != nil {
		return nil, 0, 0, err
	}
	fsys, err := crashfs.New(cfg.Dir, crashfs.Options{Mode: cfg.Mode, Seed: uint64(point), CrashAt: point})
	if err != nil {
		return nil, 0, 0, err
	}
	w := cfg.New()
	runErr := w.Run(fsys, cfg.Dir)
	if !fsys.Crashed() {
		if runErr != nil {
			return nil, 0, 0, fmt.Errorf("%s: crash point %d: the workload failed without a crash: %w", cfg.Name, point, runErr)
		}
		fsys.CrashNow() // the point after the last operation
	}
	fail := &Failure{Point: point, History: fsys.History()}
	if fail.Report, err = fsys.Crash(); err != nil {
		return nil, 0, 0, err
	}

	rng := rand.New(rand.NewPCG(uint64(point), 0x7265636f76))
	depth := 0
	if cfg.RecoveryEvery > 0 && point%int64(cfg.RecoveryEvery) == 0 {
		depth = 1 + rng.IntN(2)
	}
	for i := 0; i < depth; i++ {
		rc := 1 + int64(rng.IntN(cfg.RecoveryOps))
		rfs, err := crashfs.New(cfg.Dir, crashfs.Options{Mode: cfg.Mode, Seed: uint64(point)<<8 | uint64(i), CrashAt: rc})
		if err != nil {
			return nil, 0, 0, err
		}
		n, cerr := w.Check(rfs, cfg.Dir)
		if !rfs.Crashed() {
			// The recovery finished before its crash point: this reopen
			// is a check like the last one.
			checked += n
			if cerr != nil {
				fail.Err = cerr
				return fail, checked, rcrashes, nil
			}
			rfs.CrashNow()
		} else {
			fail.Recovery = append(fail.Recovery, rc)
			rcrashes++
		}
		if _, err := rfs.Crash(); err != nil {
			return nil, 0, 0, err
		}
	}

	last, err := crashfs.New(cfg.Dir, crashfs.Options{})
	if err != nil {
		return nil, 0, 0, err
	}
	n, cerr := w.Check(last, cfg.Dir)
	checked += n
	if cerr != nil {
		fail.Err = cerr
		return fail, checked, rcrashes, nil
	}
	return nil, checked, rcrashes, nil
}

// emptyDir creates dir, or removes everything in it.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}
