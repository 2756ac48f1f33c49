package storage

import (
	"errors"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hookFS calls hook before a file's Datasync or Truncate, before an
// OpenFile (op "create" when it creates, else "open") and before an Lstat;
// a non-nil error from hook is returned instead.
type hookFS struct {
	vfs.FS
	mu   sync.Mutex
	hook func(op, name string) error
}

func (h *hookFS) call(op, name string) error {
	h.mu.Lock()
	fn := h.hook
	h.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(op, name)
}

func (h *hookFS) setHook(fn func(op, name string) error) {
	h.mu.Lock()
	h.hook = fn
	h.mu.Unlock()
}

func (h *hookFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	op := "open"
	if flag&os.O_CREATE != 0 {
		op = "create"
	}
	if err := h.call(op, name); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &hookFile{File: f, fs: h}, nil
}

func (h *hookFS) Lstat(name string) (os.FileInfo, error) {
	if err := h.call("lstat", name); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: name, Err: err}
	}
	return h.FS.Lstat(name)
}

type hookFile struct {
	vfs.File
	fs *hookFS
}

// Rename calls the hook after the rename, with op "renamed".
func (h *hookFS) Rename(oldpath, newpath string) error {
	if err := h.FS.Rename(oldpath, newpath); err != nil {
		return err
	}
	return h.call("renamed", newpath)
}

func (f *hookFile) Datasync() error {
	if err := f.fs.call("datasync", f.Name()); err != nil {
		return err
	}
	return f.File.Datasync()
}

func (f *hookFile) Truncate(size int64) error {
	if err := f.fs.call("truncate", f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// blockOnce returns a hook that blocks the first op on a path containing
// sub until release is closed, signalling entered.
func blockOnce(op, sub string, entered chan<- struct{}, release <-chan struct{}) func(string, string) error {
	var once sync.Once
	return func(o, name string) error {
		if o == op && strings.Contains(name, sub) {
			once.Do(func() {
				entered <- struct{}{}
				<-release
			})
		}
		return nil
	}
}

// Rolls that failed to create the next segment, then a Truncate that
// deleted that segment, must leave no entry behind in the rolled segments
// the flusher owes work: with stale entries of higher bases in front of
// the segment truncated into, the flusher dropped them one by one and
// checkpointed with a stale base as the floor, a recovery point at the
// end of a segment still unsealed (its full-size index then mapped by a
// follower as sealed, which faulted once trimmed). The recovery point
// never passes an unsealed segment; the floor is the lowest pending base.
func TestStaleRollPendingDoesNotRaiseFloor(t *testing.T) {
	dir := t.TempDir()
	hfs := &hookFS{FS: vfs.Default}
	opts := rollOpts()
	opts.FS = hfs
	w := openLog(t, dir, opts)

	// S0 [0,50), sealed and durable (nothing left to flush at its roll).
	fill(t, w, 50, 5)
	require.NoError(t, w.Sync())
	require.NoError(t, w.Roll())
	s0 := w.segments()[0]

	// S1 [50,100): two rolls fail to create the next segment (a full
	// disk, EMFILE...): S1 stays active and is registered twice.
	fill(t, w, 50, 5)
	hfs.setHook(func(op, name string) error {
		if op == "create" && strings.Contains(name, "00000000000000000100.") {
			return syscall.EMFILE
		}
		return nil
	})
	require.Error(t, w.Roll())
	require.Error(t, w.Roll())
	hfs.setHook(nil)
	w.roll.mu.Lock()
	assert.Len(t, w.roll.pending, 1, "S1 recorded once")
	w.roll.mu.Unlock()
	require.Nil(t, w.failure(), "a failed create does not fail the log")

	// A replica truncates into S0: S1 is deleted, its two entries stay.
	require.NoError(t, w.Truncate(30))
	require.Equal(t, s0, w.active())
	w.roll.mu.Lock()
	assert.Empty(t, w.roll.pending, "the truncation dropped S1's entry")
	w.roll.mu.Unlock()
	fill(t, w, 10, 5) // S0 now [0,40)

	// A Sync in flight across S0's roll (its fdatasync of S0 as the
	// active segment): the roll leaves S0 unsealed, then the Sync raises
	// flushed to 40.
	entered, release := make(chan struct{}, 1), make(chan struct{})
	hfs.setHook(blockOnce("datasync", "00000000000000000000.log", entered, release))
	synced := make(chan error, 1)
	go func() { synced <- w.Sync() }()
	<-entered
	require.NoError(t, w.Roll()) // background: flushed 30 < end 40
	// Hold the flusher as it starts sealing S0 (the cut of its .log's
	// tail): every checkpoint it wrote before is on disk then.
	entered2, release2 := make(chan struct{}, 1), make(chan struct{})
	block := blockOnce("truncate", "00000000000000000000.log", entered2, release2)
	var highest atomic.Int64 // the highest recovery point written before S0's seal
	highest.Store(-1)
	hfs.setHook(func(op, name string) error {
		if op == "renamed" && strings.HasSuffix(name, recoveryPointFile) {
			if rp, ok, err := readCheckpoint(vfs.Default, dir, recoveryPointFile); err == nil && ok {
				highest.Store(max(highest.Load(), rp))
			}
		}
		return block(op, name)
	})
	close(release)
	require.NoError(t, <-synced)
	select {
	case <-entered2:
	case <-time.After(10 * time.Second):
		t.Fatal("the flusher did not start sealing S0")
	}

	rp, ok, err := readCheckpoint(vfs.Default, dir, recoveryPointFile)
	require.NoError(t, err)
	require.True(t, ok)
	idx := indexFileSize(t, dir, 0)
	t.Logf("recovery point %d (highest written %d); S0 ends at %d, index file %d bytes", rp, highest.Load(), s0.NextOffset(), idx)
	assert.Less(t, highest.Load(), s0.NextOffset(), "a recovery point written past unsealed S0")
	assert.False(t, rp >= s0.NextOffset() && idx == int64(opts.MaxIndexBytes),
		"recovery point %d is at/past the end %d of segment 0, which is still unsealed (index %d bytes)", rp, s0.NextOffset(), idx)

	// Consequence: a follower opened now takes S0 for sealed and maps
	// its full-size index, which the writer then trims.
	r := openReadOnly(t, dir, rollOpts())
	require.Equal(t, int64(40), readAll(t, r, 0))
	close(release2)
	hfs.setHook(nil)
	waitRollFlushed(t, w)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("follower faulted reading segment 0 after the writer sealed it: %v\n%s", p, firstFrames(debug.Stack()))
			}
		}()
		for off := int64(0); off < 40; off += 3 {
			_, _, err := r.ReadRecord(nil, off)
			if err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
				t.Errorf("offset %d: %v", off, err)
				break
			}
		}
	}()
}
