package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// listDir lists the directory (listPartitionDir): the segments' base
// offsets (sorted), the producer snapshots (into l.repl.snapshots); it removes
// the leftovers of interrupted writes and deletions.
func (l *Log) listDir() ([]int64, error) {
	ls, err := listPartitionDir(l.opts.FS, l.dir, l.repl.snapshots[:0])
	if err != nil {
		return nil, err
	}
	l.repl.snapshots = ls.snapshots
	for _, o := range ls.orphans {
		if o.why != "" {
			if err := l.quarantine(o.name, o.why); err != nil {
				return nil, err
			}
			continue
		}
		if err := l.opts.FS.Remove(filepath.Join(l.dir, o.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		l.openStats.RemovedLeftovers++
	}
	return ls.bases, nil
}

// dirListing is what a listing of a partition directory found.
type dirListing struct {
	bases     []int64  // of .log files, sorted
	snapshots []int64  // of producer snapshots, sorted
	orphans   []orphan // leftovers: temporary files, index files without their .log
}

// orphan is a leftover file of a partition directory: the engine's own
// (why empty: removed) or one it cannot use (quarantined, for why).
type orphan struct {
	name string
	why  string
}

// listPartitionDir lists a partition directory, appending the snapshots'
// offsets to snapshots. It refuses names and file types that are not
// ours (a stray or symlinked segment file).
func listPartitionDir(fsys vfs.FS, dir string, snapshots []int64) (dirListing, error) {
	ls := dirListing{snapshots: snapshots}
	var indexes []indexFile // index files, checked against bases below
	err := vfs.ScanDir(fsys, dir, func(name string, typ fs.FileMode) error {
		base, suffix, digits := segment.SplitFileName(name)
		if digits && suffix == snapshotSuffix {
			ls.snapshots = append(ls.snapshots, base)
			return nil
		}
		if othersTemp(name) {
			return nil // its writer may be replacing the file right now
		}
		if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted") {
			o := orphan{name: strings.Clone(name)}
			if !ownLeftover(name) {
				o.why = "a temporary file that is not one of the engine's own"
			}
			ls.orphans = append(ls.orphans, o)
			return nil
		}
		kind := segmentSuffix(name)
		if kind == "" {
			return nil // not ours (checkpoints, marker, an operator's notes)
		}
		if !digits || suffix != kind {
			return fmt.Errorf("%w: unexpected file %s: segment files are named by 20 decimal digits", ErrCorrupt, filepath.Join(dir, name))
		}
		if base > MaxOffset {
			return fmt.Errorf("%w: %s: base offset %d leaves no offset for a record (the largest is %d)", ErrCorrupt, filepath.Join(dir, name), base, int64(MaxOffset))
		}
		if typ&fs.ModeSymlink != 0 || !typ.IsRegular() {
			return fmt.Errorf("%w: %s is not a regular file (symbolic links are refused)", ErrCorrupt, filepath.Join(dir, name))
		}
		if kind == segment.LogSuffix {
			ls.bases = append(ls.bases, base)
		} else {
			indexes = append(indexes, indexFile{base, kind})
		}
		return nil
	})
	if err != nil {
		return dirListing{}, err
	}
	slices.Sort(ls.bases)
	slices.Sort(ls.snapshots)
	// Index files without their .log are left from a deletion that a
	// crash interrupted.
	for _, x := range indexes {
		if _, found := slices.BinarySearch(ls.bases, x.base); !found {
			ls.orphans = append(ls.orphans, orphan{segment.FileName(x.base, x.suffix), "an index file without its .log"})
		}
	}
	return ls, nil
}

// indexFile is an index file found by listDir.
type indexFile struct {
	base   int64
	suffix string
}

// segmentSuffix returns the suffix of a segment file that name ends with,
// or "".
func segmentSuffix(name string) string {
	for _, s := range [...]string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		if strings.HasSuffix(name, s) {
			return s
		}
	}
	return ""
}

// KafkaPartitionMetadataFile is Kafka's file of a partition's topic id,
// which a Kafka broker (and seglog serve) keeps in the partition
// directory. The log neither reads nor touches it.
const KafkaPartitionMetadataFile = "partition.metadata"

// othersTemp reports whether name is the temporary file of a file another
// layer keeps in a partition directory (KafkaPartitionMetadataFile,
// replaced with vfs.WriteFileAtomic): a log opening in the same process
// as that writer leaves it alone, because the writer may be between its
// write and its rename.
func othersTemp(name string) bool {
	rest, ok := strings.CutSuffix(name, vfs.TempSuffix)
	return ok && strings.HasPrefix(rest, KafkaPartitionMetadataFile+".")
}

// ownLeftover reports whether name is a leftover of the engine's own
// writes: a checkpoint's or snapshot's temporary file (vfs.WriteFileAtomic
// names it <file>.<pid>-<n>.tmp, a snapshot <offset>.snapshot.tmp) or a
// segment file renamed for deletion (<segment file>.deleted).
func ownLeftover(name string) bool {
	if rest, ok := strings.CutSuffix(name, ".deleted"); ok {
		_, suffix, digits := segment.SplitFileName(rest)
		return digits && suffix == segmentSuffix(rest) && suffix != ""
	}
	rest, _ := strings.CutSuffix(name, ".tmp")
	if _, suffix, digits := segment.SplitFileName(rest); digits && suffix == snapshotSuffix {
		return true
	}
	if i := strings.LastIndexByte(rest, '.'); i > 0 {
		rest = rest[:i] // the <pid>-<n> part
	}
	switch rest {
	case recoveryPointFile, logStartOffsetFile, truncationFile, manifestFile, cleanShutdownFile, highWatermarkFile, leaderEpochFile:
		return true
	}
	return false
}
