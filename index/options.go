package index

import (
	"os"

	"github.com/seglog/seglog/vfs"
)

// Options configure how an index file is opened.
type Options struct {
	FS       vfs.FS // nil means vfs.Default
	MaxBytes int    // capacity of a writable index; rounded down to a multiple of the entry size; 0 means DefaultMaxBytes
	Writable bool   // true for the active segment's index
	// Follow, with Writable false, opens the index of an active segment
	// that another process is writing: the entries in use are those
	// before the first all-zero entry (the preallocated tail), as seen
	// at open.
	Follow bool
	Perm   os.FileMode // for a created file; 0 means vfs.DefaultFileMode
}
