package hardening

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs/faultfs"
)

// sweepWorkload opens a log in dir, appends with rolls and syncs,
// truncates, deletes segments from the front, appends again and closes.
// It stops at the first error and returns the step that failed, the error
// and the log (nil if Open failed or Close ran).
func sweepWorkload(fs *faultfs.FS, dir string, m *model) (step string, err error, l *storage.Log) {
	l, err = storage.Open(dir, smallLog(fs))
	if err != nil {
		return "open", err, nil
	}
	appendSome := func(tag string, n int) (string, error) {
		for i := range n {
			if err := m.appendNext(l, value(tag, i)); err != nil {
				return fmt.Sprintf("append %s-%d", tag, i), err
			}
			if i%3 == 2 {
				if err := l.Sync(); err != nil {
					return fmt.Sprintf("sync after %s-%d", tag, i), err
				}
				m.synced()
			}
		}
		return "", nil
	}
	if step, err := appendSome("a", 12); err != nil {
		return step, err, l
	}
	at := l.EndOffset() - 2
	err = l.Truncate(at)
	m.truncated(at, err)
	if err != nil {
		return "truncate", err, l
	}
	m.deleted(6)
	if _, err := l.DeleteSegmentsBefore(6); err != nil {
		return "delete segments", err, l
	}
	if step, err := appendSome("b", 3); err != nil {
		return step, err, l
	}
	if err := l.Close(); err != nil {
		return "close", err, nil
	}
	m.synced()
	return "", nil, nil
}

// sweepOnce runs the workload with the i-th filesystem call failing with
// EIO, then checks the log as described in TestFailEveryCallOnce. It
// returns whether a fault was injected and what went wrong.
func sweepOnce(base string, i, attempt int) (injected bool, problem error) {
	dir := filepath.Join(base, fmt.Sprintf("%d-%d", i, attempt))
	fs := faultfs.New(nil)
	fs.FailNth(faultfs.AllOps, i, syscall.EIO)
	m := newModel()
	step, err, l := sweepWorkload(fs, dir, m)
	fault := fs.LastInjected()
	injected = fs.Injected() > 0
	fs.Clear()
	defer func() {
		if problem != nil {
			problem = fmt.Errorf("fault %q, failed step %q (%v): %w", fault, step, err, problem)
		}
	}()
	if err != nil {
		if !injected {
			return false, fmt.Errorf("the workload failed with no fault injected")
		}
		// The error says what failed: the storage layer and the path the
		// fault hit.
		faultPath := fault[strings.LastIndexByte(fault, ' ')+1:]
		if !strings.Contains(err.Error(), "storage: ") || !strings.Contains(err.Error(), filepath.Base(faultPath)) {
			return true, fmt.Errorf("the error does not say what failed")
		}
		if !errors.Is(err, syscall.EIO) {
			return true, fmt.Errorf("the error does not wrap the injected EIO")
		}
	}
	if l != nil {
		// The log is still open: it reads back consistently, and either
		// takes appends at the end or says it needs a reopen.
		if perr := m.check(l); perr != nil {
			return injected, fmt.Errorf("open log after the fault: %w", perr)
		}
		if aerr := m.appendNext(l, value("after", 0)); aerr != nil && !errors.Is(aerr, storage.ErrFailed) {
			return injected, fmt.Errorf("append after the fault cleared: %w (want success or ErrFailed)", aerr)
		}
		_ = l.Close()
	}
	l, oerr := storage.Open(dir, smallLog(fs))
	if oerr != nil {
		return injected, fmt.Errorf("reopen: %w", oerr)
	}
	defer l.Close()
	if perr := m.check(l); perr != nil {
		return injected, fmt.Errorf("after reopen: %w", perr)
	}
	if aerr := m.appendNext(l, value("reopened", 0)); aerr != nil {
		return injected, fmt.Errorf("append after reopen: %w", aerr)
	}
	if cerr := l.Close(); cerr != nil {
		return injected, fmt.Errorf("close after reopen: %w", cerr)
	}
	return injected, nil
}

// TestFailEveryCallOnce fails each filesystem call of a storage workload
// once (EIO), i = 0, 1, 2, ... until the workload runs with nothing left to
// inject. For each i: the failing operation's error names the storage
// layer and the file; the open log reads back consistently and either
// takes an append at its end offset or refuses with ErrFailed; a reopen
// succeeds, holds every acknowledged record, has dense offsets, no
// duplicate and no record that was never appended there, and takes an
// append at its end.
func TestFailEveryCallOnce(t *testing.T) {
	base := t.TempDir()
	// A clean run counts the calls.
	fs := faultfs.New(nil)
	m := newModel()
	step, err, _ := sweepWorkload(fs, filepath.Join(base, "clean"), m)
	require.NoError(t, err, step)
	calls := fs.Calls(faultfs.AllOps)
	require.Greater(t, calls, 100)
	t.Logf("the workload makes %d filesystem calls", calls)

	// The runs are independent (one directory and one FS each) and wait on
	// fsync more than on the CPU: run a few at once.
	problems := make([]error, calls+1)
	injected := make([]bool, calls+1)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				// A roll leaves its fsync (and a recovery-point write)
				// to a goroutine of the log, so the count of calls can
				// differ by a few between runs: a run that made fewer
				// than i calls (or more than the clean run's) is run
				// again: every call must still be hit, and every run's
				// problems count.
				for attempt := 0; attempt < 3; attempt++ {
					injected[i], problems[i] = sweepOnce(base, i, attempt)
					if injected[i] == (i < calls) || problems[i] != nil {
						break
					}
				}
			}
		}()
	}
	for i := 0; i <= calls; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, p := range problems {
		assert.NoError(t, p, "call %d failing", i)
	}
	for i := range calls {
		assert.True(t, injected[i], "call %d: the workload is deterministic, a fault must hit it", i)
	}
	assert.False(t, injected[calls], "after the last call there is nothing left to inject")
}
