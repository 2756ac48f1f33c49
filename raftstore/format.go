package raftstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/raft"
)

// # Entry format (version 1)
//
// Each raft.Log is the value of one record of the storage.Log (key: none;
// timestamp: when StoreLogs ran). All entries of one StoreLogs call are one
// batch. Varints are encoding/binary's (uvarint: unsigned LEB128; varint:
// zigzag), fixed fields are single bytes:
//
//	+-------------+---------+----------------------------------------------+
//	| version     | 1 byte  | 1                                            |
//	| flags       | 1 byte  | bit 0: Data is nil                           |
//	|             |         | bit 1: Extensions is nil                     |
//	|             |         | bit 2: AppendedAt is the zero time.Time      |
//	|             |         | bits 3-7: reserved, 0                        |
//	| type        | 1 byte  | raft.LogType                                 |
//	| index       | uvarint | raft index (>= 1)                            |
//	| term        | uvarint |                                              |
//	| seconds     | varint  | AppendedAt.Unix(); absent when bit 2 is set  |
//	| nanos       | uvarint | AppendedAt.Nanosecond() (< 1e9); likewise    |
//	| dataLen     | uvarint | absent when bit 0 is set                     |
//	| data        | bytes   |                                              |
//	| extLen      | uvarint | absent when bit 1 is set                     |
//	| extensions  | bytes   |                                              |
//	+-------------+---------+----------------------------------------------+
//
// Nothing may follow the last field. The record (and so each entry) is
// covered by its batch's xxhash64 checksum, which every read verifies, so
// the entry carries none of its own. Beside its data, an entry as raft
// writes it (index below 2^21, small term, AppendedAt set, no extensions)
// takes 18 bytes here, 10 of them the time, plus about 8 bytes of record
// framing, and each StoreLogs call a 65-byte batch header.
//
// The index is stored although the offset implies it: it lets Open derive
// the offset-to-index mapping from the data (see the package doc), and
// every GetLog checks it, so a mapping error can never return another
// entry than the one asked for.
//
// This layout never changes without a new version byte; a decoder refuses
// a version it does not know.
const (
	entryVersion byte = 1

	flagNilData       byte = 1 << 0
	flagNilExtensions byte = 1 << 1
	flagZeroTime      byte = 1 << 2
	flagsKnown             = flagNilData | flagNilExtensions | flagZeroTime

	// entryFixed is the version, flags and type bytes.
	entryFixed = 3
)

// entrySize returns the encoded size of l: what appendEntry appends.
func entrySize(l *raft.Log) int {
	n := entryFixed + uvarintLen(l.Index) + uvarintLen(l.Term)
	if !l.AppendedAt.IsZero() {
		n += varintLen(l.AppendedAt.Unix()) + uvarintLen(uint64(l.AppendedAt.Nanosecond()))
	}
	if l.Data != nil {
		n += uvarintLen(uint64(len(l.Data))) + len(l.Data)
	}
	if l.Extensions != nil {
		n += uvarintLen(uint64(len(l.Extensions))) + len(l.Extensions)
	}
	return n
}

// uvarintLen is the length of binary.AppendUvarint's encoding of v.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// varintLen is the length of binary.AppendVarint's encoding of v.
func varintLen(v int64) int { return uvarintLen(uint64(v<<1) ^ uint64(v>>63)) }

// appendEntry appends the encoding of l to dst.
func appendEntry(dst []byte, l *raft.Log) []byte {
	var flags byte
	if l.Data == nil {
		flags |= flagNilData
	}
	if l.Extensions == nil {
		flags |= flagNilExtensions
	}
	if l.AppendedAt.IsZero() {
		flags |= flagZeroTime
	}
	dst = append(dst, entryVersion, flags, byte(l.Type))
	dst = binary.AppendUvarint(dst, l.Index)
	dst = binary.AppendUvarint(dst, l.Term)
	if flags&flagZeroTime == 0 {
		dst = binary.AppendVarint(dst, l.AppendedAt.Unix())
		dst = binary.AppendUvarint(dst, uint64(l.AppendedAt.Nanosecond()))
	}
	if l.Data != nil {
		dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
		dst = append(dst, l.Data...)
	}
	if l.Extensions != nil {
		dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
		dst = append(dst, l.Extensions...)
	}
	return dst
}

// decodeEntry decodes an entry into l. The decoded Data and Extensions are
// copies (one allocation for both): l never aliases b. Bad bytes are an
// error wrapping ErrCorrupt; decodeEntry never panics and allocates no
// more than len(b).
func decodeEntry(b []byte, l *raft.Log) error {
	if len(b) < entryFixed {
		return fmt.Errorf("%w: entry of %d bytes", ErrCorrupt, len(b))
	}
	if b[0] != entryVersion {
		return fmt.Errorf("%w: entry version %d, want %d", ErrCorrupt, b[0], entryVersion)
	}
	flags := b[1]
	if flags&^flagsKnown != 0 {
		return fmt.Errorf("%w: entry flags %#x", ErrCorrupt, flags)
	}
	typ := raft.LogType(b[2])
	d := decbuf{b: b[entryFixed:]}
	index := d.uvarint("index")
	term := d.uvarint("term")
	var at time.Time
	if flags&flagZeroTime == 0 {
		sec := d.varint("seconds")
		nsec := d.uvarint("nanoseconds")
		if d.err == nil && nsec >= 1e9 {
			d.err = fmt.Errorf("nanoseconds %d", nsec)
		}
		if d.err == nil && (sec < minUnixSeconds || sec > maxUnixSeconds) {
			d.err = fmt.Errorf("seconds %d outside time.Time's range", sec)
		}
		at = time.Unix(sec, int64(nsec))
	}
	var data, ext []byte
	if flags&flagNilData == 0 {
		data = d.bytes("data")
	}
	if flags&flagNilExtensions == 0 {
		ext = d.bytes("extensions")
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d bytes after the last field", len(d.b))
	}
	if d.err == nil && index == 0 {
		d.err = fmt.Errorf("index 0")
	}
	if d.err != nil {
		return fmt.Errorf("%w: entry: %w", ErrCorrupt, d.err)
	}
	// One allocation for both slices; each is capped so that an append
	// by the caller cannot overwrite the other.
	buf := make([]byte, len(data)+len(ext))
	copy(buf, data)
	copy(buf[len(data):], ext)
	*l = raft.Log{Index: index, Term: term, Type: typ, AppendedAt: at}
	if data != nil {
		l.Data = buf[:len(data):len(data)]
	}
	if ext != nil {
		l.Extensions = buf[len(data):]
	}
	return nil
}

// entryIndex decodes only the raft index of an encoded entry.
func entryIndex(b []byte) (uint64, error) {
	if len(b) < entryFixed || b[0] != entryVersion {
		return 0, fmt.Errorf("%w: entry header", ErrCorrupt)
	}
	d := decbuf{b: b[entryFixed:]}
	index := d.uvarint("index")
	if d.err != nil || index == 0 {
		return 0, fmt.Errorf("%w: entry index", ErrCorrupt)
	}
	return index, nil
}

// The range of seconds that time.Unix represents without overflow in
// its internal (seconds since year 1) representation.
const (
	minUnixSeconds = -62135596800 // year 1
	maxUnixSeconds = math.MaxInt64 - 62135596800 - 1<<33
)

// decbuf is a bounds-checked reader whose first error sticks.
type decbuf struct {
	b   []byte
	err error
}

func (d *decbuf) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("bad %s varint", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decbuf) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("bad %s varint", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads a uvarint length and that many bytes (aliasing the input).
func (d *decbuf) bytes(what string) []byte {
	n := d.uvarint(what) // its length
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%s length %d, %d bytes remain", what, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decbuf) uint64be(what string) uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.err = fmt.Errorf("%s: 8 bytes, %d remain", what, len(d.b))
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// # The tail-cut redo record
//
// A small file replaced atomically (vfs.WriteFileAtomic: temporary file,
// fsync, rename, directory fsync), ending with an xxhash64 of everything
// before it, so that a damaged record is refused rather than misread:
//
//	+---------+------------+------------+------------------------+----------+
//	| "RSTC"  | version 1  | base int64 | end int64              | batch    | xxhash64 |
//	+---------+------------+------------+------------------------+----------+
//
// base is the offset of the batch being cut, end the offset where the log
// ends after the cut, batch a segment batch (its own checksum) of the
// records [base, end). Integers are big-endian.
//
// # The stable store's journal
//
// The file starts with a 5-byte header, "RSSJ" and version 1, followed by
// one record per Set, appended and fsynced:
//
//	+----------------+-----------------------------------+------------------+
//	| length uint32  | keyLen uvarint | key | value      | xxhash64 uint64  |
//	+----------------+-----------------------------------+------------------+
//	  big-endian       length bytes (the body)             of length + body
//
// The last record of a key wins. Replay stops at a record that runs past
// the end of the file, or fails its checksum with nothing but zeros (or
// nothing at all) after it: that is a Set cut short by a crash, never
// acknowledged, and Open truncates it. A bad record with data after
// it is damage, refused with ErrCorrupt. When the journal outgrows
// stableCompactBytes it is rewritten, one record per key, atomically.
//
// Neither layout changes without a new version byte.
const (
	cutMagic      = "RSTC"
	journalMagic  = "RSSJ"
	fileVersion   = 1
	checksumBytes = 8
	journalHeader = len(journalMagic) + 1
	// recordFraming is a journal record's length and checksum.
	recordFraming = 4 + checksumBytes
)

// seal appends the xxhash64 of b to b.
func seal(b []byte) []byte {
	return binary.BigEndian.AppendUint64(b, xxhash.Sum64(b))
}

// unseal checks a small file's magic, version and trailing checksum and
// returns the bytes between the version and the checksum.
func unseal(b []byte, magic string) ([]byte, error) {
	head := len(magic) + 1
	if len(b) < head+checksumBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(b))
	}
	if string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrCorrupt, b[:len(magic)], magic)
	}
	body := b[:len(b)-checksumBytes]
	if want, got := binary.BigEndian.Uint64(b[len(body):]), xxhash.Sum64(body); want != got {
		return nil, fmt.Errorf("%w: checksum %016x, computed %016x", ErrCorrupt, want, got)
	}
	if v := b[len(magic)]; v != fileVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrCorrupt, v, fileVersion)
	}
	return body[head:], nil
}

// cutRecord is the redo record of a DeleteRange from the back that cuts
// inside a batch: the batch's records below the cut, re-encoded as one
// batch, to be appended at base after the whole batch is truncated.
type cutRecord struct {
	base  int64  // offset of the first record of the batch being cut
	end   int64  // the end offset after the cut: records [base, end) are kept
	batch []byte // the records [base, end), encoded with segment.AppendBatch
}

func (c cutRecord) encode() []byte {
	b := make([]byte, 0, len(cutMagic)+1+16+len(c.batch)+checksumBytes)
	b = append(b, cutMagic...)
	b = append(b, fileVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(c.base))
	b = binary.BigEndian.AppendUint64(b, uint64(c.end))
	b = append(b, c.batch...)
	return seal(b)
}

// decodeCutRecord decodes a tail-cut file. The batch aliases b.
func decodeCutRecord(b []byte) (cutRecord, error) {
	body, err := unseal(b, cutMagic)
	if err != nil {
		return cutRecord{}, err
	}
	d := decbuf{b: body}
	base := int64(d.uint64be("base"))
	end := int64(d.uint64be("end"))
	if d.err != nil {
		return cutRecord{}, fmt.Errorf("%w: tail-cut record: %w", ErrCorrupt, d.err)
	}
	if base < 0 || end <= base || len(d.b) == 0 {
		return cutRecord{}, fmt.Errorf("%w: tail-cut record: base %d, end %d, %d batch bytes", ErrCorrupt, base, end, len(d.b))
	}
	return cutRecord{base: base, end: end, batch: d.b}, nil
}

// maxStableBytes bounds the stable store's journal (and so any key or
// value): raft keeps three small keys there.
const maxStableBytes = 64 << 20

// appendJournalHeader appends the journal's header to b.
func appendJournalHeader(b []byte) []byte {
	return append(append(b, journalMagic...), fileVersion)
}

// appendJournalRecord appends the record of Set(key, val) to b.
func appendJournalRecord(b []byte, key, val []byte) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = append(b, val...)
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return binary.BigEndian.AppendUint64(b, xxhash.Sum64(b[start:]))
}

// replayJournal replays a stable store journal. It returns the keys and
// values (copies), and good, the length of the journal up to the end of
// its last whole record: less than len(b) when a torn Set follows it.
// A journal shorter than its header is damage: the header is written
// (atomically) when the file is created.
func replayJournal(b []byte) (kv map[string][]byte, good int, err error) {
	kv = map[string][]byte{}
	if len(b) < journalHeader {
		return nil, 0, fmt.Errorf("%w: stable journal of %d bytes", ErrCorrupt, len(b))
	}
	if string(b[:len(journalMagic)]) != journalMagic {
		return nil, 0, fmt.Errorf("%w: stable journal magic %q, want %q", ErrCorrupt, b[:len(journalMagic)], journalMagic)
	}
	if v := b[len(journalMagic)]; v != fileVersion {
		return nil, 0, fmt.Errorf("%w: stable journal version %d, want %d", ErrCorrupt, v, fileVersion)
	}
	pos := journalHeader
	for pos < len(b) {
		rest := b[pos:]
		if len(rest) < recordFraming {
			return kv, pos, nil // cut short
		}
		n := int64(binary.BigEndian.Uint32(rest))
		if n > int64(len(rest)-recordFraming) {
			return kv, pos, nil // runs past the end: cut short
		}
		end := 4 + int(n)
		if binary.BigEndian.Uint64(rest[end:]) != xxhash.Sum64(rest[:end]) {
			if allZero(rest[end+checksumBytes:]) {
				return kv, pos, nil // the last record, cut short
			}
			return nil, 0, fmt.Errorf("%w: stable journal record at byte %d fails its checksum, and %d bytes follow it", ErrCorrupt, pos, len(rest)-end-checksumBytes)
		}
		d := decbuf{b: rest[4:end]}
		key := d.bytes("key")
		if d.err != nil {
			return nil, 0, fmt.Errorf("%w: stable journal record at byte %d: %w", ErrCorrupt, pos, d.err)
		}
		kv[string(key)] = append([]byte{}, d.b...)
		pos += end + checksumBytes
	}
	return kv, pos, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
