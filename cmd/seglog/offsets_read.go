package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/seglog/seglog/offsets"
)

// offsetsPath returns the directory of a data directory's consumer offset
// store.
func offsetsPath(dataDir string) string { return offsets.Dir(dataDir) }

// errNoOffsetStore says that a data directory has no offset store: no
// group has committed.
var errNoOffsetStore = errors.New("no offset store (no consumer group has committed)")

// openOffsets opens the data directory's consumer offset store to write
// (commit, reset, delete). Any number of processes may have it open to
// write at once (consumers of different groups, a broker).
func openOffsets(dir string) (*offsets.Store, error) {
	st, err := offsets.Open(offsetsPath(dir), offsets.Options{})
	if errors.Is(err, offsets.ErrLocked) {
		return nil, fmt.Errorf("the offset store %s is held by an older seglog, which does not share it: stop that process first", offsetsPath(dir))
	}
	return st, err
}

// readOffsets opens the data directory's offset store read-only
// (offsets.OpenReadOnly): no lock, no byte changed, beside any process
// that writes it. note, when not nil, hears what offsets.Files says of the
// store's directory: entries that are not the store's, leftovers the next
// writing open removes (warnings), entries the store refuses (errors).
// The returned func closes the store. errNoOffsetStore: there is none.
func readOffsets(dir string, note func(isErr bool, msg string)) (*offsets.Store, func(), error) {
	path := offsetsPath(dir)
	files, err := offsets.Files(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, errNoOffsetStore
	}
	if err != nil {
		return nil, nil, fileErr(path, err)
	}
	if note != nil {
		for _, f := range files {
			p := filepath.Join(path, f.Name)
			switch {
			case f.Err != nil:
				note(true, fmt.Sprintf("%s: %v", p, f.Err))
			case f.Kind == offsets.FileTemp:
				note(false, p+": a snapshot whose writing was interrupted; the next open removes it")
			case f.Kind == offsets.FileObsolete:
				note(false, p+": a journal the snapshot already holds, left by an interrupted compaction; the next open removes it")
			case f.Kind == offsets.FileOther:
				note(false, p+": not a file of the offset store")
			}
		}
	}
	st, err := offsets.OpenReadOnly(path, offsets.Options{})
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}
