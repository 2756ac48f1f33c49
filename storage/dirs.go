package storage

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// This file exports the package's reading of directories for tools (seglog
// verify, describe, dump --dir): which names of a data root are partitions
// and which are leftovers, and what each file of a partition directory is.
// The verdict on whether a directory can be opened comes from the same
// code that opens it (OpenStore, and the log's own listing), run
// read-only: nothing here changes a byte on disk.

// FileKind says what a name in a partition directory is to the log.
type FileKind int

// The kinds of file in a partition directory.
const (
	// FileOther is not the log's (an operator's notes): left alone.
	FileOther FileKind = iota
	// FileSegment is a segment's data, <base offset, 20 digits>.log.
	FileSegment
	// FileOffsetIndex is a segment's offset index, <base>.index.
	FileOffsetIndex
	// FileTimeIndex is a segment's time index, <base>.timeindex.
	FileTimeIndex
	// FileProducerSnapshot is idempotent producers' state, <offset>.snapshot.
	FileProducerSnapshot
	// FileCheckpoint is one of the one-offset checkpoints
	// (recovery-point, log-start-offset, high-watermark,
	// truncation-point) or the leader epoch cache.
	FileCheckpoint
	// FileManifest is the segment list written at a clean close.
	FileManifest
	// FileCleanShutdown is the clean-shutdown marker.
	FileCleanShutdown
	// FileTopicConfig is the topic's configuration.
	FileTopicConfig
	// FileLeftover is left by an interrupted write or deletion (a
	// *.tmp or *.deleted file, an index without its .log): the next
	// writable open removes it.
	FileLeftover
	// FileRefused is a name or file type the log refuses to open: a
	// segment suffix without a 20-digit base offset, a base offset that
	// leaves no room for a record, a segment file that is not a regular
	// file (a symbolic link).
	FileRefused
)

var fileKindNames = [...]string{"other", "segment", "offset index", "time index", "producer snapshot", "checkpoint", "manifest", "clean-shutdown marker", "topic config", "leftover", "refused"}

// String names the kind.
func (k FileKind) String() string {
	if k < 0 || int(k) >= len(fileKindNames) {
		return fmt.Sprintf("FileKind(%d)", int(k))
	}
	return fileKindNames[k]
}

// Names of the files of a partition directory other than segments, for
// tools.
const (
	CleanShutdownFile = cleanShutdownFile
	ManifestFile      = manifestFile
	TopicConfigFile   = topicConfigFile
	HighWatermarkFile = highWatermarkFile
	LeaderEpochFile   = leaderEpochFile
	TruncationFile    = truncationFile
)

// ClassifyPartitionFile says what the entry name (of type mode, as
// fs.DirEntry.Type gives it) of a partition directory is, and the offset
// its name carries (a segment's base offset, a snapshot's offset; 0
// otherwise). An index is classified by its name alone: whether its .log
// exists is ListPartition's business.
func ClassifyPartitionFile(name string, mode fs.FileMode) (FileKind, int64) {
	if off, ok := segment.ParseFileName(name, snapshotSuffix); ok {
		return FileProducerSnapshot, off
	}
	if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted") {
		return FileLeftover, 0
	}
	for _, s := range []struct {
		suffix string
		kind   FileKind
	}{{segment.LogSuffix, FileSegment}, {segment.IndexSuffix, FileOffsetIndex}, {segment.TimeIndexSuffix, FileTimeIndex}} {
		if !strings.HasSuffix(name, s.suffix) {
			continue
		}
		base, ok := segment.ParseFileName(name, s.suffix)
		if !ok || base > MaxOffset || mode&fs.ModeSymlink != 0 || !mode.IsRegular() {
			return FileRefused, base
		}
		return s.kind, base
	}
	switch name {
	case recoveryPointFile, logStartOffsetFile, highWatermarkFile, truncationFile, leaderEpochFile:
		return FileCheckpoint, 0
	case manifestFile:
		return FileManifest, 0
	case cleanShutdownFile:
		return FileCleanShutdown, 0
	case topicConfigFile:
		return FileTopicConfig, 0
	}
	return FileOther, 0
}

// PartitionFile is one entry of a partition directory.
type PartitionFile struct {
	Name   string
	Kind   FileKind
	Offset int64 // a segment file's base offset, a snapshot's offset
	// Why says, for a leftover or a refused file, what it is.
	Why string
}

// PartitionListing is what ListPartition found in a partition directory.
type PartitionListing struct {
	Dir       string
	Files     []PartitionFile // every entry, sorted by name
	Segments  []int64         // base offsets of the .log files, sorted
	Snapshots []int64         // producer snapshot offsets, sorted
	Clean     bool            // the clean-shutdown marker is there
	// Refused is the error a writable open returns for this directory's
	// names (from the log's own listing), nil when it has none to refuse.
	Refused error
}

// ListPartition lists a partition directory read-only, as the log reads it.
func ListPartition(dir string) (PartitionListing, error) {
	return listPartition(vfs.Default, dir)
}

func listPartition(fsys vfs.FS, dir string) (PartitionListing, error) {
	pl := PartitionListing{Dir: dir}
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return pl, err
	}
	logs := map[int64]bool{}
	for _, e := range entries {
		if k, base := ClassifyPartitionFile(e.Name(), e.Type()); k == FileSegment {
			logs[base] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		k, off := ClassifyPartitionFile(name, e.Type())
		f := PartitionFile{Name: name, Kind: k, Offset: off}
		switch k {
		case FileSegment:
			pl.Segments = append(pl.Segments, off)
		case FileProducerSnapshot:
			pl.Snapshots = append(pl.Snapshots, off)
		case FileCleanShutdown:
			pl.Clean = true
		case FileOffsetIndex, FileTimeIndex:
			if !logs[off] {
				f.Kind, f.Why = FileLeftover, "an index without its .log, left by an interrupted deletion"
			}
		case FileLeftover:
			f.Why = "left by an interrupted write or deletion"
		case FileRefused:
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
	slices.SortFunc(pl.Files, func(a, b PartitionFile) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(pl.Segments)
	slices.Sort(pl.Snapshots)
	// The verdict comes from the log's own listing, read-only.
	probe := &Log{dir: dir, opts: Options{FS: fsys, ReadOnly: true}}
	if _, err := probe.listDir(); err != nil {
		pl.Refused = err
	}
	return pl, nil
}

// RootListing is what ListRoot found in a data root.
type RootListing struct {
	Root string
	// Partitions are the partition directories, sorted by topic, then
	// partition number.
	Partitions []PartitionName
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

// PartitionName is a partition directory of a root.
type PartitionName struct {
	Name      string // <topic>-<partition>
	Topic     string
	Partition int32
	Symlink   bool // refused by OpenStore
}

// ListRoot lists a data root read-only, as OpenStore reads it.
func ListRoot(root string) (RootListing, error) {
	rl := RootListing{Root: root}
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
			rl.Partitions = append(rl.Partitions, PartitionName{Name: name, Topic: topic, Partition: p, Symlink: true})
		case ok && e.IsDir():
			rl.Partitions = append(rl.Partitions, PartitionName{Name: name, Topic: topic, Partition: p})
		default:
			rl.Other = append(rl.Other, name)
		}
	}
	slices.SortFunc(rl.Partitions, func(a, b PartitionName) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	// The verdict comes from OpenStore itself, read-only.
	if s, err := OpenStore(root, StoreOptions{Log: Options{ReadOnly: true}}); err != nil {
		rl.Refused = err
	} else {
		_ = s.Close()
	}
	return rl, nil
}

// IsPartitionDir reports whether dir is a partition directory rather than
// a data root: it is named like one and holds segment files, or holds no
// directory but its quarantine folder (a partition never written to is
// empty; a root holds partition directories and the offsets store).
func IsPartitionDir(dir string) bool {
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
		if k, _ := ClassifyPartitionFile(e.Name(), e.Type()); k == FileSegment {
			return true
		}
		if e.IsDir() && e.Name() != QuarantineDir {
			subdirs = true
		}
	}
	return !subdirs
}
