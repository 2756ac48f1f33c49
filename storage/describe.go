package storage

import (
	"errors"
	"io/fs"

	"github.com/seglog/seglog/segment"
)

// SegmentDetail is a segment as tools describe it.
type SegmentDetail struct {
	SegmentInfo
	// Records counts the segment's records at or after the log start.
	Records int64
	// FirstTimestamp is the base timestamp of the segment's first batch
	// (ms); -1 when the segment is empty or its first batch unreadable.
	FirstTimestamp int64
}

// Description is what a follower reads of its partition for tools such
// as seglog describe.
type Description struct {
	StartOffset   int64
	EndOffset     int64
	HighWatermark int64
	// RecoveryPoint is the offset below which the writer has fsynced
	// every record; -1 when the partition has no recovery point file.
	RecoveryPoint int64
	Bytes         int64 // of all .log files
	Segments      []SegmentDetail
}

// describeTries is how many times Describe reads the partition again
// after a segment it listed vanished.
const describeTries = 3

// Describe refreshes the follower (Refresh) and returns the partition's
// offsets, high watermark, recovery point and segments. Beside a writer
// whose retention deletes segments, a segment listed may be gone before
// it is read: Describe then refreshes and reads again, up to three times.
func (f *Follower) Describe() (Description, error) {
	var d Description
	var err error
	for try := 0; try == 0 || errors.Is(err, fs.ErrNotExist) && try <= describeTries; try++ {
		if _, err = f.Refresh(); err == nil {
			d, err = f.describe()
		}
	}
	return d, err
}

func (f *Follower) describe() (Description, error) {
	d := Description{HighWatermark: f.HighWatermark(), RecoveryPoint: -1}
	if rp, ok, err := readCheckpoint(f.opts.FS, f.dir, RecoveryPointFile); err != nil {
		return d, err
	} else if ok {
		d.RecoveryPoint = rp
	}
	segs, err := f.Segments()
	if err != nil {
		return d, err
	}
	d.StartOffset, d.EndOffset = f.StartOffset(), f.EndOffset()
	byBase := map[int64]*segment.Segment{}
	for _, s := range f.segments() {
		byBase[s.Base()] = s
	}
	d.Segments = make([]SegmentDetail, 0, len(segs))
	for _, s := range segs {
		sd := SegmentDetail{SegmentInfo: s, Records: s.NextOffset - max(s.BaseOffset, d.StartOffset), FirstTimestamp: -1}
		sd.Records = max(0, sd.Records)
		if seg := byBase[s.BaseOffset]; seg != nil {
			if h, ok, err := seg.FirstBatch(); err == nil && ok {
				sd.FirstTimestamp = h.BaseTimestamp
			}
		}
		d.Bytes += s.Size
		d.Segments = append(d.Segments, sd)
	}
	return d, nil
}
