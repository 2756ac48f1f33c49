package index

import "fmt"

// UsedOffsetEntries returns the entries of a decoded offset index before
// the first all-zero one (the preallocated tail of an active index starts
// there), and a problem when anything but zeros follows it.
func UsedOffsetEntries(all []OffsetPosition, baseOffset int64) ([]OffsetPosition, error) {
	return usedEntries(all, OffsetPosition{Offset: baseOffset})
}

// UsedTimeEntries is UsedOffsetEntries for a time index.
func UsedTimeEntries(all []TimeOffset, baseOffset int64) ([]TimeOffset, error) {
	return usedEntries(all, TimeOffset{Offset: baseOffset})
}

// usedEntries is UsedOffsetEntries for either kind of entry; zero is the
// entry that all-zero bytes decode to.
func usedEntries[E entry](all []E, zero E) ([]E, error) {
	for i, e := range all {
		if e == zero {
			for j := i + 1; j < len(all); j++ {
				if all[j] != zero {
					return all[:i], fmt.Errorf("%w: entry %d is all zero (the end of the used entries) but entry %d %s follows it", ErrCorrupt, i, j, all[j].describe())
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
//   - every offset-index entry is the position of a batch start and names
//     the offset the index names for that batch (its last offset, as
//     Kafka's LogSegment writes it; the base offset of a batch in
//     seglog's version-1 format: segment.Header.IndexOffset);
//   - every time-index entry names that offset of a batch, and its
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
		c.offs = checkedEntries(c, offsetPath, offsetIdx, baseOffset, offsetFormat)
		for i, e := range c.offs {
			c.byPos[e.Position] = i
		}
	}
	if timeIdx != nil {
		c.times = checkedEntries(c, timePath, timeIdx, baseOffset, timeFormat)
		for i, e := range c.times {
			c.byOff[e.Offset] = i
		}
	}
	c.oSeen = make([]bool, len(c.offs))
	c.tSeen = make([]bool, len(c.times))
	return c
}

// checkedEntries decodes the index file at path, held in b, and returns
// its used entries, noting every problem with them: a partial entry, bytes
// after the used entries, or entries out of order.
func checkedEntries[E entry](c *Checker, path string, b []byte, baseOffset int64, format entryFormat[E]) []E {
	all, err := decodeEntries(b, baseOffset, format)
	if err != nil {
		c.problemf("%s: %v", path, err)
	}
	used, err := usedEntries(all, format.decode(make([]byte, format.size), baseOffset))
	if err != nil {
		c.problemf("%s: %v", path, err)
	}
	for i := 1; i < len(used); i++ {
		if !follows(used[i], used[i-1]) {
			c.problemf("%s: entry %d %s does not follow entry %d %s", path, i, used[i].describe(), i-1, used[i-1].describe())
		}
	}
	return used
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
// log, given the offset index entries name for it (see Checker) and its
// max timestamp.
func (c *Checker) Batch(pos, indexOffset, maxTimestamp int64) {
	if !c.haveMax || maxTimestamp > c.maxTS {
		c.maxTS, c.haveMax = maxTimestamp, true
	}
	if i, ok := c.byPos[pos]; ok {
		c.oSeen[i] = true
		if e := c.offs[i]; e.Offset != indexOffset {
			c.problemf("%s: entry %d {offset %d, position %d}: the batch at position %d is indexed by offset %d", c.offsetPath, i, e.Offset, e.Position, pos, indexOffset)
		}
	}
	if i, ok := c.byOff[indexOffset]; ok {
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
// scanned: an offset at or after next (the offset after the last batch
// scanned) and, for the offset index, a position at or after scanned
// (bytes of the log). It returns how many there were. Those entries are
// what a writer appending meanwhile, or interrupted by a crash, leaves at
// the end of its active segment: a writer writes a batch before its index
// entries, but a reader may read the index after the writer appended
// more. An entry past the data for an offset that was scanned is no such
// thing: Finish reports it.
func (c *Checker) DropPastEnd(scanned, next int64) int {
	n := 0
	for i, seen := range c.oSeen {
		if e := c.offs[i]; !seen && e.Position >= scanned && e.Offset >= next {
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
			c.problemf("%s: entry %d {timestamp %d, offset %d}: offset %d is not the indexed offset of a batch in the log", c.timePath, i, e.Timestamp, e.Offset, e.Offset)
		}
	}
	return c.problems
}
