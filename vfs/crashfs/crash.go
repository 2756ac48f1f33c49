package crashfs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// pageSize is the unit in which lazy mode tears a file.
const pageSize = 4096

// Survivor describes one file that a Crash wrote back.
type Survivor struct {
	Path    string // relative to the root
	Size    int64  // bytes written back
	Synced  int64  // bytes of its durable content
	Current int64  // bytes it had before the crash (-1: it was unlinked)
	Kept    string // what of the unsynced data survived: "synced", "all", "prefix", "pages"
}

// Report says what a Crash left on disk.
type Report struct {
	Mode Mode
	// DirOps is how many directory operations were not durable, and
	// DirOpsKept how many of them lazy mode kept anyway.
	DirOps, DirOpsKept int
	Dirs               []string   // directories, relative to the root
	Files              []Survivor // files, sorted by path
}

// String lists the surviving tree, one line per directory or file.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "crash (%s): %d directory ops not durable, %d kept\n", r.Mode, r.DirOps, r.DirOpsKept)
	for _, d := range r.Dirs {
		fmt.Fprintf(&b, "  %s/\n", d)
	}
	for _, f := range r.Files {
		fmt.Fprintf(&b, "  %s %d bytes (synced %d, current %d, kept %s)\n", f.Path, f.Size, f.Synced, f.Current, f.Kept)
	}
	return b.String()
}

// Crash simulates the power loss: every later operation fails with
// ErrCrashed, and the real tree under the root is replaced by what the
// model says survives (see the package doc). Open a new FS over the root
// to go on. Crash can be called once.
func (fsys *FS) Crash() (Report, error) {
	fsys.crashed.Store(true)
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	rep := Report{Mode: fsys.opts.Mode}
	if fsys.rebuilt {
		return rep, errors.New("crashfs: Crash called twice")
	}
	fsys.rebuilt = true
	c := &crashRun{
		fsys:    fsys,
		rng:     rand.New(rand.NewPCG(fsys.opts.Seed, 0x6372617368)),
		rep:     &rep,
		views:   map[*node]map[string]*node{},
		current: map[*node]string{},
		onPath:  map[*node]bool{},
	}

	// The durable entries of each directory, plus in lazy mode a prefix
	// of the directory operations that were not made durable.
	c.replayPending()
	// Where each node is now, to read what lazy mode may keep.
	c.locate(fsys.top, fsys.root)
	// The surviving tree, in a deterministic order.
	if err := c.walk(fsys.top, ""); err != nil {
		return rep, err
	}
	// Copy what is written back before the real files go.
	for i := range c.outs {
		if !c.outs[i].n.dir {
			c.outs[i].data = slices.Clone(c.outs[i].data)
		}
	}
	err := fsys.writeBack(c.outs)
	return rep, err
}

// crashRun is the state of one Crash while it works out what survives.
type crashRun struct {
	fsys    *FS
	rng     *rand.Rand
	rep     *Report
	views   map[*node]map[string]*node // each directory's surviving entries
	current map[*node]string           // where each node is now
	outs    []crashOut                 // the surviving tree, in order
	onPath  map[*node]bool             // directories on the walk's path
}

// crashOut is one directory or file of the surviving tree.
type crashOut struct {
	rel  string
	n    *node
	data []byte
}

// view returns the surviving entries of directory d, starting from its
// durable entries (its current ones in kill mode).
func (c *crashRun) view(d *node) map[string]*node {
	v, ok := c.views[d]
	if !ok {
		src := d.durable
		if c.fsys.opts.Mode == Kill {
			src = d.children
		}
		v = make(map[string]*node, len(src))
		for k, n := range src {
			v[k] = n
		}
		c.views[d] = v
	}
	return v
}

// replayPending counts the directory operations that were not made
// durable and, in lazy mode, applies a random prefix of them to the views.
func (c *crashRun) replayPending() {
	var pending []*metaOp
	for _, op := range c.fsys.meta {
		for _, ch := range op.changes {
			if !ch.covered {
				pending = append(pending, op)
				break
			}
		}
	}
	c.rep.DirOps = len(pending)
	if c.fsys.opts.Mode == Kill {
		c.rep.DirOpsKept = len(pending)
	}
	if c.fsys.opts.Mode == Lazy && len(pending) > 0 {
		c.rep.DirOpsKept = c.rng.IntN(len(pending) + 1)
		for _, op := range pending[:c.rep.DirOpsKept] {
			for _, ch := range op.changes {
				if ch.covered {
					continue
				}
				if ch.n == nil {
					delete(c.view(ch.dir), ch.name)
				} else {
					c.view(ch.dir)[ch.name] = ch.n
				}
			}
		}
	}
}

// locate records the real path of every node under directory d, at path.
func (c *crashRun) locate(d *node, path string) {
	for name, n := range d.children {
		p := filepath.Join(path, name)
		c.current[n] = p
		if n.dir {
			c.locate(n, p)
		}
	}
}

// walk appends the surviving entries under directory d (at rel) to the
// outs and the report, in name order.
func (c *crashRun) walk(d *node, rel string) error {
	if c.onPath[d] {
		return fmt.Errorf("crashfs: directory cycle at %s", rel)
	}
	c.onPath[d] = true
	defer delete(c.onPath, d)
	v := c.view(d)
	names := make([]string, 0, len(v))
	for name := range v {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n := v[name]
		p := filepath.Join(rel, name)
		if n.dir {
			c.rep.Dirs = append(c.rep.Dirs, p)
			c.outs = append(c.outs, crashOut{rel: p, n: n})
			if err := c.walk(n, p); err != nil {
				return err
			}
			continue
		}
		s, data, err := c.survivor(n, p)
		if err != nil {
			return err
		}
		c.rep.Files = append(c.rep.Files, s)
		c.outs = append(c.outs, crashOut{rel: p, n: n, data: data})
	}
	return nil
}

// survivor decides what survives of file n (at rel p): its report line
// and its data.
func (c *crashRun) survivor(n *node, p string) (Survivor, []byte, error) {
	s := Survivor{Path: p, Synced: int64(len(n.synced)), Current: -1, Kept: "synced"}
	data := n.synced
	if cur, ok := c.current[n]; ok {
		now, err := os.ReadFile(cur)
		if err != nil {
			return s, nil, fmt.Errorf("crashfs: read %s: %w", cur, err)
		}
		s.Current = int64(len(now))
		switch {
		case c.fsys.opts.Mode == Kill:
			data, s.Kept = now, "all"
		case c.fsys.opts.Mode == Lazy && !bytes.Equal(now, n.synced):
			data, s.Kept = tear(c.rng, n.synced, now, n.sizes)
		}
	}
	s.Size = int64(len(data))
	return s, data, nil
}

// writeBack replaces the real tree under the root by outs.
func (fsys *FS) writeBack(outs []crashOut) error {
	ents, err := os.ReadDir(fsys.root)
	if err != nil {
		return fmt.Errorf("crashfs: %w", err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(fsys.root, e.Name())); err != nil {
			return fmt.Errorf("crashfs: %w", err)
		}
	}
	for _, o := range outs {
		p := filepath.Join(fsys.root, o.rel)
		if o.n.dir {
			err = os.Mkdir(p, 0o750)
		} else {
			err = os.WriteFile(p, o.data, 0o640)
		}
		if err != nil {
			return fmt.Errorf("crashfs: rebuild: %w", err)
		}
	}
	return nil
}

// tear returns what lazy mode keeps of a file whose durable content is
// synced, whose content before the crash was now, and which had the sizes
// in between, and how it chose. A torn file has one of the sizes the file
// had since its last fsync (a truncation is never half done); each of
// its pages comes from the synced or the current version, where a page of
// the current version past its end shows the synced data (blocks that a
// truncation freed keep their old data until reused), and bytes that
// neither version has are zeros (the size reached the disk, the data did
// not).
func tear(rng *rand.Rand, synced, now []byte, sizes []int64) ([]byte, string) {
	appended := len(now) > len(synced) && bytes.Equal(now[:len(synced)], synced)
	choice := rng.IntN(4)
	if choice == 2 && !appended {
		choice = 3
	}
	switch choice {
	case 0:
		return synced, "synced"
	case 1:
		return now, "all"
	case 2:
		return now[:len(synced)+rng.IntN(len(now)-len(synced)+1)], "prefix"
	}
	candidates := append([]int64{int64(len(synced)), int64(len(now))}, sizes...)
	size := int(candidates[rng.IntN(len(candidates))])
	out := make([]byte, size)
	for off := 0; off < size; off += pageSize {
		end := min(off+pageSize, size)
		fromNow := rng.IntN(2) == 1
		for i := off; i < end; i++ {
			switch {
			case fromNow && i < len(now):
				out[i] = now[i]
			case i < len(synced):
				out[i] = synced[i]
			case i < len(now):
				out[i] = 0 // only the current version has it, and this page was not written
			}
		}
	}
	return out, "pages"
}

// Restart crashes the FS (Crash) and returns a new FS over the same root
// with opts, for the reopen after the power comes back.
func (fsys *FS) Restart(opts Options) (*FS, Report, error) {
	rep, err := fsys.Crash()
	if err != nil {
		return nil, rep, err
	}
	next, err := New(fsys.root, opts)
	return next, rep, err
}
