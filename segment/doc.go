// Package segment owns seglog's record and batch format and one segment of
// a partition log: a .log file of batches with its two sparse indexes.
//
// # Batch format (version 1)
//
// A batch is the unit of writing, checksumming, compression and indexing.
// All integers are big-endian. The header is HeaderSize (65) bytes:
//
//	 offset size field
//	+------+----+----------------------+------------------------------------------+
//	|    0 |  8 | baseOffset   int64   | first offset; assigned by the log        |
//	|    8 |  4 | batchLength  int32   | bytes after this field (size - 12)       |
//	|   12 |  4 | leaderEpoch  int32   | epoch of the leader that wrote it        |
//	|   16 |  1 | version      uint8   | 1                                        |
//	|   17 |  8 | checksum     uint64  | xxhash64 of bytes [25, end)              |
//	+------+----+----------------------+------------------------------------------+  <- covered from here
//	|   25 |  2 | attributes   int16   | bits 0-2 codec, bits 3-15 reserved (0)   |
//	|   27 |  4 | lastOffsetDelta int32| recordCount - 1 (offsets are dense)      |
//	|   31 |  8 | baseTimestamp int64  | first record's time, ms since the epoch  |
//	|   39 |  8 | maxTimestamp int64   | largest record time, ms                  |
//	|   47 |  8 | producerID   int64   | -1: no producer (not idempotent)         |
//	|   55 |  2 | producerEpoch int16  |                                          |
//	|   57 |  4 | baseSequence int32   | producer sequence of the first record    |
//	|   61 |  4 | recordCount  int32   | >= 1                                     |
//	|   65 |    | records              | compressed with the codec when it is set |
//	+------+----+----------------------+------------------------------------------+
//
// baseOffset and leaderEpoch come before the checksum on purpose: the log
// assigns offsets and stamps the epoch by patching those bytes of a batch a
// producer already encoded, without re-encoding it or computing a new
// checksum (SetBaseOffset, SetLeaderEpoch). Everything else is covered.
// Codecs: 0 none, 1 gzip, 2 snappy (block), 3 zstd, 4 s2 (block). Only the
// records section is compressed; the header never is.
//
// Each record, in the (decompressed) records section:
//
//	+-----------------+---------+------------------------------------------+
//	| length          | uvarint | bytes of the record after this field     |
//	| attributes      | 1 byte  | reserved, 0                              |
//	| timestampDelta  | varint  | timestamp - baseTimestamp (zigzag)       |
//	| offsetDelta     | uvarint | offset - baseOffset; record i has i      |
//	| keyLength       | varint  | -1: no key                               |
//	| key             | bytes   |                                          |
//	| valueLength     | varint  | -1: null value                           |
//	| value           | bytes   |                                          |
//	| headerCount     | uvarint |                                          |
//	|   headerKeyLen  | uvarint | then the key bytes                       |
//	|   headerValLen  | varint  | -1: null; then the value bytes           |
//	+-----------------+---------+------------------------------------------+
//
// These layouts never change without a new version byte.
//
// # Decoding is hostile-input safe
//
// Every length read from a batch is checked against what remains and
// against Limits before anything is allocated; a compressed section may not
// expand past Limits.MaxRecordsBytes. Bad bytes are an error wrapping
// ErrCorrupt (a checksum mismatch wraps ErrChecksum, which wraps ErrCorrupt);
// decoding never panics.
//
// # Segments
//
// A Segment is a .log file named by its base offset in 20 digits, with a
// .index (offset -> file position) and a .timeindex (timestamp -> offset),
// see package index. Entries are added after at least IndexIntervalBytes of
// log data since the previous one. The active segment is appended to; a
// sealed one is read-only. Opening a sealed segment reads nothing: files
// and index maps are opened on first use, so a log with thousands of
// segments opens in constant time.
//
// On ext4 and XFS, the active segment of a writer that fsyncs small
// appends has its .log preallocated: zeros written a chunk (256 KiB) past its data, which the
// next fdatasync makes durable, so that the fdatasyncs of the appends
// written over them flush data alone, without a journal commit for a new
// file size or new extents (a writer that leaves the writeback to the OS,
// or fsyncs large amounts, appends past the end). Its file size is therefore not
// its data's end: past the last batch lie zeros. A zeroed header is never
// a batch (version 0), so every scan ends at a zero tail, a zeroed header
// with nothing but zeros after it, without an error; a zeroed header
// followed by anything else is corruption. Recovery cuts a zero tail
// without counting it as damage, Seal and Close cut the preallocated part
// (sealed segments and clean reopens have exact sizes), and sizes reported
// are always the data's.
package segment
