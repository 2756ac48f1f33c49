package storage

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/seglog/seglog/vfs"
)

// This file holds the codecs of every file a partition directory keeps
// besides its segments, each fuzzed in fuzz_test.go: offset checkpoints
// (recovery point, log start offset, high watermark), the framing shared
// by the multi-line ones, the leader epoch cache, the manifest, producer
// snapshots and the topic configuration. Reading and writing the files
// (atomically, with their fsyncs) stays beside the state they hold.

// Checkpoint files hold one offset as a line of text, readable with cat:
//
//	seglog <name> v1 <offset> <xxhash64 of "seglog <name> v1 <offset>", 16 hex digits>\n
//
// They are replaced atomically (vfs.WriteFileAtomic).

func encodeCheckpoint(name string, offset int64) []byte {
	return encodeLine(name, strconv.FormatInt(offset, 10))
}

func decodeCheckpoint(name string, b []byte) (int64, error) {
	f, err := decodeLine(name, b, 1)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: %s: bad offset %q", ErrCorrupt, name, f[0])
	}
	return v, nil
}

// encodeLine frames values (space-separated) as a one-line file:
// "seglog <name> v1 <values> <xxhash64 of what precedes it>\n".
func encodeLine(name, values string) []byte {
	body := fmt.Sprintf("seglog %s v1 %s", name, values)
	return []byte(fmt.Sprintf("%s %016x\n", body, xxhash.Sum64String(body)))
}

// decodeLine checks the framing and checksum of a one-line file of n
// values and returns the values.
func decodeLine(name string, b []byte, n int) ([]string, error) {
	line := strings.TrimSuffix(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) != n+4 || fields[0] != "seglog" || fields[1] != name || fields[2] != "v1" {
		return nil, fmt.Errorf("%w: %s: not a v1 file", ErrCorrupt, name)
	}
	body := strings.Join(fields[:n+3], " ")
	if fmt.Sprintf("%016x", xxhash.Sum64String(body)) != fields[n+3] {
		return nil, fmt.Errorf("%w: %s: checksum mismatch", ErrCorrupt, name)
	}
	return fields[3 : n+3], nil
}

// The clean-shutdown marker is empty, or holds the stamp of the partition
// directory (vfs.DirStamp) taken after the clean close that wrote it, once
// that stamp was settled, and the xxhash64 of the manifest it vouches for:
//
//	seglog .clean-shutdown v1 <device> <inode> <change time, ns> <mount ID> <boot ID, 32 hex digits> <manifest's xxhash64> <xxhash64>\n
//
// An open that finds the directory's stamp and the manifest unchanged
// trusts the manifest without listing the directory (see
// Log.takeUnchangedDir).
type cleanStamp struct {
	Dir      vfs.DirStamp
	Manifest uint64 // xxhash64 of the manifest file's bytes
}

func encodeCleanStamp(s cleanStamp) []byte {
	d := s.Dir
	return encodeLine(cleanShutdownFile, fmt.Sprintf("%d %d %d %d %x %016x", d.Dev, d.Ino, d.Ctime, d.Mount, d.Boot[:], s.Manifest))
}

func decodeCleanStamp(b []byte) (cleanStamp, error) {
	f, err := decodeLine(cleanShutdownFile, b, 6)
	if err != nil {
		return cleanStamp{}, err
	}
	var s cleanStamp
	var errs [6]error
	s.Dir.Dev, errs[0] = strconv.ParseUint(f[0], 10, 64)
	s.Dir.Ino, errs[1] = strconv.ParseUint(f[1], 10, 64)
	s.Dir.Ctime, errs[2] = strconv.ParseInt(f[2], 10, 64)
	s.Dir.Mount, errs[3] = strconv.ParseUint(f[3], 10, 64)
	if len(f[4]) == 2*len(s.Dir.Boot) {
		_, errs[4] = hex.Decode(s.Dir.Boot[:], []byte(f[4]))
	} else {
		errs[4] = errors.New("boot ID length")
	}
	s.Manifest, errs[5] = strconv.ParseUint(f[5], 16, 64)
	if len(f[5]) != 16 {
		errs[5] = errors.New("checksum length")
	}
	if err := errors.Join(errs[:]...); err != nil {
		return cleanStamp{}, fmt.Errorf("%w: %s: bad stamp %q", ErrCorrupt, cleanShutdownFile, strings.Join(f, " "))
	}
	return s, nil
}

// Multi-line checkpoint files (the leader epoch cache, the manifest) share
// one framing: a header line "seglog <name> v1 <counts...>", item lines,
// and a last line with the xxhash64 of everything before it.

// encodeChecked frames lines (each without its newline) as such a file.
func encodeChecked(lines []string) []byte {
	var b []byte
	for _, l := range lines {
		b = append(append(b, l...), '\n')
	}
	return fmt.Appendf(b, "%016x\n", xxhash.Sum64(b))
}

// decodeChecked checks the framing of b and that its header names the file
// and version 1; it returns the header's remaining fields and the item
// lines.
func decodeChecked(name string, b []byte) (counts []string, items []string, err error) {
	bad := func(why string) ([]string, []string, error) {
		return nil, nil, fmt.Errorf("%w: %s: %s", ErrCorrupt, name, why)
	}
	if len(b) < 17 || b[len(b)-1] != '\n' {
		return bad("too short or no final newline")
	}
	body, sum := b[:len(b)-17], string(b[len(b)-17:len(b)-1])
	if fmt.Sprintf("%016x", xxhash.Sum64(body)) != sum {
		return bad("checksum mismatch")
	}
	if len(body) == 0 {
		return bad("no header")
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	head := strings.Fields(lines[0])
	if len(head) < 3 || head[0] != "seglog" || head[1] != name || head[2] != "v1" {
		return bad("not a v1 " + name)
	}
	return head[3:], lines[1:], nil
}

// The checkpoint is text, one entry a line, then a checksum line:
//
//	seglog leader-epoch-checkpoint v1 <n>
//	<epoch> <start offset>      (n lines)
//	<xxhash64 of the lines above, 16 hex digits>
func (c *epochCache) encode() []byte {
	lines := []string{fmt.Sprintf("seglog %s v1 %d", leaderEpochFile, len(c.entries))}
	for _, e := range c.entries {
		lines = append(lines, fmt.Sprintf("%d %d", e.Epoch, e.StartOffset))
	}
	return encodeChecked(lines)
}

func decodeEpochCache(b []byte) (*epochCache, error) {
	bad := func(why string) (*epochCache, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrCorrupt, leaderEpochFile, why)
	}
	counts, lines, err := decodeChecked(leaderEpochFile, b)
	if err != nil {
		return nil, err
	}
	if len(counts) != 1 {
		return bad("bad header")
	}
	n, err := strconv.Atoi(counts[0])
	if err != nil || n < 0 || n > maxEpochCacheLength || n != len(lines) {
		return bad("bad entry count")
	}
	c := &epochCache{}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 2 {
			return bad("bad entry line")
		}
		ep, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || ep < 0 || off < 0 {
			return bad("bad entry values")
		}
		if last, ok := c.latest(); ok && (int32(ep) <= last.Epoch || off < last.StartOffset) {
			return bad("entries out of order")
		}
		c.entries = append(c.entries, EpochEntry{Epoch: int32(ep), StartOffset: off})
	}
	return c, nil
}

// The manifest: text, one item a line:
//
//	seglog manifest v1 <segments> <snapshots>
//	<base> <size> <max timestamp> <offset of the max timestamp's batch>   (one per segment; -1: unknown)
//	<snapshot offset>                                                     (one per producer snapshot)
//	<xxhash64 of the lines above, 16 hex digits>
func (m *manifest) encode() []byte {
	lines := []string{fmt.Sprintf("seglog %s v1 %d %d", manifestFile, len(m.Segments), len(m.Snapshots))}
	for _, s := range m.Segments {
		lines = append(lines, fmt.Sprintf("%d %d %d %d", s.Base, s.Size, s.MaxTimestamp, s.MaxTimestampOffset))
	}
	for _, o := range m.Snapshots {
		lines = append(lines, strconv.FormatInt(o, 10))
	}
	return encodeChecked(lines)
}

func decodeManifest(b []byte) (*manifest, bool) {
	counts, lines, err := decodeChecked(manifestFile, b)
	if err != nil || len(counts) != 2 {
		return nil, false
	}
	nseg, err1 := strconv.Atoi(counts[0])
	nsnap, err2 := strconv.Atoi(counts[1])
	if err1 != nil || err2 != nil || nseg < 1 || nsnap < 0 || nseg+nsnap != len(lines) {
		return nil, false
	}
	m := &manifest{Segments: make([]segmentInfo, 0, nseg), Snapshots: make([]int64, 0, nsnap)}
	for _, line := range lines[:nseg] {
		var v [4]int64
		if !parseInts(line, v[:]) {
			return nil, false
		}
		if v[0] < 0 || (len(m.Segments) > 0 && v[0] <= m.Segments[len(m.Segments)-1].Base) {
			return nil, false
		}
		m.Segments = append(m.Segments, segmentInfo{Base: v[0], Size: v[1], MaxTimestamp: v[2], MaxTimestampOffset: v[3]})
	}
	for _, line := range lines[nseg:] {
		x, err := strconv.ParseInt(line, 10, 64)
		if err != nil || x < 0 || (len(m.Snapshots) > 0 && x <= m.Snapshots[len(m.Snapshots)-1]) {
			return nil, false
		}
		m.Snapshots = append(m.Snapshots, x)
	}
	return m, true
}

// parseInts parses line as exactly len(v) decimal integers separated by
// single spaces, as encode writes them (without the allocations of
// strings.Fields: a clean open of 1,000 segments parses 1,000 lines).
func parseInts(line string, v []int64) bool {
	for i := range v {
		field, rest, more := strings.Cut(line, " ")
		if more != (i < len(v)-1) {
			return false
		}
		x, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return false
		}
		v[i], line = x, rest
	}
	return true
}

// Producer snapshot layout (big-endian), written atomically:
//
//	+--------+---------+-----------------------------------------------+
//	| 4      | magic   | "SGPS"                                        |
//	| 1      | version | 1                                             |
//	| 4      | count   | producers                                     |
//	|        | per producer: id int64, epoch int16, lastSeen int64,   |
//	|        |   n uint8 (<= 5), n x (firstSeq int32, lastSeq int32,   |
//	|        |   firstOffset int64, lastOffset int64)                 |
//	| 8      | xxhash64 of everything before it                        |
//	+--------+---------+-----------------------------------------------+
func (ps *producerState) encode() []byte {
	ids := make([]int64, 0, len(ps.m))
	for id := range ps.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := append([]byte(snapshotMagic), snapshotVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		e := ps.m[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastSeen))
		b = append(b, byte(len(e.batches)))
		for _, pb := range e.batches {
			b = binary.BigEndian.AppendUint32(b, uint32(pb.firstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(pb.lastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.firstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.lastOffset))
		}
	}
	return binary.BigEndian.AppendUint64(b, xxhash.Sum64(b))
}

// decodeProducerSnapshot decodes a snapshot; every length is checked
// against what remains.
func decodeProducerSnapshot(b []byte) (*producerState, error) {
	bad := func(why string) (*producerState, error) {
		return nil, fmt.Errorf("%w: producer snapshot: %s", ErrCorrupt, why)
	}
	if len(b) < 4+1+4+8 {
		return bad("too short")
	}
	body, sum := b[:len(b)-8], binary.BigEndian.Uint64(b[len(b)-8:])
	if xxhash.Sum64(body) != sum {
		return bad("checksum mismatch")
	}
	if string(body[:4]) != snapshotMagic || body[4] != snapshotVersion {
		return bad("unknown magic or version")
	}
	n := binary.BigEndian.Uint32(body[5:9])
	p := body[9:]
	const entryMin = 8 + 2 + 8 + 1
	if uint64(n) > uint64(len(p))/entryMin {
		return bad("producer count larger than the file")
	}
	ps := newProducerState()
	for i := uint32(0); i < n; i++ {
		if len(p) < entryMin {
			return bad("truncated producer")
		}
		id := int64(binary.BigEndian.Uint64(p))
		e := &producerEntry{epoch: int16(binary.BigEndian.Uint16(p[8:])), lastSeen: int64(binary.BigEndian.Uint64(p[10:]))}
		k := int(p[18])
		p = p[entryMin:]
		if k > maxProducerBatches || len(p) < k*24 {
			return bad("bad batch count")
		}
		for j := 0; j < k; j++ {
			e.batches = append(e.batches, producerBatch{
				firstSeq:    int32(binary.BigEndian.Uint32(p)),
				lastSeq:     int32(binary.BigEndian.Uint32(p[4:])),
				firstOffset: int64(binary.BigEndian.Uint64(p[8:])),
				lastOffset:  int64(binary.BigEndian.Uint64(p[16:])),
			})
			p = p[24:]
		}
		if _, dup := ps.m[id]; dup {
			return bad("producer listed twice")
		}
		ps.m[id] = e
	}
	if len(p) != 0 {
		return bad("trailing bytes")
	}
	return ps, nil
}

// fields lists the file's keys (Kafka's names where Kafka has one), in
// file order, each with the field it holds.
func (c *TopicConfig) fields() []topicConfigField {
	return []topicConfigField{
		{"segment.bytes", &c.SegmentBytes}, {"segment.age", &c.SegmentAge},
		{"index.interval.bytes", &c.IndexIntervalBytes}, {"sync", &c.Sync},
		{"sync.every.records", &c.SyncEveryRecords}, {"sync.interval", &c.SyncInterval},
		{"compression", &c.Compression}, {"retention.age", &c.RetentionAge},
		{"retention.bytes", &c.RetentionBytes}, {"retention.consumed", &c.RetentionConsumed},
		{"message.timestamp.type", &c.TimestampType},
	}
}

// topicConfigField is one key of the file and a pointer to its field:
// *int64, *int, *time.Duration, *string or *bool.
type topicConfigField struct {
	key string
	p   any
}

func (f topicConfigField) format() string {
	switch p := f.p.(type) {
	case *int64:
		return strconv.FormatInt(*p, 10)
	case *int:
		return strconv.Itoa(*p)
	case *time.Duration:
		return p.String()
	case *bool:
		return strconv.FormatBool(*p)
	default:
		return *p.(*string)
	}
}

func (f topicConfigField) parse(v string) (err error) {
	switch p := f.p.(type) {
	case *int64:
		*p, err = strconv.ParseInt(v, 10, 64)
	case *int:
		*p, err = strconv.Atoi(v)
	case *time.Duration:
		*p, err = time.ParseDuration(v)
	case *bool:
		*p, err = strconv.ParseBool(v)
	default:
		*p.(*string) = v
	}
	return err
}

// encodeTopicConfig frames the config as a checksummed text file, one
// "key value" line per field (an empty value is written as "-").
func encodeTopicConfig(c TopicConfig) []byte {
	fields := c.fields()
	lines := []string{"seglog " + topicConfigFile + " v1 " + strconv.Itoa(len(fields))}
	for _, f := range fields {
		v := f.format()
		if v == "" {
			v = "-"
		}
		lines = append(lines, f.key+" "+v)
	}
	return encodeChecked(lines)
}

// decodeTopicConfig parses what encodeTopicConfig wrote. Keys it does not
// know are an error (a newer format), as are values that do not parse or
// validate.
func decodeTopicConfig(b []byte) (TopicConfig, error) {
	_, items, err := decodeChecked(topicConfigFile, b)
	if err != nil {
		return TopicConfig{}, err
	}
	var c TopicConfig
	fields := c.fields()
	bad := func(line string, err error) (TopicConfig, error) {
		return TopicConfig{}, fmt.Errorf("%w: %s: line %q: %v", ErrCorrupt, topicConfigFile, line, err)
	}
	for _, line := range items {
		key, v, ok := strings.Cut(line, " ")
		if !ok {
			return bad(line, errors.New("no value"))
		}
		if v == "-" {
			v = ""
		}
		i := slices.IndexFunc(fields, func(f topicConfigField) bool { return f.key == key })
		if i < 0 {
			return bad(line, errors.New("unknown key"))
		}
		if err := fields[i].parse(v); err != nil {
			return bad(line, err)
		}
	}
	if err := c.Validate(); err != nil {
		return TopicConfig{}, fmt.Errorf("%w: %s: %w", ErrCorrupt, topicConfigFile, err)
	}
	return c, nil
}

// The store's start-offset checkpoint (log-start-offset-checkpoint at its
// root), framed as the other multi-line files:
//
//	seglog log-start-offset-checkpoint v1 <count>
//	<topic> <partition> <start offset>   (one per partition, sorted)
//	<xxhash64 of the lines above, 16 hex digits>
func encodeStartOffsets(m map[string]int64) []byte {
	names := slices.Sorted(maps.Keys(m))
	lines := make([]string, 0, len(names)+1)
	lines = append(lines, "seglog "+storeStartOffsetsFile+" v1 "+strconv.Itoa(len(names)))
	for _, name := range names {
		topic, p, _ := ParsePartitionDir(name)
		lines = append(lines, topic+" "+strconv.Itoa(int(p))+" "+strconv.FormatInt(m[name], 10))
	}
	return encodeChecked(lines)
}

// decodeStartOffsets parses what encodeStartOffsets wrote, keyed by
// partition directory name.
func decodeStartOffsets(b []byte) (map[string]int64, error) {
	counts, items, err := decodeChecked(storeStartOffsetsFile, b)
	if err != nil {
		return nil, err
	}
	bad := func(why string) (map[string]int64, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrCorrupt, storeStartOffsetsFile, why)
	}
	if len(counts) != 1 || counts[0] != strconv.Itoa(len(items)) {
		return bad("wrong count")
	}
	m := make(map[string]int64, len(items))
	for _, line := range items {
		f := strings.Fields(line)
		if len(f) != 3 || ValidateTopic(f[0]) != nil {
			return bad(fmt.Sprintf("bad line %q", line))
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || off < 0 || off > MaxOffset {
			return bad(fmt.Sprintf("bad line %q", line))
		}
		name := PartitionDir(f[0], int32(p))
		if _, dup := m[name]; dup {
			return bad("partition listed twice: " + name)
		}
		m[name] = off
	}
	return m, nil
}
