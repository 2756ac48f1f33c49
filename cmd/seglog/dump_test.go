package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// goldenSegment writes one deterministic partition log (fixed timestamps,
// every codec, keys, null keys and values, binary bytes, headers, a long
// value, producer fields) and returns its directory.
func goldenSegment(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "golden-0")
	l, err := storage.Open(dir, storage.Options{IndexIntervalBytes: 100})
	require.NoError(t, err)
	ts := int64(fixedTS)
	next := func() int64 { ts += 7; return ts }
	_, err = l.Append(
		storage.Record{Timestamp: next(), Key: []byte("user-1"), Value: []byte("hello")},
		storage.Record{Timestamp: next(), Value: []byte("no key")},
		storage.Record{Timestamp: next(), Key: []byte("tombstone")},
	)
	require.NoError(t, err)
	_, err = l.Append(storage.Record{Timestamp: next(), Key: []byte{0, 1, 0xff, '\n'}, Value: []byte("bin\x00\xfe\"quoted\"\ttab"),
		Headers: []segment.RecordHeader{{Key: []byte("trace"), Value: []byte("abc")}, {Key: []byte("null"), Value: nil}}})
	require.NoError(t, err)
	_, err = l.Append(storage.Record{Timestamp: next(), Key: []byte("long"), Value: bytes.Repeat([]byte("0123456789"), 10)})
	require.NoError(t, err)
	for i, codec := range []segment.Codec{segment.CodecGzip, segment.CodecSnappy, segment.CodecLZ4, segment.CodecZstd} {
		recs := make([]segment.Record, 3)
		for j := range recs {
			recs[j] = segment.Record{Timestamp: next(), Key: []byte(codec.String()), Value: []byte(strings.Repeat("v", 10*(j+1)))}
		}
		b, err := segment.AppendBatch(nil, recs, segment.EncodeOptions{Codec: codec, ProducerID: 42, ProducerEpoch: 3, BaseSequence: int32(i * 3)})
		require.NoError(t, err)
		_, err = l.AppendBatch(b)
		require.NoError(t, err)
	}
	// An older record after newer ones: the time index must keep the max.
	_, err = l.Append(storage.Record{Timestamp: fixedTS + 1, Value: []byte("late")})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	return dir
}

func TestDumpGolden(t *testing.T) {
	dir := goldenSegment(t)
	logPath := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
	idx := filepath.Join(dir, segment.FileName(0, segment.IndexSuffix))
	tidx := filepath.Join(dir, segment.FileName(0, segment.TimeIndexSuffix))
	var got strings.Builder
	for _, args := range [][]string{
		{"dump", logPath},
		{"dump", "--records", "--verify-index", "--max-value-bytes", "16", logPath},
		{"dump", idx, tidx},
		{"dump", "--json", "--records", "--verify-index", "--max-value-bytes", "16", logPath},
		{"dump", "--json", idx, tidx},
	} {
		r := seglog(t, "", args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		require.Empty(t, r.stderr)
		got.WriteString("$ seglog " + strings.Join(args, " ") + "\n" + r.stdout)
	}
	checkGolden(t, "dump", strings.ReplaceAll(got.String(), dir, "DIR"))
}

func TestDumpDamagedFile(t *testing.T) {
	dir := goldenSegment(t)
	logPath := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
	clean, err := os.ReadFile(logPath)
	require.NoError(t, err)
	first, err := segment.ParseHeader(clean, segment.DefaultLimits)
	require.NoError(t, err)

	t.Run("torn tail", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), segment.FileName(0, segment.LogSuffix))
		cut := len(clean) - 10
		require.NoError(t, os.WriteFile(p, clean[:cut], 0o644))
		r := seglog(t, "", "dump", p)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stdout, "baseOffset: 0 ", "dumped up to the damage")
		assert.Contains(t, r.stderr, p+" at byte ")
		assert.Contains(t, r.stderr, "runs past the end of the file")
	})
	t.Run("bit flip in records", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), segment.FileName(0, segment.LogSuffix))
		b := bytes.Clone(clean)
		b[segment.HeaderSize+3] ^= 0x10
		require.NoError(t, os.WriteFile(p, b, 0o644))
		r := seglog(t, "", "dump", "--records", p)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stdout, "valid: false")
		assert.Contains(t, r.stderr, p+" at byte 0: batch at offset 0: seglog: corrupt data: checksum mismatch")
		// The rest of the file is still dumped: the length frames it.
		assert.Contains(t, r.stdout, "| offset: 3 ")
	})
	t.Run("bad header", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), segment.FileName(0, segment.LogSuffix))
		b := bytes.Clone(clean)
		b[first.Size()+16] = 9 // version of the second batch
		require.NoError(t, os.WriteFile(p, b, 0o644))
		r := seglog(t, "", "dump", "--json", p)
		assert.Equal(t, 1, r.code)
		assert.Equal(t, 2, strings.Count(r.stdout, "\n"), "one batch, then the error line")
		assert.Contains(t, r.stdout, `"type":"error"`)
		assert.Contains(t, r.stderr, p+" at byte "+itoa(first.Size())+": seglog: corrupt data: unknown version (magic) 9")
	})
	t.Run("offsets that do not follow on", func(t *testing.T) {
		// The file named as if its first batch were at offset 5: the
		// scanner, as recovery's, stops at the first batch.
		p := filepath.Join(t.TempDir(), segment.FileName(5, segment.LogSuffix))
		require.NoError(t, os.WriteFile(p, clean, 0o644))
		r := seglog(t, "", "dump", p)
		assert.Equal(t, 1, r.code)
		assert.NotContains(t, r.stdout, "baseOffset: ")
		assert.Contains(t, r.stderr, p+" at byte 0: seglog: corrupt data: batch base offset 0, expected 5")
	})
	t.Run("index pointing inside a batch", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "x-0")
		require.NoError(t, os.MkdirAll(d, 0o755))
		for _, suf := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
			b, err := os.ReadFile(filepath.Join(dir, segment.FileName(0, suf)))
			require.NoError(t, err)
			if suf == segment.IndexSuffix {
				require.GreaterOrEqual(t, len(b), 8)
				b[7]++ // the first entry's position
			}
			require.NoError(t, os.WriteFile(filepath.Join(d, segment.FileName(0, suf)), b, 0o644))
		}
		r := seglog(t, "", "dump", "--verify-index", filepath.Join(d, segment.FileName(0, segment.IndexSuffix)))
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "is not the start of a batch")
	})
}

func TestDumpMissingAndBadFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "00000000000000000000.log")
	r := seglog(t, "", "dump", missing)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, missing+": missing (no such file or directory)")

	unreadable := filepath.Join(dir, "00000000000000000001.index")
	require.NoError(t, os.WriteFile(unreadable, make([]byte, 16), 0o000))
	if os.Geteuid() != 0 {
		r = seglog(t, "", "dump", unreadable)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, unreadable+": permission denied")
	}

	r = seglog(t, "", "dump", filepath.Join(dir, "notes.txt"))
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "not a .log, .index or .timeindex file")

	r = seglog(t, "", "dump", dir+string(filepath.Separator)+"x.log")
	assert.Equal(t, 1, r.code)

	// A directory named like a segment.
	d := filepath.Join(dir, "00000000000000000002.log")
	require.NoError(t, os.Mkdir(d, 0o755))
	r = seglog(t, "", "dump", d)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "is a directory")
}

// FuzzDumpLog: dump must never panic on any .log bytes. The seeds (run by
// plain go test) are a valid segment, its prefixes and damaged copies.
func FuzzDumpLog(f *testing.F) {
	dir := goldenSegment(f)
	clean, err := os.ReadFile(filepath.Join(dir, segment.FileName(0, segment.LogSuffix)))
	require.NoError(f, err)
	f.Add(clean)
	f.Add([]byte{})
	f.Add(clean[:segment.HeaderSize-1])
	f.Add(clean[:segment.HeaderSize+5])
	f.Add(bytes.Repeat([]byte{0xff}, 200))
	flipped := bytes.Clone(clean)
	flipped[70] ^= 0x40
	f.Add(flipped)
	huge := bytes.Clone(clean[:segment.HeaderSize])
	huge[8], huge[9] = 0x7f, 0xff // a hostile batch length
	f.Add(huge)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, o := range []dumpOptions{{records: true, maxValue: 8}, {records: true, json: true}} {
			dumpLogBytes(io.Discard, io.Discard, data, "00000000000000000000.log", o)
		}
	})
}

// TestDumpBesideAWriter: in a partition a writer holds, dump prints the
// batches up to the last whole one a follower sees and says once that the
// tail being written is not judged (exit 0); where no writer holds it, the
// same half batch is damage (exit 1).
func TestDumpBesideAWriter(t *testing.T) {
	for _, locked := range []bool{true, false} {
		t.Run(map[bool]string{true: "held", false: "not held"}[locked], func(t *testing.T) {
			root := t.TempDir()
			makeLog(t, root, "t", 1, 4, 5, 0)
			dir := filepath.Join(root, "t-0")
			logPath := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
			b, err := segment.AppendBatch(nil, []segment.Record{{Value: []byte("being written")}}, segment.EncodeOptions{BaseOffset: 20})
			require.NoError(t, err)
			f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write(b[:len(b)/2])
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, os.Remove(filepath.Join(dir, ".clean-shutdown")))
			if locked {
				lock, err := os.Open(root)
				require.NoError(t, err)
				defer lock.Close()
				require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
			}
			r := seglog(t, "", "dump", "--dir", dir)
			assert.Equal(t, 4, strings.Count(r.stdout, "baseOffset: "), r.stdout)
			if locked {
				assert.Equal(t, 0, r.code, r.stderr)
				assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
				assert.Contains(t, r.stderr, "held by a writer: read up to offset 20, the last whole batch a read-only follower sees; the tail being written is not judged")
				return
			}
			assert.Equal(t, 1, r.code)
			assert.Contains(t, r.stderr, "less than a batch header")
		})
	}
}
