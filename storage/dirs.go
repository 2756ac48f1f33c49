package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// This file is the package's reading of directories for Check and Repair:
// which names of a data root are partitions and which are leftovers, and
// what each file of a partition directory is. The verdict on whether a
// directory can be opened comes from the same code that opens it
// (OpenStore, and the log's own listing), run read-only: nothing here
// changes a byte on disk.

// fileKind says what a name in a partition directory is to the log.
type fileKind int

// The kinds of file in a partition directory.
const (
	// fileOther is not the log's (an operator's notes): left alone.
	fileOther fileKind = iota
	// fileSegment is a segment's data, <base offset, 20 digits>.log.
	fileSegment
	// fileOffsetIndex is a segment's offset index, <base>.index.
	fileOffsetIndex
	// fileTimeIndex is a segment's time index, <base>.timeindex.
	fileTimeIndex
	// fileProducerSnapshot is idempotent producers' state, <offset>.snapshot.
	fileProducerSnapshot
	// fileCheckpoint is one of the one-offset checkpoints
	// (recovery-point, log-start-offset, high-watermark,
	// truncation-point) or the leader epoch cache.
	fileCheckpoint
	// fileManifest is the segment list written at a clean close.
	fileManifest
	// fileCleanShutdown is the clean-shutdown marker.
	fileCleanShutdown
	// fileTopicConfig is the topic's configuration.
	fileTopicConfig
	// fileLeftover is left by an interrupted write or deletion (a
	// *.tmp or *.deleted file, an index without its .log): the next
	// writable open removes it.
	fileLeftover
	// fileRefused is a name or file type the log refuses to open: a
	// segment suffix without a 20-digit base offset, a base offset that
	// leaves no room for a record, a segment file that is not a regular
	// file (a symbolic link).
	fileRefused
)

var fileKindNames = [...]string{"other", "segment", "offset index", "time index", "producer snapshot", "checkpoint", "manifest", "clean-shutdown marker", "topic config", "leftover", "refused"}

// String names the kind.
func (k fileKind) String() string {
	if k < 0 || int(k) >= len(fileKindNames) {
		return fmt.Sprintf("fileKind(%d)", int(k))
	}
	return fileKindNames[k]
}

// classifyPartitionFile says what the entry name (of type mode, as
// fs.DirEntry.Type gives it) of a partition directory is, and the offset
// its name carries (a segment's base offset, a snapshot's offset; 0
// otherwise). An index is classified by its name alone: whether its .log
// exists is listPartition's business.
func classifyPartitionFile(name string, mode fs.FileMode) (fileKind, int64) {
	if off, ok := segment.ParseFileName(name, snapshotSuffix); ok {
		return fileProducerSnapshot, off
	}
	if othersTemp(name) {
		return fileOther, 0
	}
	if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted") {
		return fileLeftover, 0
	}
	for _, s := range []struct {
		suffix string
		kind   fileKind
	}{{segment.LogSuffix, fileSegment}, {segment.IndexSuffix, fileOffsetIndex}, {segment.TimeIndexSuffix, fileTimeIndex}} {
		if !strings.HasSuffix(name, s.suffix) {
			continue
		}
		base, ok := segment.ParseFileName(name, s.suffix)
		if !ok || base > MaxOffset || mode&fs.ModeSymlink != 0 || !mode.IsRegular() {
			return fileRefused, base
		}
		return s.kind, base
	}
	switch name {
	case recoveryPointFile, logStartOffsetFile, highWatermarkFile, truncationFile, leaderEpochFile:
		return fileCheckpoint, 0
	case manifestFile:
		return fileManifest, 0
	case cleanShutdownFile:
		return fileCleanShutdown, 0
	case topicConfigFile:
		return fileTopicConfig, 0
	}
	return fileOther, 0
}

// partitionFile is one entry of a partition directory.
type partitionFile struct {
	Name   string
	Kind   fileKind
	Offset int64 // a segment file's base offset, a snapshot's offset
	// Why says, for a leftover or a refused file, what it is.
	Why string
}

// partitionListing is what listPartition found in a partition directory.
type partitionListing struct {
	Dir       string
	Files     []partitionFile // every entry, sorted by name
	Segments  []int64         // base offsets of the .log files, sorted
	Snapshots []int64         // producer snapshot offsets, sorted
	Clean     bool            // the clean-shutdown marker is there
	// Refused is the error a writable open returns for this directory's
	// names (from the log's own listing), nil when it has none to refuse.
	Refused error
}

// listPartition lists a partition directory read-only, as the log reads it.
func listPartition(fsys vfs.FS, dir string) (partitionListing, error) {
	pl := partitionListing{Dir: dir}
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return pl, err
	}
	logs := map[int64]bool{}
	for _, e := range entries {
		if k, base := classifyPartitionFile(e.Name(), e.Type()); k == fileSegment {
			logs[base] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		k, off := classifyPartitionFile(name, e.Type())
		f := partitionFile{Name: name, Kind: k, Offset: off}
		switch k {
		case fileSegment:
			pl.Segments = append(pl.Segments, off)
		case fileProducerSnapshot:
			pl.Snapshots = append(pl.Snapshots, off)
		case fileCleanShutdown:
			pl.Clean = true
		case fileOffsetIndex, fileTimeIndex:
			if !logs[off] {
				f.Kind, f.Why = fileLeftover, "an index without its .log, left by an interrupted deletion"
			}
		case fileLeftover:
			f.Why = "left by an interrupted write or deletion"
		case fileRefused:
			switch {
			case e.Type()&fs.ModeSymlink != 0 || !e.Type().IsRegular():
				f.Why = "not a regular file (symbolic links are refused)"
			case off > MaxOffset:
				f.Why = fmt.Sprintf("base offset %d leaves no offset for a record", off)
			default:
				f.Why = "segment files are named by 20 decimal digits"
			}
		}
		pl.Files = append(pl.Files, f)
	}
	slices.SortFunc(pl.Files, func(a, b partitionFile) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(pl.Segments)
	slices.Sort(pl.Snapshots)
	// The verdict comes from the log's own listing, read-only.
	if _, err := listPartitionDir(fsys, dir, nil); err != nil {
		pl.Refused = err
	}
	return pl, nil
}

// rootListing is what listRoot found in a data root.
type rootListing struct {
	Root string
	// Partitions are the partition directories, sorted by topic, then
	// partition number.
	Partitions []partitionName
	// Leftovers are directories left by a topic deletion that a crash
	// interrupted: the next writable OpenStore removes them.
	Leftovers []string
	// Other are the names that are not the store's (the offsets store, a
	// marker, an operator's notes), sorted.
	Other []string
	// Refused is the error OpenStore returns for this root (a symbolic
	// link for a partition, a topic missing a partition number), nil
	// when it opens.
	Refused error
}

// partitionName is a partition directory of a root.
type partitionName struct {
	Name      string // <topic>-<partition>
	Topic     string
	Partition int32
	Symlink   bool // refused by OpenStore
}

// listRoot lists a data root read-only, as OpenStore reads it.
func listRoot(root string) (rootListing, error) {
	rl, err := listRootNames(root)
	if err != nil {
		return rl, err
	}
	// The verdict comes from OpenStore itself, read-only.
	if s, err := OpenStore(root, StoreOptions{Log: Options{ReadOnly: true}}); err != nil {
		rl.Refused = err
	} else {
		_ = s.Close()
	}
	return rl, nil
}

// listRootNames is listRoot without the verdict: the names alone.
func listRootNames(root string) (rootListing, error) {
	rl := rootListing{Root: root}
	entries, err := vfs.Default.ReadDir(root)
	if err != nil {
		return rl, err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".deleted") {
			rl.Leftovers = append(rl.Leftovers, name)
			continue
		}
		topic, p, ok := ParsePartitionDir(name)
		switch {
		case ok && e.Type()&fs.ModeSymlink != 0:
			rl.Partitions = append(rl.Partitions, partitionName{Name: name, Topic: topic, Partition: p, Symlink: true})
		case ok && e.IsDir():
			rl.Partitions = append(rl.Partitions, partitionName{Name: name, Topic: topic, Partition: p})
		default:
			rl.Other = append(rl.Other, name)
		}
	}
	slices.SortFunc(rl.Partitions, func(a, b partitionName) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return rl, nil
}

// ErrDataRoot is returned by LogFiles for a directory that holds
// partition directories where a partition directory was expected.
var ErrDataRoot = errors.New("storage: a data root (it holds partition directories), not a partition directory")

// LogFiles returns the paths of the segment .log files of partitions in
// offset order, read-only, as a tool that reads segment files (seglog
// dump) finds them. With topic "", dir is a partition directory (a
// directory holding partition directories instead is ErrDataRoot). With a
// topic, dir is a data root and the files are those of the topic's
// partitions, partition after partition (only partition's when it is not
// negative); a topic (or partition) without a directory there is
// ErrUnknownTopic. Every name segment.ParseFileName reads as a .log is
// listed, those the log refuses to open too (a symbolic link): a tool may
// want to read them.
func LogFiles(dir, topic string, partition int32) ([]string, error) {
	dirs := []string{dir}
	if topic != "" {
		rl, err := listRootNames(dir)
		if err != nil {
			return nil, err
		}
		dirs = nil
		for _, p := range rl.Partitions {
			if !p.Symlink && p.Topic == topic && (partition < 0 || p.Partition == partition) {
				dirs = append(dirs, filepath.Join(dir, p.Name))
			}
		}
		switch {
		case len(dirs) > 0:
		case partition >= 0:
			return nil, fmt.Errorf("%w: %s (no partition directory %s in %s)", ErrUnknownTopic, topic, PartitionDir(topic, partition), dir)
		default:
			return nil, fmt.Errorf("%w: %s (no partition directory in %s)", ErrUnknownTopic, topic, dir)
		}
	}
	var files []string
	for _, d := range dirs {
		entries, err := vfs.Default.ReadDir(d)
		if err != nil {
			return nil, err
		}
		var bases []int64
		for _, e := range entries {
			if base, ok := segment.ParseFileName(e.Name(), segment.LogSuffix); ok {
				bases = append(bases, base)
			}
			if _, _, ok := ParsePartitionDir(e.Name()); ok && e.IsDir() && topic == "" {
				return nil, fmt.Errorf("%w: %s", ErrDataRoot, d)
			}
		}
		slices.Sort(bases)
		for _, base := range bases {
			files = append(files, filepath.Join(d, segment.FileName(base, segment.LogSuffix)))
		}
	}
	return files, nil
}

// isPartitionDir reports whether dir is a partition directory rather than
// a data root: it is named like one and holds segment files, or holds no
// directory but its quarantine folder (a partition never written to is
// empty; a root holds partition directories and the offsets store).
func isPartitionDir(dir string) bool {
	// The name is the directory's own: "." inside a partition, or a
	// symbolic link to one, is one.
	name := filepath.Base(filepath.Clean(dir))
	if real, err := vfs.RealPath(dir); err == nil {
		name = filepath.Base(real)
	}
	if _, _, ok := ParsePartitionDir(name); !ok {
		return false
	}
	entries, err := vfs.Default.ReadDir(dir)
	if err != nil {
		return false
	}
	subdirs := false
	for _, e := range entries {
		if k, _ := classifyPartitionFile(e.Name(), e.Type()); k == fileSegment {
			return true
		}
		if e.IsDir() && e.Name() != QuarantineDir {
			subdirs = true
		}
	}
	return !subdirs
}
