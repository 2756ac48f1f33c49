// Package segment owns seglog's record and batch format and one segment of
// a partition log: a .log file of batches with its two sparse indexes.
//
// # Batch format: Kafka's RecordBatch v2
//
// A batch is the unit of writing, checksumming, compression and indexing,
// and it is Kafka's RecordBatch v2 (DefaultRecordBatch), byte for byte:
// what every Kafka client sends, stored as it came and served back
// unchanged. All integers are big-endian. The header is HeaderSize (61)
// bytes:
//
//	 offset size field
//	+------+----+-------------------------+------------------------------------------+
//	|    0 |  8 | baseOffset       int64  | first offset; assigned by the log        |
//	|    8 |  4 | batchLength      int32  | bytes after this field (size - 12)       |
//	|   12 |  4 | partitionLeaderEpoch    | epoch of the leader that appended it     |
//	|   16 |  1 | magic            int8   | 2                                        |
//	|   17 |  4 | crc              uint32 | CRC-32C (Castagnoli) of bytes [21, end)  |
//	+------+----+-------------------------+------------------------------------------+  <- covered from here
//	|   21 |  2 | attributes       int16  | bits 0-2 codec, 3 timestamp type         |
//	|      |    |                         | (1: LogAppendTime), 4 transactional,     |
//	|      |    |                         | 5 control, 6 delete horizon in           |
//	|      |    |                         | baseTimestamp; 7-15 unused               |
//	|   23 |  4 | lastOffsetDelta  int32  | offset of the last record - baseOffset   |
//	|   27 |  8 | baseTimestamp    int64  | first record's time, ms since the epoch  |
//	|   35 |  8 | maxTimestamp     int64  | largest record time (LogAppendTime: the  |
//	|      |    |                         | append time, which every record takes)   |
//	|   43 |  8 | producerId       int64  | -1: no producer (not idempotent)         |
//	|   51 |  2 | producerEpoch    int16  | -1 without a producer                    |
//	|   53 |  4 | baseSequence     int32  | producer sequence of the first record    |
//	|   57 |  4 | recordsCount     int32  | records that follow                      |
//	|   61 |    | records                 | compressed with the codec when it is set |
//	+------+----+-------------------------+------------------------------------------+
//
// baseOffset and partitionLeaderEpoch come before the CRC: the log assigns
// offsets and stamps the epoch by patching those bytes of a batch a
// producer encoded, without re-encoding it or computing a new CRC
// (SetBaseOffset, SetLeaderEpoch). A log whose timestamps are
// LogAppendTime is the one case that changes covered bytes: it sets the
// timestamp-type bit and maxTimestamp and computes the CRC again
// (SetLogAppendTime). Segment.Place does all three for the log, and the
// segment alone decides that it is full (Options.Roll, its indexes, its
// hard limits): Append then returns ErrFull. Codecs, Kafka's numbers: 0 none, 1 gzip, 2 snappy
// (written as one raw block; the xerial framing Kafka's Java client writes
// is read too), 3 lz4 (the LZ4 frame format), 4 zstd. Only the records
// section is compressed; the header never is.
//
// The batch takes lastOffsetDelta+1 offsets. Its records' offset deltas
// increase and are at most lastOffsetDelta; they need not be dense (a
// compacted batch keeps its lastOffsetDelta when records go). A control
// batch holds transaction markers; record readers skip it, batch reads
// return it. A batch from a client must have magic 2 and at least one
// record (CheckBatch).
//
// Each record, in the (decompressed) records section; every number is a
// zigzag varint (Kafka's varint and varlong):
//
//	+-------------------+---------+------------------------------------------+
//	| length            | varint  | bytes of the record after this field     |
//	| attributes        | int8    | unused (Kafka writes 0)                  |
//	| timestampDelta    | varlong | timestamp - baseTimestamp                |
//	| offsetDelta       | varint  | offset - baseOffset                      |
//	| keyLength         | varint  | -1: no key                               |
//	| key               | bytes   |                                          |
//	| valueLength       | varint  | -1: null value                           |
//	| value             | bytes   |                                          |
//	| headersCount      | varint  |                                          |
//	|   headerKeyLength | varint  | then the key bytes                       |
//	|   headerValueLen  | varint  | -1: null; then the value bytes           |
//	+-------------------+---------+------------------------------------------+
//
// A control record's key is a version (int16, 0) and a type (int16: 0
// ABORT, 1 COMMIT); a marker's value is a version (int16) and the
// coordinator epoch (int32) (ParseControlRecord). These layouts are
// Kafka's and never change; a new layout is a new magic byte.
//
// # Reading version 1
//
// Data written before seglog switched to Kafka's format holds version-1
// batches (magic 1 at byte 16), which are read, recovered, truncated and
// indexed beside v2 ones (a segment may hold both), never written. Their
// header is HeaderSizeV1 (65) bytes: the same fields in the same order, but
// an 8-byte xxhash64 at byte 17 covering bytes [25, end), so every later
// field sits 4 bytes further on; attribute bits other than the codec must
// be 0; offsets are dense (lastOffsetDelta = recordCount - 1);
// maxTimestamp is at least baseTimestamp. Codecs there: 0 none, 1 gzip, 2
// snappy (block), 3 zstd, 4 s2 (block; CodecS2). Records have a uvarint
// length, offset delta, header count and header key length (the rest
// zigzag, as in v2), and a record attributes byte that must be 0. Their
// index entries name a batch's base offset (Header.IndexOffset).
//
// # Decoding is hostile-input safe
//
// Every length read from a batch is checked against what remains and
// against Limits before anything is allocated; a compressed section may not
// expand past Limits.MaxRecordsBytes. Bad bytes read from disk are an
// error wrapping ErrCorrupt (a checksum mismatch wraps ErrChecksum, which
// wraps ErrCorrupt); a client's malformed or oversized batch (CheckBatch,
// CheckHeader) is an error wrapping ErrInvalid or ErrTooLarge, never
// ErrCorrupt. Decoding never panics.
//
// # Segments
//
// A Segment is a .log file named by its base offset in 20 digits, with a
// .index (offset -> file position) and a .timeindex (timestamp -> offset),
// see package index, written as Kafka's LogSegment writes them, so that a
// segment's three files are those Kafka writes for the same batches: for
// each batch appended (or rescanned by recovery), the largest timestamp
// so far is noted with the last offset of its batch; when more than
// IndexIntervalBytes of batches lie between the last entry's batch (or
// the start of the file) and this one, the offset index gets an entry
// naming this batch's last offset and its position, and the time index an
// entry of the largest timestamp so far and its offset, if that timestamp
// is larger than the last time entry's (or than -1 without one). Sealing
// or closing the segment adds that time entry once more, when it grew. A
// lookup of offset o binary-searches the largest entry at or below o,
// whose batch holds offsets up to the entry's, and scans forward from its
// position. The active segment is appended to; a
// sealed one is read-only. Opening a sealed segment reads nothing: files
// and index maps are opened on first use, so a log with thousands of
// segments opens in constant time.
//
// On ext4 and XFS, the active segment's .log is preallocated. For a
// writer that fsyncs small appends: zeros written a chunk (256 KiB) past
// its data, which the next fdatasync makes durable, so that the
// fdatasyncs of the appends written over them flush data alone, without
// a journal commit for a new file size or new extents. For a writer that
// leaves the writeback to the OS, or fsyncs large amounts (zeros would
// double its writes): blocks reserved with fallocate(2) past its data,
// as far as the segment holds data (at least 256 KiB, at most 4 MiB),
// again once the data comes within half of that of their end, so that
// an append allocates no blocks and sets no new size (where fallocate
// fails, appends go past the end); an active segment thus holds at most
// its data's size, 256 KiB at least and 4 MiB at most, of disk more than
// its data, which sizes and retention do not count. Its file size is therefore not its
// data's end: past the last batch lie zeros (reserved blocks read as
// zeros). A zeroed header is never
// a batch (version 0), so every scan ends at a zero tail, a zeroed header
// with nothing but zeros after it, without an error; a zeroed header
// followed by anything else is corruption. Recovery cuts a zero tail
// without counting it as damage, Seal and Close cut the preallocated part
// (sealed segments and clean reopens have exact sizes), and sizes reported
// are always the data's.
package segment
