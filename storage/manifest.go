package storage

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seglog/seglog/internal/vfs"
)

// The manifest is written at a clean Close, just before the clean-shutdown
// marker, and read only when the marker is present: it lists the segments
// with what is known of them, so that a clean open neither lists the
// directory nor opens a sealed segment. Any doubt (a missing, damaged or
// inconsistent manifest) falls back to listing the directory. Text, one
// item a line:
//
//	seglog manifest v1 <segments> <snapshots>
//	<base> <size> <max timestamp> <offset of the max timestamp's batch>   (one per segment; -1: unknown)
//	<snapshot offset>                                                     (one per producer snapshot)
//	<xxhash64 of the lines above, 16 hex digits>
const (
	manifestFile     = "manifest"
	manifestMaxBytes = 64 << 20
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

func (m *manifest) byBase() map[int64]segmentInfo {
	out := make(map[int64]segmentInfo, len(m.Segments))
	for _, s := range m.Segments {
		out[s.Base] = s
	}
	return out
}

func (m *manifest) encode() []byte {
	lines := []string{fmt.Sprintf("seglog %s v1 %d %d", manifestFile, len(m.Segments), len(m.Snapshots))}
	for _, s := range m.Segments {
		lines = append(lines, fmt.Sprintf("%d %d %d %d", s.Base, s.Size, s.MaxTimestamp, s.MaxTimestampOffset))
	}
	for _, o := range m.Snapshots {
		lines = append(lines, strconv.FormatInt(o, 10))
	}
	return encodeChecked(lines)
}

func decodeManifest(b []byte) (*manifest, bool) {
	counts, lines, err := decodeChecked(manifestFile, b)
	if err != nil || len(counts) != 2 {
		return nil, false
	}
	nseg, err1 := strconv.Atoi(counts[0])
	nsnap, err2 := strconv.Atoi(counts[1])
	if err1 != nil || err2 != nil || nseg < 1 || nsnap < 0 || nseg+nsnap != len(lines) {
		return nil, false
	}
	m := &manifest{Segments: make([]segmentInfo, 0, nseg), Snapshots: make([]int64, 0, nsnap)}
	for _, line := range lines[:nseg] {
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, false
		}
		var v [4]int64
		for i := range v {
			x, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return nil, false
			}
			v[i] = x
		}
		if v[0] < 0 || (len(m.Segments) > 0 && v[0] <= m.Segments[len(m.Segments)-1].Base) {
			return nil, false
		}
		m.Segments = append(m.Segments, segmentInfo{Base: v[0], Size: v[1], MaxTimestamp: v[2], MaxTimestampOffset: v[3]})
	}
	for _, line := range lines[nseg:] {
		x, err := strconv.ParseInt(line, 10, 64)
		if err != nil || x < 0 || (len(m.Snapshots) > 0 && x <= m.Snapshots[len(m.Snapshots)-1]) {
			return nil, false
		}
		m.Snapshots = append(m.Snapshots, x)
	}
	return m, true
}

func readManifest(fsys vfs.FS, dir string) (*manifest, bool) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, manifestFile), manifestMaxBytes)
	if err != nil {
		return nil, false
	}
	return decodeManifest(b)
}

// writeManifestLocked writes the manifest of the current segments. The
// caller holds writeMu; the marker written after it makes it count.
func (l *Log) writeManifestLocked() error {
	m := manifest{Snapshots: l.snapshots}
	for _, s := range l.segments() {
		size, ts, tsOff := s.Known()
		m.Segments = append(m.Segments, segmentInfo{Base: s.Base(), Size: size, MaxTimestamp: ts, MaxTimestampOffset: tsOff})
	}
	if err := vfs.WriteFileAtomic(l.opts.FS, filepath.Join(l.dir, manifestFile), m.encode(), l.opts.FileMode); err != nil {
		return fmt.Errorf("storage: write manifest: %w", err)
	}
	return nil
}
