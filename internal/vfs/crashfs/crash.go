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
	rng := rand.New(rand.NewPCG(fsys.opts.Seed, 0x6372617368))

	// The durable entries of each directory, plus in lazy mode a prefix
	// of the directory operations that were not made durable.
	views := map[*node]map[string]*node{}
	view := func(d *node) map[string]*node {
		v, ok := views[d]
		if !ok {
			src := d.durable
			if fsys.opts.Mode == Kill {
				src = d.children
			}
			v = make(map[string]*node, len(src))
			for k, c := range src {
				v[k] = c
			}
			views[d] = v
		}
		return v
	}
	var pending []*metaOp
	for _, op := range fsys.meta {
		for _, c := range op.changes {
			if !c.covered {
				pending = append(pending, op)
				break
			}
		}
	}
	rep.DirOps = len(pending)
	if fsys.opts.Mode == Kill {
		rep.DirOpsKept = len(pending)
	}
	if fsys.opts.Mode == Lazy && len(pending) > 0 {
		rep.DirOpsKept = rng.IntN(len(pending) + 1)
		for _, op := range pending[:rep.DirOpsKept] {
			for _, c := range op.changes {
				if c.covered {
					continue
				}
				if c.n == nil {
					delete(view(c.dir), c.name)
				} else {
					view(c.dir)[c.name] = c.n
				}
			}
		}
	}

	// Where each node is now, to read what lazy mode may keep.
	current := map[*node]string{}
	var walkNow func(d *node, path string)
	walkNow = func(d *node, path string) {
		for name, c := range d.children {
			p := filepath.Join(path, name)
			current[c] = p
			if c.dir {
				walkNow(c, p)
			}
		}
	}
	walkNow(fsys.top, fsys.root)

	// The surviving tree, in a deterministic order.
	type out struct {
		rel  string
		n    *node
		data []byte
	}
	var outs []out
	onPath := map[*node]bool{}
	var walk func(d *node, rel string) error
	walk = func(d *node, rel string) error {
		if onPath[d] {
			return fmt.Errorf("crashfs: directory cycle at %s", rel)
		}
		onPath[d] = true
		defer delete(onPath, d)
		v := view(d)
		names := make([]string, 0, len(v))
		for name := range v {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			c := v[name]
			p := filepath.Join(rel, name)
			if c.dir {
				rep.Dirs = append(rep.Dirs, p)
				outs = append(outs, out{rel: p, n: c})
				if err := walk(c, p); err != nil {
					return err
				}
				continue
			}
			s := Survivor{Path: p, Synced: int64(len(c.synced)), Current: -1, Kept: "synced"}
			data := c.synced
			if cur, ok := current[c]; ok {
				now, err := os.ReadFile(cur)
				if err != nil {
					return fmt.Errorf("crashfs: read %s: %w", cur, err)
				}
				s.Current = int64(len(now))
				switch {
				case fsys.opts.Mode == Kill:
					data, s.Kept = now, "all"
				case fsys.opts.Mode == Lazy && !bytes.Equal(now, c.synced):
					data, s.Kept = tear(rng, c.synced, now, c.sizes)
				}
			}
			s.Size = int64(len(data))
			rep.Files = append(rep.Files, s)
			outs = append(outs, out{rel: p, n: c, data: data})
		}
		return nil
	}
	if err := walk(fsys.top, ""); err != nil {
		return rep, err
	}
	// Copy what is written back before the real files go.
	for i := range outs {
		if !outs[i].n.dir {
			outs[i].data = slices.Clone(outs[i].data)
		}
	}

	ents, err := os.ReadDir(fsys.root)
	if err != nil {
		return rep, fmt.Errorf("crashfs: %w", err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(fsys.root, e.Name())); err != nil {
			return rep, fmt.Errorf("crashfs: %w", err)
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
			return rep, fmt.Errorf("crashfs: rebuild: %w", err)
		}
	}
	return rep, nil
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
