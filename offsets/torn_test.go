package offsets

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs/faultfs"
)

// TestTornAppendWithRecordInMetadata: metadata is the client's bytes, and
// may hold the encoding of a whole journal record. When an append of such
// a commit is torn (a short write on a full disk, a kill, a power cut),
// the record inside the metadata is not a record of the journal: the torn
// bytes are cut as any torn tail, and neither the other stores nor the
// next Open take them for damage in the middle of the journal.
func TestTornAppendWithRecordInMetadata(t *testing.T) {
	inner, start := appendCommitHead(nil, "ghost", 1, 1)
	inner = appendEntry(inner, "t", 0, 666, "")
	finishRecord(inner, start)
	metadata := string(inner) + strings.Repeat("x", 3*len(inner))

	dir := t.TempDir()
	a := openT(t, dir, Options{})
	fs := faultfs.New(nil)
	b := openT(t, dir, Options{FS: fs, MaxMetadataBytes: 1 << 10})
	require.NoError(t, a.Commit("a", "t", 0, 1, ""))
	fs.Add(faultfs.Rule{Ops: faultfs.OpWrite, Path: journalPrefix, ShortWrite: true})
	require.ErrorIs(t, b.Commit("b", "t", 0, 2, metadata), syscall.ENOSPC)
	_ = b.Close()
	data, err := os.ReadFile(filepath.Join(dir, journalName(1)))
	require.NoError(t, err)
	require.Contains(t, string(data), string(inner), "the torn append holds the whole inner record")

	want := map[key]val{{"a", "t", 0}: {1, ""}}
	t.Run("reopen", func(t *testing.T) {
		s, err := Open(dir, Options{})
		require.NoError(t, err)
		assert.Equal(t, want, snapshotOf(s))
		require.NoError(t, s.Close())
	})
	require.NoError(t, a.Commit("a", "t", 0, 3, ""), "a store beside cuts the torn append")
	want[key{"a", "t", 0}] = val{3, ""}
	require.NoError(t, a.Close())
	reopenHas(t, dir, want)
}

// TestDamagedAfterTellsTornAppendFromDamage: the bytes after the last whole
// record are a torn append, cut, when they are the start of a record that
// reaches past the end, whatever its metadata holds, or when zeros up to a
// page boundary lie between them and the next valid record (a page that a
// power cut lost); they are damage, refused, when a valid record follows
// and they are neither.
func TestDamagedAfterTellsTornAppendFromDamage(t *testing.T) {
	commit := func(group string, offset int64, metadata string) []byte {
		b, start := appendCommitHead(nil, group, 1, 1)
		b = appendEntry(b, "t", 0, offset, metadata)
		finishRecord(b, start)
		return b
	}
	whole := commit("g", 1, "")
	inner := string(commit("ghost", 2, ""))
	withInner := commit("g", 3, inner+strings.Repeat("x", 40))
	longer := func(rec []byte, by uint32) []byte {
		b := append([]byte{}, rec...)
		binary.LittleEndian.PutUint32(b[8:], binary.LittleEndian.Uint32(b[8:])+by)
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		name    string
		data    []byte // from the first bad record to the journal's end
		damaged bool
	}{
		{"a torn commit", withInner[:20], false},
		{"a torn commit whose metadata holds a whole record", withInner[:len(withInner)-10], false},
		{"a torn commit cut in a varint", withInner[:recordHeaderSize+2], false},
		{"a length grown past the end, records after", cat(longer(whole, 1000), whole, whole), true},
		{"a length grown past the end, the record whole before it", cat(longer(whole, 1000), []byte("junk"), whole), true},
		{"an unknown type, then a record", cat(append(append([]byte{}, whole[:12]...), 9), whole), true},
		{"garbage, then a record", cat([]byte("garbage!"), whole), true},
		{"zeros to a page boundary, then records", cat(make([]byte, lostPageBytes-journalHeaderSize-len(whole)), whole, whole), false},
		{"a record to a page boundary, a page of zeros, then a record",
			cat(bytes.Repeat([]byte("g"), lostPageBytes-journalHeaderSize-len(whole)), make([]byte, lostPageBytes), whole), false},
		{"zeros short of a page boundary, then a record", cat(make([]byte, 100), whole), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			journal := cat(appendJournalHeader(nil, 1), whole, c.data)
			assert.Equal(t, c.damaged, damagedAfter(journal, 0, journalHeaderSize+len(whole)))
			assert.Equal(t, c.damaged, damagedAfter(c.data, journalHeaderSize+int64(len(whole)), 0), "from the tail a store reads")
			res := replayJournal(journal, 1, newState(0))
			assert.Equal(t, journalHeaderSize+len(whole), res.end)
			assert.Equal(t, c.damaged, res.reason != "", res.reason)
		})
	}
}
