package segment

import (
	"github.com/seglog/seglog/index"
)

// OffsetIndexEntry is one entry of a segment's .index: the batch whose
// indexed offset is Offset starts at byte Position of the .log.
type OffsetIndexEntry struct{ Offset, Position int64 }

// TimeIndexEntry is one entry of a segment's .timeindex: the largest
// timestamp up to the batch whose indexed offset is Offset.
type TimeIndexEntry struct{ Timestamp, Offset int64 }

// IndexContent is what the index decoders found in the bytes of an index
// file, for tools that print it.
type IndexContent struct {
	// Offsets or Times are the used entries: those before the first
	// all-zero one (the preallocated space of an active index starts
	// there).
	Offsets []OffsetIndexEntry
	Times   []TimeIndexEntry
	// Entries is how many whole entries the bytes hold, used or not.
	Entries int
	// EntrySize is the size of one entry in bytes.
	EntrySize int
	// Tail is damage after the used entries (something other than zeros
	// follows the first all-zero entry), at byte len(used)*EntrySize.
	Tail error
	// Err is damage that stops the decoding (a partial entry, entries
	// that do not increase), at byte Entries*EntrySize.
	Err error
}

// DecodeOffsetIndex decodes the bytes of the .index of the segment at
// base with the index package's own decoder. It never panics.
func DecodeOffsetIndex(b []byte, base int64) IndexContent {
	all, err := index.DecodeOffsetEntries(b, base)
	used, tail := index.UsedOffsetEntries(all, base)
	c := IndexContent{Entries: len(all), EntrySize: index.OffsetEntrySize, Tail: tail, Err: err}
	c.Offsets = make([]OffsetIndexEntry, len(used))
	for i, e := range used {
		c.Offsets[i] = OffsetIndexEntry{Offset: e.Offset, Position: e.Position}
	}
	return c
}

// DecodeTimeIndex is DecodeOffsetIndex for a .timeindex.
func DecodeTimeIndex(b []byte, base int64) IndexContent {
	all, err := index.DecodeTimeEntries(b, base)
	used, tail := index.UsedTimeEntries(all, base)
	c := IndexContent{Entries: len(all), EntrySize: index.TimeEntrySize, Tail: tail, Err: err}
	c.Times = make([]TimeIndexEntry, len(used))
	for i, e := range used {
		c.Times[i] = TimeIndexEntry{Timestamp: e.Timestamp, Offset: e.Offset}
	}
	return c
}
