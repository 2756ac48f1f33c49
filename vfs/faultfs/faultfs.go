// Package faultfs is a vfs.FS that injects faults into another FS (usually
// vfs.Default), for tests: fail the Nth call of an operation, or every call,
// optionally only for paths that contain a substring, with any error
// (syscall.EIO, syscall.ENOSPC, ...) or as a short write (half the buffer
// reaches the file, then ENOSPC). It counts calls per operation so that a
// test can sweep "fail the i-th call, i = 0, 1, 2, ..." until its workload
// runs with no fault left to inject (pebble's errorfs does the same).
//
//	fs := faultfs.New(vfs.Default)
//	for i := 0; ; i++ {
//		fs.Reset()
//		fs.Add(faultfs.Rule{Ops: faultfs.AllOps, Nth: i, Err: syscall.EIO})
//		runWorkload(fs)
//		if fs.Injected() == 0 {
//			break // every call has failed once
//		}
//	}
//
// Files it returns wrap the real files: OSFile returns the real *os.File so
// that memory maps and sendfile work (writes through a map bypass the
// faults, as they bypass the kernel's write path). Errors are *os.PathError
// or *os.LinkError wrapping the rule's error, so errors.Is(err,
// syscall.ENOSPC) works as it does with the os package, and the message
// names the operation and the path. An FS is safe for concurrent use.
package faultfs

import (
	"errors"
	"math/bits"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/seglog/seglog/vfs"
)

// Op is a kind of filesystem call. Ops are bits: a Rule matches a set.
type Op uint32

// The kinds of call.
const (
	// OpOpen is OpenFile of a file that exists (or without O_CREATE).
	OpOpen Op = 1 << iota
	// OpCreate is OpenFile with O_CREATE of a file that does not exist:
	// the call that needs a new inode and directory entry.
	OpCreate
	OpRead     // File.Read, File.ReadAt
	OpWrite    // File.Write
	OpWriteAt  // File.WriteAt
	OpSeek     // File.Seek
	OpSync     // File.Sync
	OpAllocate // File.Allocate
	OpTruncate // File.Truncate
	OpStat     // File.Stat
	OpClose    // File.Close
	OpRename   // FS.Rename
	OpRemove   // FS.Remove, FS.RemoveAll
	OpSyncDir  // FS.SyncDir
	OpMkdir    // FS.MkdirAll of a path that does not exist (of one that does: OpLstat)
	OpReadDir  // FS.ReadDir
	OpLstat    // FS.Lstat

	numOps = iota
)

// Useful sets of ops.
const (
	// AllOps is every kind of call.
	AllOps Op = 1<<numOps - 1
	// Writes are the calls that change files or directories.
	Writes = OpCreate | OpWrite | OpWriteAt | OpSync | OpAllocate | OpTruncate | OpRename | OpRemove | OpSyncDir | OpMkdir
	// NeedSpace are the calls that fail on a full disk: creating files and
	// directories, writing and reserving blocks. (Removing, renaming over
	// an existing name, fsync of written data, shrinking and opening
	// existing files do not need free blocks; tests that want ENOSPC from
	// fsync add a rule for OpSync.)
	NeedSpace = OpCreate | OpMkdir | OpWrite | OpWriteAt | OpAllocate
)

var opNames = [numOps]string{"open", "create", "read", "write", "writeat", "seek", "sync", "allocate", "truncate", "stat", "close", "rename", "remove", "syncdir", "mkdir", "readdir", "lstat"}

// String names the op (or the ops, joined by |).
func (o Op) String() string {
	var parts []string
	for i := range numOps {
		if o&(1<<i) != 0 {
			parts = append(parts, opNames[i])
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Rule says which calls fail and how.
type Rule struct {
	// Ops is the set of call kinds the rule matches; 0 means AllOps.
	Ops Op
	// Path, when not empty, restricts the rule to calls whose path (or
	// either path of a rename) contains it.
	Path string
	// Nth is the matching call (counted from 0, from when the rule was
	// added) that fails first.
	Nth int
	// Every makes every matching call from the Nth on fail; otherwise
	// only the Nth fails.
	Every bool
	// Err is the error; nil means syscall.EIO.
	Err error
	// ShortWrite makes a matching Write or WriteAt write the first half
	// of its buffer to the file and then fail with syscall.ENOSPC (Err is
	// ignored for them). Other matching calls fail with Err.
	ShortWrite bool
	// Noop makes a matching call that returns only an error (sync,
	// syncdir, allocate, truncate, rename, remove, mkdir, write) succeed
	// without reaching the wrapped FS: for example, fsyncs skipped to make
	// a test that does not test durability fast. Calls that return
	// something else (open, read, stat, readdir) run as usual. Err and
	// ShortWrite are ignored; Noop calls are not counted by Injected.
	Noop bool
}

type rule struct {
	Rule
	seen int // matching calls so far
}

// FS injects faults into the FS it wraps.
type FS struct {
	inner vfs.FS

	mu       sync.Mutex // guards rules, injected, last
	rules    []*rule
	injected int
	last     string // "op path" of the last injected fault

	calls [numOps]atomic.Int64
}

var _ vfs.FS = (*FS)(nil)

// New returns an FS over inner (vfs.Default when nil) with no rules.
func New(inner vfs.FS) *FS {
	if inner == nil {
		inner = vfs.Default
	}
	return &FS{inner: inner}
}

// Add adds a rule. Rules are checked in the order they were added; the
// first whose turn it is decides (every matching rule counts the call).
func (fs *FS) Add(r Rule) {
	if r.Ops == 0 {
		r.Ops = AllOps
	}
	if r.Err == nil {
		r.Err = syscall.EIO
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.rules = append(fs.rules, &rule{Rule: r})
}

// FailNth fails the nth call (from now, counted from 0) of any op in ops
// with err (syscall.EIO when nil).
func (fs *FS) FailNth(ops Op, n int, err error) { fs.Add(Rule{Ops: ops, Nth: n, Err: err}) }

// FailAll fails every call of any op in ops whose path contains path,
// with err (syscall.EIO when nil).
func (fs *FS) FailAll(ops Op, path string, err error) {
	fs.Add(Rule{Ops: ops, Path: path, Every: true, Err: err})
}

// Clear removes every rule; counters and the injected count stay.
func (fs *FS) Clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.rules = nil
}

// Reset removes every rule and zeroes the call counters and the injected
// count.
func (fs *FS) Reset() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.rules = nil
	fs.injected = 0
	fs.last = ""
	for i := range fs.calls {
		fs.calls[i].Store(0)
	}
}

// Injected returns how many faults (Noop rules excluded) were injected
// since the last Reset.
func (fs *FS) Injected() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.injected
}

// LastInjected describes the last injected fault as "op path" ("" when
// none), for test messages.
func (fs *FS) LastInjected() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.last
}

// Calls returns how many calls of any op in ops were made since the last
// Reset (failed ones included).
func (fs *FS) Calls(ops Op) int {
	n := 0
	for i := range numOps {
		if ops&(1<<i) != 0 {
			n += int(fs.calls[i].Load())
		}
	}
	return n
}

type verdict int

const (
	pass verdict = iota
	fail
	noop
	short
)

// check counts a call and decides its fate.
func (fs *FS) check(op Op, paths ...string) (verdict, error) {
	fs.calls[bits.TrailingZeros32(uint32(op))].Add(1)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	decided := pass
	var err error
	for _, r := range fs.rules {
		if r.Ops&op == 0 || !matchPath(r.Path, paths) {
			continue
		}
		r.seen++
		if decided != pass {
			continue
		}
		n := r.seen - 1
		if n != r.Nth && !(r.Every && n > r.Nth) {
			continue
		}
		switch {
		case r.Noop:
			decided = noop
		case r.ShortWrite && (op == OpWrite || op == OpWriteAt):
			decided, err = short, syscall.ENOSPC
		default:
			decided, err = fail, r.Err
		}
		if decided != noop {
			fs.injected++
			fs.last = op.String() + " " + strings.Join(paths, " ")
		}
	}
	return decided, err
}

func matchPath(sub string, paths []string) bool {
	if sub == "" {
		return true
	}
	for _, p := range paths {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

func pathErr(op, path string, err error) error {
	return &os.PathError{Op: op + " (injected)", Path: path, Err: err}
}

// OpenFile implements vfs.FS. An open with O_CREATE of a missing file is
// OpCreate; any other open is OpOpen.
func (fs *FS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	op := OpOpen
	if flag&os.O_CREATE != 0 {
		if _, err := fs.inner.Lstat(name); errors.Is(err, os.ErrNotExist) {
			op = OpCreate
		}
	}
	switch v, err := fs.check(op, name); v {
	case fail, short:
		return nil, pathErr(op.String(), name, err)
	}
	f, err := fs.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{fs: fs, f: f}, nil
}

// simple runs a call that has no result but an error.
func (fs *FS) simple(op Op, name string, call func() error) error {
	switch v, err := fs.check(op, name); v {
	case fail, short:
		return pathErr(op.String(), name, err)
	case noop:
		return nil
	}
	return call()
}

// Remove implements vfs.FS.
func (fs *FS) Remove(name string) error {
	return fs.simple(OpRemove, name, func() error { return fs.inner.Remove(name) })
}

// RemoveAll implements vfs.FS.
func (fs *FS) RemoveAll(name string) error {
	return fs.simple(OpRemove, name, func() error { return fs.inner.RemoveAll(name) })
}

// Rename implements vfs.FS.
func (fs *FS) Rename(oldpath, newpath string) error {
	switch v, err := fs.check(OpRename, oldpath, newpath); v {
	case fail, short:
		return &os.LinkError{Op: "rename (injected)", Old: oldpath, New: newpath, Err: err}
	case noop:
		return nil
	}
	return fs.inner.Rename(oldpath, newpath)
}

// MkdirAll implements vfs.FS. On a path that exists it creates nothing
// (and needs no space): it counts as OpLstat.
func (fs *FS) MkdirAll(path string, perm os.FileMode) error {
	op := OpMkdir
	if _, err := fs.inner.Lstat(path); err == nil {
		op = OpLstat
	}
	return fs.simple(op, path, func() error { return fs.inner.MkdirAll(path, perm) })
}

// ReadDir implements vfs.FS.
func (fs *FS) ReadDir(name string) ([]os.DirEntry, error) {
	if v, err := fs.check(OpReadDir, name); v == fail || v == short {
		return nil, pathErr("readdir", name, err)
	}
	return fs.inner.ReadDir(name)
}

// Lstat implements vfs.FS.
func (fs *FS) Lstat(name string) (os.FileInfo, error) {
	if v, err := fs.check(OpLstat, name); v == fail || v == short {
		return nil, pathErr("lstat", name, err)
	}
	return fs.inner.Lstat(name)
}

// SyncDir implements vfs.FS.
func (fs *FS) SyncDir(dir string) error {
	return fs.simple(OpSyncDir, dir, func() error { return fs.inner.SyncDir(dir) })
}

// file wraps an open file of the inner FS.
type file struct {
	fs *FS
	f  vfs.File
}

var _ vfs.File = (*file)(nil)

func (f *file) Read(p []byte) (int, error) {
	if v, err := f.fs.check(OpRead, f.f.Name()); v == fail || v == short {
		return 0, pathErr("read", f.f.Name(), err)
	}
	return f.f.Read(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if v, err := f.fs.check(OpRead, f.f.Name()); v == fail || v == short {
		return 0, pathErr("read", f.f.Name(), err)
	}
	return f.f.ReadAt(p, off)
}

func (f *file) Write(p []byte) (int, error) {
	switch v, err := f.fs.check(OpWrite, f.f.Name()); v {
	case fail:
		return 0, pathErr("write", f.f.Name(), err)
	case short:
		n, werr := f.f.Write(p[:len(p)/2])
		if werr != nil {
			return n, werr
		}
		return n, pathErr("write", f.f.Name(), err)
	case noop:
		return len(p), nil
	}
	return f.f.Write(p)
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	switch v, err := f.fs.check(OpWriteAt, f.f.Name()); v {
	case fail:
		return 0, pathErr("write", f.f.Name(), err)
	case short:
		n, werr := f.f.WriteAt(p[:len(p)/2], off)
		if werr != nil {
			return n, werr
		}
		return n, pathErr("write", f.f.Name(), err)
	case noop:
		return len(p), nil
	}
	return f.f.WriteAt(p, off)
}

func (f *file) Seek(offset int64, whence int) (int64, error) {
	if v, err := f.fs.check(OpSeek, f.f.Name()); v == fail || v == short {
		return 0, pathErr("seek", f.f.Name(), err)
	}
	return f.f.Seek(offset, whence)
}

// Close closes the real file even when a fault is injected (as close(2)
// does: the descriptor is released whatever the error).
func (f *file) Close() error {
	v, ierr := f.fs.check(OpClose, f.f.Name())
	err := f.f.Close()
	if v == fail || v == short {
		return pathErr("close", f.f.Name(), ierr)
	}
	return err
}

func (f *file) Sync() error {
	return f.fs.simple(OpSync, f.f.Name(), f.f.Sync)
}

// Datasync counts and fails as OpSync.
func (f *file) Datasync() error {
	return f.fs.simple(OpSync, f.f.Name(), f.f.Datasync)
}

func (f *file) Truncate(size int64) error {
	return f.fs.simple(OpTruncate, f.f.Name(), func() error { return f.f.Truncate(size) })
}

func (f *file) Allocate(off, n int64) error {
	return f.fs.simple(OpAllocate, f.f.Name(), func() error { return f.f.Allocate(off, n) })
}

func (f *file) Stat() (os.FileInfo, error) {
	if v, err := f.fs.check(OpStat, f.f.Name()); v == fail || v == short {
		return nil, pathErr("stat", f.f.Name(), err)
	}
	return f.f.Stat()
}

func (f *file) Name() string { return f.f.Name() }

// OSFile returns the real file, so that mmap and sendfile keep working.
func (f *file) OSFile() *os.File { return f.f.OSFile() }
