package retention

import (
	"fmt"
	"time"

	"github.com/seglog/seglog/storage"
)

// FirstUnexpired returns the first offset at or after offset whose segment
// is not expired under maxAge (Kestrel's check at consumption): a consumer
// that asks for it skips an expired head without waiting for the cleaner.
//
// Expiry is by segment, as the cleaner's: a segment is expired when its
// newest timestamp is more than maxAge before now, so the offset returned is
// offset itself or the base of a later segment, and records older than
// maxAge may remain in the segment it lands in. When every segment from
// offset on is expired, the result is the end of the log (the consumer is
// caught up). maxAge <= 0 means no expiry: offset is returned as is.
//
// offset must be within [StartOffset, EndOffset], as for a read; outside it
// the error wraps storage.ErrOffsetOutOfRange (a consumer whose position
// fell below the start resets to StartOffset and asks again). FirstUnexpired
// only reads the segment listing; it may run beside appends, reads and
// the cleaner. If the cleaner advances the start offset meanwhile, the
// result is at least the new start.
func FirstUnexpired(l *storage.Log, offset int64, maxAge time.Duration, now time.Time) (int64, error) {
	if start, end := l.StartOffset(), l.EndOffset(); offset < start || offset > end {
		return 0, fmt.Errorf("retention: first unexpired offset of %s: %w: offset %d, log holds [%d, %d)", l.Dir(), storage.ErrOffsetOutOfRange, offset, start, end)
	}
	if maxAge <= 0 {
		return offset, nil
	}
	segs, err := l.Segments()
	if err != nil {
		return 0, fmt.Errorf("retention: first unexpired offset of %s: %w", l.Dir(), err)
	}
	found := offset
	for i, s := range segs {
		if s.NextOffset <= offset && i < len(segs)-1 {
			continue // wholly before offset
		}
		found = max(offset, s.BaseOffset)
		if !expired(s, maxAge, now) {
			break
		}
		found = max(offset, s.NextOffset)
	}
	// A deletion may have advanced the start past what was listed.
	return max(found, min(l.StartOffset(), l.EndOffset())), nil
}
