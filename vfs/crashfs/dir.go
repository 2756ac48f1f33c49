package crashfs

import (
	"errors"
	"os"

	"github.com/seglog/seglog/vfs"
)

// Remove implements vfs.FS.
func (fsys *FS) Remove(name string) error {
	return fsys.unlink("remove", name, vfs.Default.Remove)
}

// RemoveAll implements vfs.FS. Removing a missing path changes nothing.
func (fsys *FS) RemoveAll(name string) error {
	return fsys.unlink("removeall", name, vfs.Default.RemoveAll)
}

func (fsys *FS) unlink(op, name string, call func(string) error) error {
	parts, err := fsys.split(op, name)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return &os.PathError{Op: op, Path: name, Err: errors.New("crashfs: cannot remove the root")}
	}
	if err := fsys.step(op, name); err != nil {
		return err
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if fsys.crashed.Load() {
		return crashErr(op, name)
	}
	parent, n := fsys.lookupLocked(parts, true)
	if err := call(name); err != nil {
		return err
	}
	if n != nil && parent != nil {
		fsys.recordLocked(&change{dir: parent, name: parts[len(parts)-1]})
	}
	return nil
}

// Rename implements vfs.FS: one directory operation (in lazy mode both
// names change together or neither does), durable when both directories
// are fsynced.
func (fsys *FS) Rename(oldpath, newpath string) error {
	op, err := fsys.split("rename", oldpath)
	if err != nil {
		return err
	}
	np, err := fsys.split("rename", newpath)
	if err != nil {
		return err
	}
	crashed := func() error {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: ErrCrashed}
	}
	if fsys.number("rename " + fsys.short(oldpath) + " -> " + fsys.short(newpath)) {
		return crashed()
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if fsys.crashed.Load() {
		return crashed()
	}
	if len(op) == 0 || len(np) == 0 {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: errors.New("crashfs: cannot rename the root")}
	}
	oparent, n := fsys.lookupLocked(op, true)
	_, nparent := fsys.lookupLocked(np[:len(np)-1], true)
	if err := vfs.Default.Rename(oldpath, newpath); err != nil {
		return err
	}
	if n == nil || oparent == nil || nparent == nil || !nparent.dir {
		return nil // the model cannot follow; cannot happen for paths it knows
	}
	oname, nname := op[len(op)-1], np[len(np)-1]
	if oparent == nparent && oname == nname {
		return nil
	}
	fsys.recordLocked(&change{dir: oparent, name: oname}, &change{dir: nparent, name: nname, n: n})
	return nil
}

// MkdirAll implements vfs.FS. It is a disk-changing operation when it
// creates something; each directory it creates is one directory operation.
func (fsys *FS) MkdirAll(path string, perm os.FileMode) error {
	parts, err := fsys.split("mkdir", path)
	if err != nil {
		return err
	}
	fsys.mu.Lock()
	_, n := fsys.lookupLocked(parts, true)
	fsys.mu.Unlock()
	if n != nil {
		if err := fsys.check("mkdir", path); err != nil {
			return err
		}
		return vfs.Default.MkdirAll(path, perm)
	}
	if err := fsys.step("mkdir", path); err != nil {
		return err
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if fsys.crashed.Load() {
		return crashErr("mkdir", path)
	}
	if err := vfs.Default.MkdirAll(path, perm); err != nil {
		return err
	}
	d := fsys.top
	for _, p := range parts {
		c := d.children[p]
		if c == nil {
			c = newDir()
			fsys.recordLocked(&change{dir: d, name: p, n: c})
		}
		d = c
	}
	return nil
}

// ReadDir implements vfs.FS.
func (fsys *FS) ReadDir(name string) ([]os.DirEntry, error) {
	if _, err := fsys.split("readdir", name); err != nil {
		return nil, err
	}
	if err := fsys.check("readdir", name); err != nil {
		return nil, err
	}
	return vfs.Default.ReadDir(name)
}

// Lstat implements vfs.FS.
func (fsys *FS) Lstat(name string) (os.FileInfo, error) {
	if _, err := fsys.split("lstat", name); err != nil {
		return nil, err
	}
	if err := fsys.check("lstat", name); err != nil {
		return nil, err
	}
	return vfs.Default.Lstat(name)
}

// SyncDir implements vfs.FS: the directory's entries as they are now
// become its durable entries.
func (fsys *FS) SyncDir(dir string) error {
	parts, err := fsys.split("syncdir", dir)
	if err != nil {
		return err
	}
	if err := fsys.step("syncdir", dir); err != nil {
		return err
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	if fsys.crashed.Load() {
		return crashErr("syncdir", dir)
	}
	_, d := fsys.lookupLocked(parts, true)
	if d == nil || !d.dir {
		return &os.PathError{Op: "syncdir", Path: dir, Err: os.ErrNotExist}
	}
	if fsys.opts.RealSync {
		if err := vfs.Default.SyncDir(dir); err != nil {
			return err
		}
	}
	d.durable = make(map[string]*node, len(d.children))
	for k, v := range d.children {
		d.durable[k] = v
	}
	for _, op := range fsys.meta {
		for _, c := range op.changes {
			if c.dir == d {
				c.covered = true
			}
		}
	}
	return nil
}
