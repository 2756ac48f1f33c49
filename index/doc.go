// Package index owns seglog's two sparse, fixed-width, memory-mapped index
// files: a segment's offset index (.index, offset -> byte position in the
// .log) and its time index (.timeindex, timestamp -> offset).
//
// The package owns the files' bytes and their mappings: creating and
// preallocating an active segment's index, reserving disk blocks ahead of
// the entries so that a full disk is an error from Append rather than a
// SIGBUS through the map, finding the used entries again after a restart,
// binary search, truncation, trimming the file when the segment rolls, and
// sanity checks. Deciding when to add an entry and what it names (Kafka's
// LogSegment rule: the last offset of the first batch past
// IndexIntervalBytes, see package segment) and rebuilding an index that
// fails its check belong to the segment. The files are Kafka's .index and
// .timeindex, byte for byte.
//
// # Format
//
// An index file is a sequence of fixed-width entries, nothing else: no
// header, no checksum (an index is derived data, rebuilt from the .log when
// it fails its sanity check). All integers are big-endian. Offsets are
// stored relative to the segment's base offset, so a segment holds at most
// 2^32 offsets and 4 GiB of log.
//
// Offset index entry, OffsetEntrySize = 8 bytes:
//
//	+---------------------------+---------------------------+
//	| relative offset  uint32   | file position    uint32   |
//	| bytes 0..3  (BE)          | bytes 4..7  (BE)          |
//	+---------------------------+---------------------------+
//
// Time index entry, TimeEntrySize = 12 bytes:
//
//	+-------------------------------------------+---------------------------+
//	| timestamp (ms since epoch)  int64         | relative offset  uint32   |
//	| bytes 0..7  (BE, two's complement)        | bytes 8..11 (BE)          |
//	+-------------------------------------------+---------------------------+
//
// Within a file, entries strictly increase in both fields, and no valid
// entry is all zero bytes. An active index is preallocated (a sparse file
// of Options.MaxBytes, zeros), so its used entries are exactly those before
// the first all-zero entry; a sealed index is trimmed to its used length.
//
// These layouts and sizes never change without a new file version (a new
// file name suffix or a version marker), because files written by older
// releases must keep reading correctly.
//
// # Lookups
//
// Beside the mapped entries, an index keeps in memory a summary: the search
// column (offset, or timestamp) of every 512th entry, 4 bytes per 4 KiB page
// of an offset index. A lookup binary-searches the summary, then searches
// the 512 entries it found in the map (one page of an offset index), or
// only the last 8 KiB of entries when the target is in them (Kafka's warm
// section). The writer keeps the summary up to date as it appends; an index
// opened read-only or followed builds it on its first lookup.
//
// # Concurrency
//
// An index has one writer. Lookup, Len, Entry and Last may run in any number
// of goroutines at the same time as Append: Append writes the entry's bytes
// (and, for every 512th entry, its key in the summary) and then publishes
// the new entry count with an atomic store, and readers load the count
// once, before anything else, and read nothing of an entry at or past it.
// Seal, TruncateTo, Reset and Close must not run beside any other method;
// the owning segment guarantees it. Each method's doc comment repeats its
// rule.
package index
