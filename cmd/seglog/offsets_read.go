package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/seglog/seglog/offsets"
)

// errNoOffsetStore says that a data directory has no offset store: no
// group has committed.
var errNoOffsetStore = errors.New("no offset store (no consumer group has committed)")

// openOffsets opens the data directory's consumer offset store to write
// (commit, reset, delete). Any number of processes may have it open to
// write at once (consumers of different groups, a broker).
func openOffsets(dir string) (*offsets.Store, error) {
	st, err := offsets.Open(offsets.Dir(dir), offsets.Options{})
	if errors.Is(err, offsets.ErrLocked) {
		return nil, fmt.Errorf("the offset store %s is held by an older seglog, which does not share it: stop that process first", offsets.Dir(dir))
	}
	return st, err
}

// readOffsets opens the data directory's offset store read-only
// (offsets.OpenReadOnly): no lock, no byte changed, beside any process
// that writes it. errNoOffsetStore: there is none.
func readOffsets(dir string) (*offsets.Store, error) {
	path := offsets.Dir(dir)
	if _, err := offsets.Files(path); errors.Is(err, fs.ErrNotExist) {
		return nil, errNoOffsetStore
	} else if err != nil {
		return nil, fileErr(path, err)
	}
	return offsets.OpenReadOnly(path, offsets.Options{})
}
