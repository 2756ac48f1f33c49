package storage

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/seglog/seglog/vfs"
)

// The manifest is written at a clean Close, just before the clean-shutdown
// marker, and read only when the marker is present: it lists the segments
// with what is known of them, so that a clean open opens no sealed
// segment. The open checks it against a listing of the directory, unless
// the marker's stamp says the directory is unchanged since (see
// takeUnchangedDir). Any doubt (a missing, damaged or inconsistent
// manifest) falls back to listing the directory and recovering. Its
// format is in codec.go.
const (
	manifestFile     = "manifest"
	manifestMaxBytes = 64 << 20
	// maxMarkerBytes bounds what an open reads of the clean-shutdown
	// marker (a stamp line is under 100 bytes).
	maxMarkerBytes = 256
)

type segmentInfo struct {
	Base               int64
	Size               int64 // -1: unknown
	MaxTimestamp       int64
	MaxTimestampOffset int64 // -1: unknown (and MaxTimestamp with it)
}

type manifest struct {
	Segments  []segmentInfo
	Snapshots []int64
}

func (m *manifest) bases() []int64 {
	out := make([]int64, len(m.Segments))
	for i, s := range m.Segments {
		out[i] = s.Base
	}
	return out
}

// info returns what m says of the segment at base, if it names it.
func (m *manifest) info(base int64) (segmentInfo, bool) {
	i, found := slices.BinarySearchFunc(m.Segments, base, func(s segmentInfo, base int64) int {
		return cmp.Compare(s.Base, base)
	})
	if !found {
		return segmentInfo{}, false
	}
	return m.Segments[i], true
}

func readManifest(fsys vfs.FS, dir string) (m *manifest, sum uint64, ok bool) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, manifestFile), manifestMaxBytes)
	if err != nil {
		return nil, 0, false
	}
	m, ok = decodeManifest(b)
	return m, xxhash.Sum64(b), ok
}

// writeManifestLocked writes the manifest of the current segments. The
// caller holds writeMu; the marker written after it makes it count.
func (l *Log) writeManifestLocked() error {
	m := manifest{Snapshots: l.repl.snapshots}
	for _, s := range l.segments() {
		size, ts, tsOff := s.Known()
		m.Segments = append(m.Segments, segmentInfo{Base: s.Base(), Size: size, MaxTimestamp: ts, MaxTimestampOffset: tsOff})
	}
	b := m.encode()
	if err := vfs.WriteFileAtomic(l.opts.FS, filepath.Join(l.dir, manifestFile), b, l.opts.FileMode); err != nil {
		return fmt.Errorf("storage: write manifest: %w", err)
	}
	l.clean.manifest, l.clean.manifestSum = &m, xxhash.Sum64(b)
	return nil
}
