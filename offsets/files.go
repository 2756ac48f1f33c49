package offsets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seglog/seglog/vfs"
)

// DirName is the name of the offset store's directory in a seglog data
// directory: <root>/offsets.
const DirName = "offsets"

// Dir returns the offset store's directory in the data directory root.
func Dir(root string) string { return filepath.Join(root, DirName) }

// FileKind says what an entry of the store's directory is to the store.
type FileKind int

// The kinds of entries, as Files reports them.
const (
	// FileOther is not a file of the store: the store leaves it alone.
	FileOther FileKind = iota
	// FileLock is LOCK or append.lock: empty files the store flocks.
	FileLock
	// FileSnapshot is the snapshot: the whole state as of its generation.
	FileSnapshot
	// FileJournal is a journal replayed after the snapshot.
	FileJournal
	// FileObsolete is a journal older than the snapshot, which a crash
	// during a compaction left: the snapshot holds all of it, and the
	// next Open removes it unread.
	FileObsolete
	// FileTemp is a snapshot whose writing a crash interrupted
	// (snapshot*.tmp): the next Open removes it.
	FileTemp
)

var kindNames = [...]string{"other", "lock", "snapshot", "journal", "obsolete journal", "temporary snapshot"}

// String names the kind: "other", "lock", "snapshot", "journal",
// "obsolete journal" or "temporary snapshot".
func (k FileKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("FileKind(%d)", int(k))
}

// File is an entry of the store's directory, as Files sees it.
type File struct {
	Name       string   // the entry's name in the directory
	Kind       FileKind // what it is to the store
	Generation uint64   // of a journal (from its name) or of the snapshot (from its header)
	Size       int64    // in bytes
	// Err is what is wrong with the entry: a file of the store that is a
	// symbolic link or not a regular file (wrapping ErrInvalid: Open
	// refuses it), or a snapshot whose header is unreadable or bad (a
	// *CorruptError: Open and OpenReadOnly fail on it).
	Err error
}

// Files lists the entries of the store's directory dir, sorted by name,
// with what each is to the store, so that a tool can check or show them
// without knowing the store's file names. It changes nothing and takes no
// lock; it reads only the snapshot's header. A missing directory is an
// error wrapping fs.ErrNotExist. Whether the journals and the snapshot
// decode is OpenReadOnly's to say.
func Files(dir string) ([]File, error) {
	fs := vfs.Default
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	var out []File
	snapGen, hasSnap := uint64(0), false
	for _, e := range entries {
		f := File{Name: e.Name()}
		f.Kind, f.Generation = classify(f.Name)
		path := filepath.Join(dir, f.Name)
		if info, err := e.Info(); err == nil {
			f.Size = info.Size()
		}
		if f.Kind != FileOther && f.Kind != FileTemp {
			f.Err = checkType(path, e.Type())
		}
		if f.Kind == FileSnapshot && f.Err == nil {
			f.Generation, f.Err = readSnapshotGen(fs, path)
			hasSnap = f.Err == nil
			snapGen = f.Generation
		}
		out = append(out, f)
	}
	for i := range out {
		if hasSnap && out[i].Kind == FileJournal && out[i].Generation < snapGen {
			out[i].Kind = FileObsolete
		}
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// readSnapshotGen reads a snapshot's header and returns its generation.
func readSnapshotGen(fs vfs.FS, path string) (uint64, error) {
	f, err := openNoFollow(fs, path, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := make([]byte, snapshotHeaderSize)
	n, err := f.ReadAt(h, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("offsets: read %s: %w", path, err)
	}
	gen, pos, reason := snapshotHeader(h[:n])
	if reason != "" {
		return 0, &CorruptError{File: path, Pos: pos, Reason: reason}
	}
	return gen, nil
}
