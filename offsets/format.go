package offsets

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// The layouts are drawn in the package doc. These constants never change
// without a new format version.
const (
	journalMagic       = "SGOJ"
	snapshotMagic      = "SGOS"
	formatVersion      = 1
	journalHeaderSize  = 16
	snapshotHeaderSize = 32
	recordHeaderSize   = 12 // checksum u64, length u32

	// MaxNameBytes is the longest group or topic name.
	MaxNameBytes = 255
	// MaxRecordBytes is the largest journal record (type and body): it
	// bounds a CommitBatch.
	MaxRecordBytes = 16 << 20

	// maxSnapshotBytes bounds what Open reads as a snapshot.
	maxSnapshotBytes = 1 << 34

	minEntryBytes    = 2 + 4 + 8 + 1 // topic str (>= 2), partition, offset, metadata len
	minSnapGroup     = 2 + 1         // name, ntopics
	minSnapTopic     = 2 + 1         // name, nparts
	minSnapPartition = 4 + 8 + 8 + 1 // partition, offset, time, metadata len
)

// Record types.
const (
	recCommit      byte = 1
	recDeleteGroup byte = 2
	recSubscribe   byte = 3
	recUnsubscribe byte = 4
	recDeleteTopic byte = 5
)

// ---- encoding ----

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// beginRecord appends a record header to be filled by finishRecord, and the
// type. It returns the record's start.
func beginRecord(b []byte, typ byte) ([]byte, int) {
	start := len(b)
	return append(b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, typ), start
}

// finishRecord fills in the length and checksum of the record at start.
func finishRecord(b []byte, start int) {
	binary.LittleEndian.PutUint32(b[start+8:], uint32(len(b)-start-recordHeaderSize))
	binary.LittleEndian.PutUint64(b[start:], xxhash.Sum64(b[start+8:]))
}

func appendCommitHead(b []byte, group string, now int64, n int) ([]byte, int) {
	b, start := beginRecord(b, recCommit)
	b = appendStr(b, group)
	b = binary.LittleEndian.AppendUint64(b, uint64(now))
	return binary.AppendUvarint(b, uint64(n)), start
}

func appendEntry(b []byte, topic string, partition int32, offset int64, metadata string) []byte {
	b = appendStr(b, topic)
	b = binary.LittleEndian.AppendUint32(b, uint32(partition))
	b = binary.LittleEndian.AppendUint64(b, uint64(offset))
	return appendStr(b, metadata)
}

func appendGroupTopic(b []byte, typ byte, group, topic string) []byte {
	b, start := beginRecord(b, typ)
	b = appendStr(b, group)
	if typ != recDeleteGroup {
		b = appendStr(b, topic)
	}
	finishRecord(b, start)
	return b
}

func appendDeleteTopic(b []byte, topic string) []byte {
	b, start := beginRecord(b, recDeleteTopic)
	b = appendStr(b, topic)
	finishRecord(b, start)
	return b
}

func appendJournalHeader(b []byte, gen uint64) []byte {
	b = append(b, journalMagic...)
	b = append(b, formatVersion, 0, 0, 0)
	return binary.LittleEndian.AppendUint64(b, gen)
}

// ---- decoding ----

// decbuf decodes from a byte slice with bounds checks. The first error
// sticks: later reads return zero values. Reasons are static strings so that
// decoding allocates nothing.
type decbuf struct {
	b   []byte
	off int
	err string
	at  int // offset of the first error
	// claim, when above len(b), is the length that b is a prefix of (a
	// torn record's body): running out of b within it fails with cutShort,
	// and counts and lengths are checked against it.
	claim int
}

// cutShort is the reason of a decbuf whose bytes end before its claim: a
// prefix of a well-formed body, as far as it goes.
const cutShort = "cut short"

func (d *decbuf) fail(reason string) {
	if d.err == "" {
		d.err, d.at = reason, d.off
	}
}

func (d *decbuf) left() int { return len(d.b) - d.off }

// room is what remains of the claim (of b, without one).
func (d *decbuf) room() int { return max(d.claim, len(d.b)) - d.off }

// short fails with cutShort if n bytes fit in the claim, else with reason.
func (d *decbuf) short(n uint64, reason string) {
	if n <= uint64(d.room()) {
		reason = cutShort
	}
	d.fail(reason)
}

// zeros is what take returns in place of the bytes it does not have.
var zeros [8]byte

// take returns the next n <= 8 bytes, or n zero bytes after an error or
// when fewer than n are left (so that the fixed-width reads return zero).
func (d *decbuf) take(n int) []byte {
	if d.err != "" || d.left() < n {
		d.short(uint64(n), "truncated")
		return zeros[:n]
	}
	d.off += n
	return d.b[d.off-n : d.off]
}

func (d *decbuf) u8() byte { return d.take(1)[0] }

func (d *decbuf) u32() uint32 { return binary.LittleEndian.Uint32(d.take(4)) }

func (d *decbuf) u64() uint64 { return binary.LittleEndian.Uint64(d.take(8)) }

func (d *decbuf) uvarint() uint64 {
	if d.err != "" {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n == 0 && d.room() > d.left() {
		d.fail(cutShort) // the varint goes on past the bytes there are
		return 0
	}
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	if n > 1 && d.b[d.off+n-1] == 0 {
		d.fail("varint not in its shortest form") // one encoding per value
		return 0
	}
	d.off += n
	return v
}

func (d *decbuf) bytes(n uint64) []byte {
	if d.err != "" {
		return nil
	}
	if n > uint64(d.left()) {
		d.short(n, "length beyond the end")
		return nil
	}
	v := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return v
}

// name reads a group or topic name: 1..MaxNameBytes bytes.
func (d *decbuf) name() []byte {
	n := d.uvarint()
	if d.err == "" && (n == 0 || n > MaxNameBytes) {
		d.fail("name length out of range")
	}
	return d.bytes(n)
}

// head reads what comes first in a snapshot's group or topic: its name and
// how many topics or partitions follow, each at least minSize bytes; ok is
// false after an error.
func (d *decbuf) head(minSize int) (name []byte, n int, ok bool) {
	name = d.name()
	n = d.count(minSize)
	return name, n, d.err == ""
}

// after reports whether name sorts after prev (nil before the first name),
// and fails with reason when it does not.
func (d *decbuf) after(prev, name []byte, reason string) bool {
	if prev != nil && bytes.Compare(prev, name) >= 0 {
		d.fail(reason)
		return false
	}
	return true
}

func (d *decbuf) str() []byte { return d.bytes(d.uvarint()) }

// count reads a count of items of at least minSize bytes each, refusing one
// that the remaining bytes cannot hold, so that it is safe as a size hint.
func (d *decbuf) count(minSize int) int {
	n := d.uvarint()
	if d.err == "" && n > uint64(d.room()/minSize) {
		d.fail("count larger than the remaining bytes")
		return 0
	}
	return int(n)
}

func (d *decbuf) partition() int32 {
	v := d.u32()
	if v > math.MaxInt32 {
		d.fail("negative partition")
	}
	return int32(v)
}

func (d *decbuf) offset() int64 {
	v := d.u64()
	if v > math.MaxInt64 {
		d.fail("negative offset")
	}
	return int64(v)
}

func (d *decbuf) end() {
	if d.err == "" && d.room() != 0 {
		d.fail("trailing bytes")
	}
}

// ---- journal ----

// checkRecordAt checks the framing and checksum of the record at off and the
// syntax of its body. It returns the record's total size, or a reason;
// malformed is true when the checksum matched but the body did not decode.
func checkRecordAt(data []byte, off int) (size int, reason string, malformed bool) {
	rest := data[off:]
	if len(rest) < recordHeaderSize {
		return 0, "truncated record header", false
	}
	n := binary.LittleEndian.Uint32(rest[8:])
	switch {
	case n == 0:
		return 0, "zero record length", false
	case n > MaxRecordBytes:
		return 0, "record length over the maximum", false
	case uint64(n) > uint64(len(rest)-recordHeaderSize):
		return 0, "record extends beyond the end of the file", false
	}
	size = recordHeaderSize + int(n)
	if xxhash.Sum64(rest[8:size]) != binary.LittleEndian.Uint64(rest) {
		return 0, "checksum mismatch", false
	}
	if r := decodeRecord(nil, rest[recordHeaderSize:size]); r != "" {
		return 0, "bad record: " + r, true
	}
	return size, "", false
}

// scanRecords checks data, a piece of a journal that starts at a record
// boundary: it returns the length of its prefix made of whole valid records
// and their number and, when that prefix is not all of data, why the next
// record is not valid (malformed: its checksum matched but its body did not
// decode).
func scanRecords(data []byte) (valid, records int, reason string, malformed bool) {
	for valid < len(data) {
		size, r, m := checkRecordAt(data, valid)
		if r != "" {
			return valid, records, r, m
		}
		valid += size
		records++
	}
	return valid, records, "", false
}

// tornAt reports whether the record at off in data, the end of a journal,
// is what an interrupted append leaves: a whole header whose length
// reaches past the end, and a body that is, as far as it goes, the start
// of a well-formed one. Its metadata may then hold anything (the
// client's bytes, a whole record included): it is not searched for
// records, and the bytes are a torn tail. A record whose length was
// damaged shows a whole body before the end, or a malformed one.
func tornAt(data []byte, off int) bool {
	rest := data[off:]
	if len(rest) < recordHeaderSize {
		return false
	}
	n := binary.LittleEndian.Uint32(rest[8:])
	if n == 0 || n > MaxRecordBytes || uint64(n) <= uint64(len(rest)-recordHeaderSize) {
		return false
	}
	return decodeBody(nil, &decbuf{b: rest[recordHeaderSize:], claim: int(n)}) == cutShort
}

// damagedAfter reports whether the bad record at off in data, the end of a
// journal from its byte base on, is followed by a valid one (damage in the
// middle of the journal), unless it is a torn append (tornAt) or a page
// that a power cut lost lies between them (lostPage).
func damagedAfter(data []byte, base int64, off int) bool {
	if tornAt(data, off) {
		return false
	}
	q := nextValidRecord(data, off+1)
	return q >= 0 && !lostPage(data, base, off, q)
}

// lostPageBytes is the unit in which a power cut loses appended data that
// no fsync covered: a filesystem block, or a page of the page cache.
const lostPageBytes = 4096

// lostPage reports whether data, a journal's bytes from its byte base on,
// holds between positions p and q zeros up to a lostPageBytes boundary of
// the file, from p or from the boundary before: what a power cut leaves
// of a page that the OS had not written while it wrote later ones (the
// file's size reached the disk, the page's data did not). The records
// after it were not acknowledged: an fsync that covered them would have
// covered the page.
func lostPage(data []byte, base int64, p, q int) bool {
	for x := (base+int64(p))/lostPageBytes*lostPageBytes + lostPageBytes; x <= base+int64(q); x += lostPageBytes {
		end := int(x - base)
		start := max(p, end-lostPageBytes)
		if !slices.ContainsFunc(data[start:end], func(b byte) bool { return b != 0 }) {
			return true
		}
	}
	return false
}

// validRecordAfter reports whether a valid record starts anywhere in data
// after position from.
func validRecordAfter(data []byte, from int) bool {
	return nextValidRecord(data, from) >= 0
}

// nextValidRecord returns the first position at or after from where a
// valid record starts in data, or -1.
func nextValidRecord(data []byte, from int) int {
	for q := from; q+recordHeaderSize < len(data); q++ {
		if _, r, _ := checkRecordAt(data, q); r == "" {
			return q
		}
	}
	return -1
}

// lostHeader reports whether a journal's content is what an interrupted
// creation leaves: shorter than the header (empty, or torn), or a header
// that fails its checks (reason, from journalHeaderReason) with no valid
// record anywhere after it. Records are appended only after the header is
// fsynced, and an fsync that made a record durable made the header durable
// with it: a header that did not reach the disk whole (its first bytes
// written and zeros after, the file's size without its data, a lazy
// writeback's torn block) comes with no acknowledged record, whatever it
// looks like. A bad header in front of records is damage, refused.
func lostHeader(data []byte, reason string) bool {
	if len(data) < journalHeaderSize {
		return true
	}
	return reason != "" && !validRecordAfter(data, journalHeaderSize)
}

// journalHeaderReason checks a journal's header (data holds at least
// journalHeaderSize bytes) and says what is wrong with it ("" if nothing).
func journalHeaderReason(data []byte, gen uint64) string {
	switch {
	case string(data[:4]) != journalMagic:
		return "bad journal magic"
	case data[4] != formatVersion:
		return fmt.Sprintf("unsupported journal version %d", data[4])
	case data[5]|data[6]|data[7] != 0:
		return "reserved header bytes not zero"
	case binary.LittleEndian.Uint64(data[8:]) != gen:
		return fmt.Sprintf("journal header generation %d, file name says %d", binary.LittleEndian.Uint64(data[8:]), gen)
	}
	return ""
}

// journalResult is what replayJournal found.
type journalResult struct {
	end     int    // length of the valid prefix (0: the header must be rewritten)
	reason  string // corruption in the middle at end ("" if none)
	records int
	newer   bool // the header is a later version's: refused, never cut
}

// replayJournal applies the valid records of a journal's content to st (nil:
// check only). Records before a corruption are applied.
func replayJournal(data []byte, gen uint64, st *state) journalResult {
	var reason string
	if len(data) >= journalHeaderSize {
		reason = journalHeaderReason(data, gen)
		if string(data[:4]) == journalMagic && data[4] > formatVersion {
			// Whole (a header that did not reach the disk whole shows
			// zeros, not another version), and written by a later seglog,
			// with records this one may not read: not an interrupted
			// creation, whatever follows it.
			return journalResult{reason: reason, newer: true}
		}
	}
	if lostHeader(data, reason) {
		return journalResult{end: 0} // creation interrupted: rewrite the header
	}
	if reason != "" {
		return journalResult{reason: reason}
	}
	res := journalResult{end: journalHeaderSize}
	for res.end < len(data) {
		size, reason, malformed := checkRecordAt(data, res.end)
		if reason != "" {
			if malformed || damagedAfter(data, 0, res.end) {
				res.reason = reason
			}
			return res
		}
		if st != nil {
			decodeRecord(st, data[res.end+recordHeaderSize:res.end+size]) // checked above
		}
		res.records++
		res.end += size
	}
	return res
}

// ---- snapshot ----

// sortedKeys returns the keys of m, sorted (empty, not nil, when m is).
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return appendSortedKeys(make([]K, 0, len(m)), m)
}

// appendSortedKeys appends the keys of m to dst, sorted.
func appendSortedKeys[K cmp.Ordered, V any](dst []K, m map[K]V) []K {
	start := len(dst)
	for k := range m {
		dst = append(dst, k)
	}
	slices.Sort(dst[start:])
	return dst
}

func encodeSnapshot(b []byte, st *state, gen uint64) []byte {
	b = append(b[:0], snapshotMagic...)
	b = append(b, formatVersion, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, gen)
	b = append(b, make([]byte, 16)...) // body length and checksum, below
	names := sortedKeys(st.groups)
	b = binary.AppendUvarint(b, uint64(len(names)))
	var topics []string
	var parts []int32
	for _, gname := range names {
		g := st.groups[gname]
		b = appendStr(b, gname)
		topics = appendSortedKeys(topics[:0], g.topics)
		b = binary.AppendUvarint(b, uint64(len(topics)))
		for _, tname := range topics {
			t := g.topics[tname]
			b = appendStr(b, tname)
			parts = appendSortedKeys(parts[:0], t.parts)
			b = binary.AppendUvarint(b, uint64(len(parts)))
			for _, p := range parts {
				pos := t.parts[p]
				b = binary.LittleEndian.AppendUint32(b, uint32(p))
				b = binary.LittleEndian.AppendUint64(b, uint64(pos.offset))
				b = binary.LittleEndian.AppendUint64(b, uint64(pos.time))
				b = appendStr(b, pos.metadata)
			}
		}
	}
	body := b[snapshotHeaderSize:]
	binary.LittleEndian.PutUint64(b[16:], uint64(len(body)))
	binary.LittleEndian.PutUint64(b[24:], xxhash.Sum64(body))
	return b
}

// snapshotHeader checks the fixed fields of a snapshot's header (the first
// snapshotHeaderSize bytes of data, or fewer) and returns its generation, or
// the byte position and the reason it is bad. The body length and checksum
// are decodeSnapshot's.
func snapshotHeader(data []byte) (gen uint64, pos int64, reason string) {
	switch {
	case len(data) < snapshotHeaderSize:
		return 0, 0, "shorter than the snapshot header"
	case string(data[:4]) != snapshotMagic:
		return 0, 0, "bad snapshot magic"
	case data[4] != formatVersion:
		return 0, 4, fmt.Sprintf("unsupported snapshot version %d", data[4])
	case data[5]|data[6]|data[7] != 0:
		return 0, 5, "reserved header bytes not zero"
	}
	return binary.LittleEndian.Uint64(data[8:]), 0, ""
}

// decodeSnapshot decodes a snapshot into a new state. On failure it returns
// the byte position and the reason.
func decodeSnapshot(data []byte) (st *state, gen uint64, pos int64, reason string) {
	if _, pos, reason := snapshotHeader(data); reason != "" {
		return nil, 0, pos, reason
	}
	switch {
	case binary.LittleEndian.Uint64(data[16:]) != uint64(len(data)-snapshotHeaderSize):
		return nil, 0, 16, "body length does not match the file size"
	}
	body := data[snapshotHeaderSize:]
	if xxhash.Sum64(body) != binary.LittleEndian.Uint64(data[24:]) {
		return nil, 0, 24, "checksum mismatch"
	}
	gen = binary.LittleEndian.Uint64(data[8:])
	d := decbuf{b: body}
	ng := d.count(minSnapGroup)
	st = newState(ng)
	var prevGroup []byte
	for range ng {
		gname, nt, ok := d.head(minSnapTopic)
		if !ok {
			break
		}
		if nt == 0 {
			d.fail("group with no topics")
			break
		}
		if !d.after(prevGroup, gname, "group names out of order") {
			break
		}
		prevGroup = gname
		g := &groupState{name: string(gname), topics: make(map[string]*topicState, nt)}
		st.groups[g.name] = g
		var prevTopic []byte
		for range nt {
			tname, np, ok := d.head(minSnapPartition)
			if !ok {
				break
			}
			if !d.after(prevTopic, tname, "topic names out of order") {
				break
			}
			prevTopic = tname
			t := st.addTopic(g, tname, np)
			prevPart := int32(-1)
			for range np {
				p := d.partition()
				off := d.offset()
				ts := int64(d.u64())
				md := d.str()
				if d.err != "" {
					break
				}
				if p <= prevPart {
					d.fail("partitions out of order")
					break
				}
				prevPart = p
				t.parts[p] = position{offset: off, time: ts, metadata: string(md)}
			}
			st.entries += len(t.parts)
		}
	}
	d.end()
	if d.err != "" {
		return nil, 0, int64(snapshotHeaderSize + d.at), d.err
	}
	return st, gen, 0, ""
}
