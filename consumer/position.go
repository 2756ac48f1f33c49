package consumer

import "github.com/seglog/seglog/storage"

// positionKind says how a Position is given.
type positionKind int

const (
	earliest positionKind = iota // the log start
	latest                       // the log end
	atOffset                     // an offset
	fromEnd                      // v records before the log end
	atTime                       // the first record at or after v ms since the epoch
	shiftBy                      // v records after (or before) the committed offset
)

// Position is where reading a partition starts, or where a reset moves a
// group's offset: resolved against each partition's log by Resolve. The
// zero Position is Earliest.
type Position struct {
	kind positionKind
	v    int64
}

// Earliest is the log start.
func Earliest() Position { return Position{kind: earliest} }

// Latest is the log end: only records appended from then on.
func Latest() Position { return Position{kind: latest} }

// AtOffset is offset off.
func AtOffset(off int64) Position { return Position{kind: atOffset, v: off} }

// LastRecords is n records before the log end (the log start when it
// holds fewer).
func LastRecords(n int64) Position { return Position{kind: fromEnd, v: n} }

// AtTime is the first record whose timestamp is at or after ms
// (milliseconds since the epoch).
func AtTime(ms int64) Position { return Position{kind: atTime, v: ms} }

// ShiftBy is n records after the group's committed offset (before it when
// n is negative); on a partition without a commit, after the log start.
func ShiftBy(n int64) Position { return Position{kind: shiftBy, v: n} }

// Resolve returns the offset where p lies on l, given the group's
// committed offset there (for ShiftBy; -1: none). The result may lie
// outside [start, end]: Clamp moves it to the nearer end.
func (p Position) Resolve(l *storage.Follower, committed int64) (int64, error) {
	switch p.kind {
	case latest:
		return l.EndOffset(), nil
	case atOffset:
		return p.v, nil
	case fromEnd:
		return max(l.StartOffset(), l.EndOffset()-p.v), nil
	case atTime:
		return l.OffsetForTime(p.v)
	case shiftBy:
		base := committed
		if base < 0 {
			base = l.StartOffset()
		}
		return base + p.v, nil
	}
	return l.StartOffset(), nil
}
