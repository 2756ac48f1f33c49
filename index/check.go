package index

import "fmt"

// UsedOffsetEntries returns the entries of a decoded offset index before
// the first all-zero one (the preallocated tail of an active index starts
// there), and a problem when anything but zeros follows it.
func UsedOffsetEntries(all []OffsetPosition, baseOffset int64) ([]OffsetPosition, error) {
	for i, e := range all {
		if e.Offset == baseOffset && e.Position == 0 {
			for j := i + 1; j < len(all); j++ {
				if all[j].Offset != baseOffset || all[j].Position != 0 {
					return all[:i], fmt.Errorf("%w: entry %d is all zero (the end of the used entries) but entry %d {offset %d, position %d} follows it", ErrCorrupt, i, j, all[j].Offset, all[j].Position)
				}
			}
			return all[:i], nil
		}
	}
	return all, nil
}

// UsedTimeEntries is UsedOffsetEntries for a time index.
func UsedTimeEntries(all []TimeOffset, baseOffset int64) ([]TimeOffset, error) {
	for i, e := range all {
		if e.Offset == baseOffset && e.Timestamp == 0 {
			for j := i + 1; j < len(all); j++ {
				if all[j].Offset != baseOffset || all[j].Timestamp != 0 {
					return all[:i], fmt.Errorf("%w: entry %d is all zero (the end of the used entries) but entry %d {timestamp %d, offset %d} follows it", ErrCorrupt, i, j, all[j].Timestamp, all[j].Offset)
				}
			}
			return all[:i], nil
		}
	}
	return all, nil
}

// Checker checks a segment's two index files against the batches of its
// .log, without opening or mapping anything: the caller reads the files
// (as bytes) and feeds the batches in log order, one Batch call each, as
// it scans the log (with segment.NewScanner). It checks that
//   - the files hold whole entries, and their used entries (those before
//     the first all-zero one) strictly increase in both fields, with
//     nothing but zeros after them;
//   - every offset-index entry is the position of a batch start whose
//     base offset is the entry's offset;
//   - every time-index entry names the base offset of a batch, and its
//     timestamp is that batch's max timestamp and the largest timestamp
//     of the segment up to that batch (what a time lookup relies on).
//
// Each problem is a string naming the file and the entry. A Checker is not
// safe for concurrent use.
type Checker struct {
	offsetPath, timePath string
	offs                 []OffsetPosition
	times                []TimeOffset
	byPos                map[int64]int
	byOff                map[int64]int
	oSeen, tSeen         []bool
	maxTS                int64
	haveMax              bool
	problems             []string
}

// NewChecker returns a Checker of the offset index holding offsetIdx (read
// from offsetPath) and the time index holding timeIdx (from timePath) of
// the segment with base offset baseOffset. A nil slice stands for a file
// that is not checked (missing, or unreadable: the caller says why).
func NewChecker(offsetPath string, offsetIdx []byte, timePath string, timeIdx []byte, baseOffset int64) *Checker {
	c := &Checker{offsetPath: offsetPath, timePath: timePath, byPos: map[int64]int{}, byOff: map[int64]int{}}
	if offsetIdx != nil {
		all, err := DecodeOffsetEntries(offsetIdx, baseOffset)
		if err != nil {
			c.problemf("%s: %v", offsetPath, err)
		}
		used, err := UsedOffsetEntries(all, baseOffset)
		if err != nil {
			c.problemf("%s: %v", offsetPath, err)
		}
		c.offs = used
		for i, e := range used {
			if i > 0 && (e.Offset <= used[i-1].Offset || e.Position <= used[i-1].Position) {
				c.problemf("%s: entry %d {offset %d, position %d} does not follow entry %d {offset %d, position %d}", offsetPath, i, e.Offset, e.Position, i-1, used[i-1].Offset, used[i-1].Position)
			}
			c.byPos[e.Position] = i
		}
	}
	if timeIdx != nil {
		all, err := DecodeTimeEntries(timeIdx, baseOffset)
		if err != nil {
			c.problemf("%s: %v", timePath, err)
		}
		used, err := UsedTimeEntries(all, baseOffset)
		if err != nil {
			c.problemf("%s: %v", timePath, err)
		}
		c.times = used
		for i, e := range used {
			if i > 0 && (e.Offset <= used[i-1].Offset || e.Timestamp <= used[i-1].Timestamp) {
				c.problemf("%s: entry %d {timestamp %d, offset %d} does not follow entry %d {timestamp %d, offset %d}", timePath, i, e.Timestamp, e.Offset, i-1, used[i-1].Timestamp, used[i-1].Offset)
			}
			c.byOff[e.Offset] = i
		}
	}
	c.oSeen = make([]bool, len(c.offs))
	c.tSeen = make([]bool, len(c.times))
	return c
}

func (c *Checker) problemf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// Problemf adds a problem found by the caller (a damaged log, so that the
// entries after the damage cannot be checked).
func (c *Checker) Problemf(format string, args ...any) { c.problemf(format, args...) }

// OffsetEntries returns how many used entries the offset index has.
func (c *Checker) OffsetEntries() int { return len(c.offs) }

// TimeEntries returns how many used entries the time index has.
func (c *Checker) TimeEntries() int { return len(c.times) }

// Batch checks the entries that refer to the batch at position pos of the
// log, whose base offset and max timestamp are given.
func (c *Checker) Batch(pos, baseOffset, maxTimestamp int64) {
	if !c.haveMax || maxTimestamp > c.maxTS {
		c.maxTS, c.haveMax = maxTimestamp, true
	}
	if i, ok := c.byPos[pos]; ok {
		c.oSeen[i] = true
		if e := c.offs[i]; e.Offset != baseOffset {
			c.problemf("%s: entry %d {offset %d, position %d}: the batch at position %d has base offset %d", c.offsetPath, i, e.Offset, e.Position, pos, baseOffset)
		}
	}
	if i, ok := c.byOff[baseOffset]; ok {
		c.tSeen[i] = true
		e := c.times[i]
		switch {
		case e.Timestamp != maxTimestamp:
			c.problemf("%s: entry %d {timestamp %d, offset %d}: that batch's max timestamp is %d", c.timePath, i, e.Timestamp, e.Offset, maxTimestamp)
		case e.Timestamp != c.maxTS:
			c.problemf("%s: entry %d {timestamp %d, offset %d}: an earlier batch has the larger timestamp %d", c.timePath, i, e.Timestamp, e.Offset, c.maxTS)
		}
	}
}

// DropPastEnd sets aside the entries that refer to data past what was
// scanned: a position at or after scanned (bytes of the log), an offset
// at or after next (the offset after the last batch scanned). It returns
// how many there were. Those entries are what a writer appending
// meanwhile, or interrupted by a crash, leaves at the end of its active
// segment: a writer writes a batch before its index entries, but a reader
// may read the index after the writer appended more.
func (c *Checker) DropPastEnd(scanned, next int64) int {
	n := 0
	for i, seen := range c.oSeen {
		if !seen && c.offs[i].Position >= scanned {
			c.oSeen[i] = true
			n++
		}
	}
	for i, seen := range c.tSeen {
		if !seen && c.times[i].Offset >= next {
			c.tSeen[i] = true
			n++
		}
	}
	return n
}

// Finish reports the entries that matched no batch (scanned is how many
// bytes of the log were scanned, up to any damage) and returns every
// problem found. Call it once, after the last Batch.
func (c *Checker) Finish(scanned int64) []string {
	for i, seen := range c.oSeen {
		if !seen {
			e := c.offs[i]
			what := "is not the start of a batch"
			if e.Position >= scanned {
				what = fmt.Sprintf("is past the end of the valid log data (%d bytes)", scanned)
			}
			c.problemf("%s: entry %d {offset %d, position %d}: position %s", c.offsetPath, i, e.Offset, e.Position, what)
		}
	}
	for i, seen := range c.tSeen {
		if !seen {
			e := c.times[i]
			c.problemf("%s: entry %d {timestamp %d, offset %d}: offset %d is not the base offset of a batch in the log", c.timePath, i, e.Timestamp, e.Offset, e.Offset)
		}
	}
	return c.problems
}
