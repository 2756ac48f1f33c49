// Package crashfs is a vfs.FS that simulates a power loss, for tests of
// durability claims: killing a process keeps the page cache, so only a
// filesystem that forgets what was never fsynced can catch a missing
// fsync. It plays the part of pebble's strict in-memory FS and of LazyFS.
//
// # How it works
//
// An FS wraps a real directory tree (a test's t.TempDir()) and passes every
// operation through to the os package, so that what the engine does beside
// the seam keeps working: memory maps of File.OSFile() (index files are
// written through a map and made durable by File.Sync), flock, sendfile.
// Beside the real tree it keeps a model of what a disk would still hold
// after a power cut:
//
//   - Files have an identity (a node) that follows renames and outlives
//     unlinking. A file's durable content is its whole content as of its
//     last successful File.Sync: Sync reads the real file (through the
//     descriptor, so writes made through a memory map count) before it
//     returns. A file never synced is durably empty. Truncate, Allocate
//     and size changes are durable with the next Sync, like writes.
//   - Directories have a volatile list of entries (name -> node), which
//     mirrors the real tree, and a durable one: the volatile list as of
//     the directory's last successful SyncDir. A file created, or renamed
//     into a directory, whose directory was never fsynced afterwards does
//     not survive; a removal or a rename not followed by a directory fsync
//     is undone (the file comes back with its durable content). A new
//     directory needs its parent fsynced, and its own entries need its own
//     fsync. fsync of a file never makes its name durable.
//
// # Crash points
//
// Every operation that changes the disk (creating a file, Write, WriteAt,
// Truncate, Allocate, Sync, Rename, Remove, RemoveAll, MkdirAll of a
// missing path, SyncDir) is numbered from 1. With Options.CrashAt = N,
// operation N fails, and so does every later operation of any kind (reads,
// opens, Close after it has closed the real descriptor), each with an error
// wrapping ErrCrashed: the workload stops as if the power had gone.
// CrashNow does the same at once. Ops reports how many operations were
// numbered, so a test can run a workload once without a crash to count
// them and then crash at 1, 2, ..., Ops().
//
// Crash rebuilds the real tree from the model (and returns a Report of
// what survived): everything under the root is
// removed and the surviving tree is written back as new files and
// directories (new inodes: descriptors and maps that the crashed engine
// still holds, and its flocks, refer to the old ones). The test then opens
// the engine again on a new FS over the same root (New treats everything
// it finds as durable, as after a reboot), optionally with a crash point
// again to crash during recovery.
//
// # Strict and lazy
//
// Strict mode keeps exactly the durable state. Lazy mode, like a real disk
// that wrote back some dirty pages before the power went, also keeps a
// random part of what was not fsynced, chosen by a generator seeded with
// Options.Seed (the same seed and the same workload give the same disk):
//
//   - a random prefix of the directory operations that were not made
//     durable (creations, removals, renames in the order they happened, as
//     a metadata journal commits them; a rename is one operation); and
//   - per file whose content differs from its durable content, one of:
//     nothing of the unsynced data, all of it, a random prefix of the
//     unsynced appended bytes (when the file only grew), or a torn file:
//     one of the sizes the file had since its last fsync (a truncation is
//     never half done), with every 4 KiB page taken from either version
//     (past the current version's end a page shows the durable data, as
//     freed blocks keep it; bytes neither version has read as zeros: the
//     size reached the disk, the data did not).
//
// A file that was unlinked and comes back has its durable content.
//
// Kill mode keeps the tree as it is at the crash point: what a process
// crash leaves, fsynced or not.
//
// # Limits
//
// Every path must lie under the root (others are an error); files created
// beside the FS under the root are adopted as durable when first seen.
// Symbolic links, hard links, permissions and times are not modelled (Crash
// writes files 0640 and directories 0750, and drops symbolic links). By
// default the real fsyncs are skipped (the model decides what survives, and
// tests run faster); Options.RealSync makes them happen. An FS is safe for
// concurrent use; Sync holds the model's lock while it reads the file.
package crashfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/seglog/seglog/vfs"
)

// ErrCrashed is wrapped by the error of every operation at or after the
// crash point.
var ErrCrashed = errors.New("crashfs: simulated power loss")

// ErrOutsideRoot is wrapped by the error of an operation on a path that is
// not under the FS's root.
var ErrOutsideRoot = errors.New("crashfs: path outside the root")

// Mode says what survives a Crash.
type Mode int

const (
	// Strict keeps exactly what was fsynced.
	Strict Mode = iota
	// Lazy also keeps a random (seeded) part of what was not.
	Lazy
	// Kill keeps everything that reached the page cache, fsynced or not:
	// a process crash (SIGKILL), not a power loss. It finds ordering
	// bugs (a step taken before the one that should precede it) without
	// any randomness.
	Kill
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case Lazy:
		return "lazy"
	case Kill:
		return "kill"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Options configure an FS.
type Options struct {
	// Mode is Strict (the default) or Lazy.
	Mode Mode
	// Seed seeds Lazy mode's choices.
	Seed uint64
	// CrashAt is the number (from 1) of the disk-changing operation that
	// fails first; 0 means no crash point.
	CrashAt int64
	// RealSync makes Sync and SyncDir also fsync the real files.
	RealSync bool
	// HistoryLen is how many of the last disk-changing operations History
	// returns (default 64).
	HistoryLen int
}

// node is a file or a directory: an identity that follows renames.
type node struct {
	dir bool
	// Directories: the entries now, and as of the last SyncDir.
	children map[string]*node
	durable  map[string]*node
	// Files: the content as of the last Sync (nil: empty).
	synced []byte
	// sizes are the sizes the file had since that Sync (lazy mode picks
	// the size that survives among them).
	sizes []int64
}

func newDir() *node {
	return &node{dir: true, children: map[string]*node{}, durable: map[string]*node{}}
}

// change is one entry of a directory changing: name now refers to n (nil:
// removed). covered is set once a SyncDir of dir made it durable.
type change struct {
	dir     *node
	name    string
	n       *node
	covered bool
}

// metaOp is a directory operation (a rename is one, with two changes).
type metaOp struct{ changes []*change }

// FS is a crash-simulating vfs.FS over a real directory tree.
type FS struct {
	root string
	opts Options

	ops     atomic.Int64
	crashAt atomic.Int64 // the crash point (0: none)
	crashed atomic.Bool

	// mu guards the model: top and everything below it, meta, history,
	// rebuilt.
	mu      sync.Mutex
	top     *node
	meta    []*metaOp
	history []string
	rebuilt bool
}

var _ vfs.FS = (*FS)(nil)

// New returns an FS over the directory root, which must exist. Everything
// in it is taken as durable.
func New(root string, opts Options) (*FS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if opts.HistoryLen <= 0 {
		opts.HistoryLen = 64
	}
	fsys := &FS{root: abs, opts: opts}
	fsys.crashAt.Store(opts.CrashAt)
	top, err := scan(abs)
	if err != nil {
		return nil, fmt.Errorf("crashfs: scan %s: %w", abs, err)
	}
	if !top.dir {
		return nil, fmt.Errorf("crashfs: %s is not a directory", abs)
	}
	fsys.top = top
	return fsys, nil
}

// scan builds a durable node for the real path.
func scan(path string) (*node, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		n := newDir()
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if e.Type()&fs.ModeSymlink != 0 || !(e.IsDir() || e.Type().IsRegular()) {
				continue
			}
			c, err := scan(filepath.Join(path, e.Name()))
			if err != nil {
				return nil, err
			}
			n.children[e.Name()] = c
			n.durable[e.Name()] = c
		}
		return n, nil
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return &node{synced: b}, nil
	}
	return nil, fmt.Errorf("%s: not a regular file or directory", path)
}

// Root returns the root directory.
func (fsys *FS) Root() string { return fsys.root }

// Ops returns how many disk-changing operations were numbered so far (the
// one that crashed included).
func (fsys *FS) Ops() int64 { return fsys.ops.Load() }

// Crashed reports whether the crash point was reached (or CrashNow or
// Crash was called).
func (fsys *FS) Crashed() bool { return fsys.crashed.Load() }

// CrashAfter makes the n-th disk-changing operation from now (n >= 1)
// the crash point, in place of Options.CrashAt: for a test that cuts the
// power at each operation of one call, after a setup whose operations
// vary in number (background work).
func (fsys *FS) CrashAfter(n int64) { fsys.crashAt.Store(fsys.ops.Load() + max(n, 1)) }

// CrashNow makes every later operation fail with ErrCrashed.
func (fsys *FS) CrashNow() { fsys.crashed.Store(true) }

// History returns the last disk-changing operations, oldest first, as
// "#N op path": what a test prints when a crash point finds a loss.
func (fsys *FS) History() []string {
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	return slices.Clone(fsys.history)
}

// step numbers a disk-changing operation on path and returns an error if
// it is at or past the crash point.
func (fsys *FS) step(op, path string) error {
	if fsys.number(op + " " + fsys.short(path)) {
		return crashErr(op, path)
	}
	return nil
}

// number numbers a disk-changing operation, described by desc for
// History, and reports whether it is at or past the crash point.
func (fsys *FS) number(desc string) (crashed bool) {
	n := fsys.ops.Add(1)
	if c := fsys.crashAt.Load(); c > 0 && n >= c {
		fsys.crashed.Store(true)
	}
	if fsys.crashed.Load() {
		return true
	}
	fsys.mu.Lock()
	fsys.history = append(fsys.history, "#"+strconv.FormatInt(n, 10)+" "+desc)
	if len(fsys.history) > fsys.opts.HistoryLen {
		fsys.history = fsys.history[len(fsys.history)-fsys.opts.HistoryLen:]
	}
	fsys.mu.Unlock()
	return false
}

// check fails an operation that changes nothing once crashed.
func (fsys *FS) check(op, path string) error {
	if fsys.crashed.Load() {
		return crashErr(op, path)
	}
	return nil
}

func crashErr(op, path string) error {
	return &os.PathError{Op: op, Path: path, Err: ErrCrashed}
}

// short is path relative to the root, for History.
func (fsys *FS) short(path string) string {
	if r, err := filepath.Rel(fsys.root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// split returns the components of path below the root (none for the root).
func (fsys *FS) split(op, path string) ([]string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &os.PathError{Op: op, Path: path, Err: err}
	}
	r, err := filepath.Rel(fsys.root, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") {
		return nil, &os.PathError{Op: op, Path: path, Err: ErrOutsideRoot}
	}
	if r == "." {
		return nil, nil
	}
	return strings.Split(r, string(filepath.Separator)), nil
}

// lookupLocked walks the volatile tree. It returns the parent directory
// of the last component (nil when a parent is missing), and the node (nil
// when missing). With adopt, a real entry that the model does not know
// (created beside the FS) is adopted as durable. The caller holds mu.
func (fsys *FS) lookupLocked(parts []string, adopt bool) (parent, n *node) {
	n = fsys.top
	path := fsys.root
	for _, p := range parts {
		if n == nil || !n.dir {
			return nil, nil
		}
		parent = n
		path = filepath.Join(path, p)
		c := n.children[p]
		if c == nil && adopt {
			if adopted, err := scan(path); err == nil {
				c = adopted
				n.children[p] = c
				n.durable[p] = c
			}
		}
		n = c
	}
	return parent, n
}

// record appends a directory operation to the journal of lazy mode.
func (fsys *FS) recordLocked(changes ...*change) {
	for _, c := range changes {
		if c.n == nil {
			delete(c.dir.children, c.name)
		} else {
			c.dir.children[c.name] = c.n
		}
	}
	fsys.meta = append(fsys.meta, &metaOp{changes: changes})
}

// OpenFile implements vfs.FS. An open that creates the file or truncates
// it (O_TRUNC) is a disk-changing operation.
func (fsys *FS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	parts, err := fsys.split("open", name)
	if err != nil {
		return nil, err
	}
	fsys.mu.Lock()
	parent, n := fsys.lookupLocked(parts, true)
	fsys.mu.Unlock()
	creates := n == nil && flag&os.O_CREATE != 0
	if creates || (n != nil && flag&os.O_TRUNC != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0) {
		op := "create"
		if !creates {
			op = "open-trunc"
		}
		if err := fsys.step(op, name); err != nil {
			return nil, err
		}
	} else if err := fsys.check("open", name); err != nil {
		return nil, err
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if fsys.crashed.Load() {
		return nil, crashErr("open", name)
	}
	f, err := vfs.Default.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	// Look again under the lock: the tree may have changed meanwhile.
	parent, n = fsys.lookupLocked(parts, false)
	if n == nil {
		if parent == nil || len(parts) == 0 {
			_ = f.Close()
			return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("crashfs: model out of step with the real tree")}
		}
		n = &node{}
		fsys.recordLocked(&change{dir: parent, name: parts[len(parts)-1], n: n})
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	return &file{fs: fsys, f: f, n: n, readable: acc != os.O_WRONLY}, nil
}
