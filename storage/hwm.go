package storage

import (
	"context"
	"fmt"
	"math"

	"github.com/seglog/seglog/segment"
)

// The high watermark is the offset below which every record is replicated
// (the broker sets it as followers catch up). It is never above EndOffset,
// truncation below it lowers it, and it is checkpointed to high-watermark
// on Sync (when it moved), when a segment rolls, on Truncate and on Close
// (a crash can only make it lower, which shows consumers less, never
// records that were not replicated). Committed reads
// (ReadCommitted, NewCommittedReader, WaitCommitted) stop at it.

const highWatermarkFile = "high-watermark"

// HighWatermark returns the high watermark.
func (v *view) HighWatermark() int64 { return v.hw.Load() }

// SetHighWatermark sets the high watermark. It must lie within
// [StartOffset, EndOffset]; it wakes committed readers that wait.
func (l *Log) SetHighWatermark(hw int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if hw < l.start.Load() || hw > l.end.Load() {
		return fmt.Errorf("%w: high watermark %d outside [%d, %d]", ErrOffsetOutOfRange, hw, l.start.Load(), l.end.Load())
	}
	l.hw.Store(hw)
	l.wakeWaiters()
	return nil
}

// checkpointHighWatermark writes the high watermark if it moved. Sync,
// Truncate and Close call it, possibly at once: ckpt.mu keeps their writes
// (and the record of what was written) in order.
func (l *Log) checkpointHighWatermark() error {
	l.ckpt.mu.Lock()
	defer l.ckpt.mu.Unlock()
	v := l.hw.Load()
	if v == l.repl.hwCheckpointed.Load() {
		return nil
	}
	if err := writeCheckpoint(l.opts.FS, l.dir, highWatermarkFile, v, l.opts.FileMode); err != nil {
		return err
	}
	l.repl.hwCheckpointed.Store(v)
	return nil
}

// loadHighWatermark reads the checkpoint. What the file holds (or, with no
// file, the start offset a missing file means) needs no rewrite at the
// first Sync; a damaged file or a value the log no longer holds does.
func (l *Log) loadHighWatermark() {
	if l.view.loadHighWatermark() {
		l.repl.hwCheckpointed.Store(l.hw.Load())
	} else {
		l.repl.hwCheckpointed.Store(math.MinInt64)
	}
}

// loadHighWatermark reads the high watermark from its file, kept within
// [start, end] (the start when there is none), and reports whether the
// file holds that value (none holds the start).
func (v *view) loadHighWatermark() (checkpointed bool) {
	read, ok, err := readCheckpoint(v.opts.FS, v.dir, highWatermarkFile)
	hw := read
	if err != nil || !ok {
		hw = v.start.Load()
	}
	hw = min(max(hw, v.start.Load()), v.end.Load())
	v.hw.Store(hw)
	return err == nil && ok && hw == read || err == nil && !ok && hw == v.start.Load()
}

// lowerHighWatermark keeps the high watermark within the log after a
// truncation or a deletion from the front.
func (l *Log) clampHighWatermark() {
	l.hw.Store(min(max(l.hw.Load(), l.start.Load()), l.end.Load()))
}

// ReadCommitted is ReadInto bounded by the high watermark: it returns only
// whole batches that lie entirely below it (as Kafka does), so a batch
// that straddles the mark waits until the mark passes its end. From there
// to EndOffset it returns nothing and no error. (NewCommittedReader goes
// further: it returns the records of a straddling batch that are below
// the mark.)
func (v *view) ReadCommitted(dst []byte, offset int64, maxBytes int) ([]byte, error) {
	hw := v.hw.Load()
	data, err := v.readBounded(dst, offset, maxBytes, hw)
	if err != nil {
		return data, err
	}
	sc := segment.ScanBuffer(data, segment.ScanOptions{Limits: v.opts.Limits})
	n := int64(0)
	for sc.Next() && sc.Header().LastOffset() < hw {
		n = sc.End()
	}
	return data[:n], nil
}

// NewCommittedReader is NewReader bounded by the high watermark.
func (v *view) NewCommittedReader(offset int64) *Reader {
	r := v.NewReader(offset)
	r.limit = v.hw.Load
	return r
}

// WaitCommitted blocks until the high watermark is above offset, the
// context is done, or the log is closed.
func (v *view) WaitCommitted(ctx context.Context, offset int64) error {
	return v.waitFor(ctx, func() bool { return v.hw.Load() > offset })
}
