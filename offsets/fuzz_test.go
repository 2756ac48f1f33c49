package offsets

import (
	"encoding/binary"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedJournal is a journal of generation 1 holding one record of each type.
func seedJournal() []byte {
	b := appendJournalHeader(nil, 1)
	b, start := appendCommitHead(b, "g", 123, 2)
	b = appendEntry(b, "t", 0, 5, "meta")
	b = appendEntry(b, "u", 3, 0, "")
	finishRecord(b, start)
	b = appendGroupTopic(b, recSubscribe, "g", "v")
	b = appendGroupTopic(b, recUnsubscribe, "g", "u")
	b = appendGroupTopic(b, recDeleteGroup, "h", "")
	b, start = appendCommitHead(b, "k", 124, 1)
	b = appendEntry(b, "w", 1, 7, "")
	finishRecord(b, start)
	b = appendDeleteTopic(b, "w")
	return b
}

// checkState checks the invariants of a decoded state: every group has a
// topic, readers mirror interests, entries counts positions.
func checkState(t *testing.T, st *state) {
	n := 0
	for gname, g := range st.groups {
		require.Equal(t, gname, g.name)
		require.NotEmpty(t, g.topics)
		for tname, tp := range g.topics {
			require.Contains(t, st.readers[tname], gname)
			n += len(tp.parts)
		}
	}
	for tname, r := range st.readers {
		require.NotEmpty(t, r)
		for gname := range r {
			require.Contains(t, st.groups[gname].topics, tname)
		}
	}
	require.Equal(t, n, st.entries)
}

// roundTrip checks that a state survives a snapshot encode and decode.
func roundTrip(t *testing.T, st *state, gen uint64) {
	enc := encodeSnapshot(nil, st, gen)
	st2, gen2, _, reason := decodeSnapshot(enc)
	require.Empty(t, reason)
	require.Equal(t, gen, gen2)
	require.Equal(t, enc, encodeSnapshot(nil, st2, gen2))
}

// FuzzJournal feeds arbitrary journal files to the replay: it must never
// panic, apply only records before the end it reports, and leave a state
// whose snapshot round-trips.
func FuzzJournal(f *testing.F) {
	j := seedJournal()
	f.Add(j)
	f.Add(j[:len(j)-3])
	f.Add(j[:journalHeaderSize])
	f.Add(j[:7])
	f.Fuzz(func(t *testing.T, data []byte) {
		st := newState(0)
		res := replayJournal(data, 1, st)
		require.LessOrEqual(t, res.end, len(data))
		checkState(t, st)
		if res.end >= journalHeaderSize {
			// the valid prefix replays alone to the same state, with no error
			st2 := newState(0)
			res2 := replayJournal(data[:res.end], 1, st2)
			require.Empty(t, res2.reason)
			require.Equal(t, res.end, res2.end)
			require.Equal(t, res.records, res2.records)
			require.Equal(t, encodeSnapshot(nil, st, 1), encodeSnapshot(nil, st2, 1))
		}
		roundTrip(t, st, 1)
	})
}

// FuzzRecord frames arbitrary record bodies with a valid length and
// checksum, so that the fuzzer reaches the body decoder.
func FuzzRecord(f *testing.F) {
	j := seedJournal()
	for off := journalHeaderSize; off < len(j); {
		n := int(binary.LittleEndian.Uint32(j[off+8:]))
		f.Add(j[off+recordHeaderSize : off+recordHeaderSize+n])
		off += recordHeaderSize + n
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		if len(rec) == 0 || len(rec) > MaxRecordBytes {
			return
		}
		b := appendJournalHeader(nil, 1)
		b = append(b, make([]byte, recordHeaderSize)...)
		b = append(b, rec...)
		binary.LittleEndian.PutUint32(b[journalHeaderSize+8:], uint32(len(rec)))
		binary.LittleEndian.PutUint64(b[journalHeaderSize:], xxhash.Sum64(b[journalHeaderSize+8:]))
		st := newState(0)
		res := replayJournal(b, 1, st)
		if decodeRecord(nil, rec) == "" {
			assert.Empty(t, res.reason)
			assert.Equal(t, len(b), res.end)
			// Every cut of it past its header is a torn append.
			for cut := journalHeaderSize + recordHeaderSize; cut < len(b); cut++ {
				if !tornAt(b[:cut], journalHeaderSize) {
					t.Fatalf("cut at %d of %d is not a torn append", cut, len(b))
				}
			}
		} else {
			assert.NotEmpty(t, res.reason, "a malformed record with a good checksum is corruption")
			assert.Equal(t, journalHeaderSize, res.end)
			assert.Empty(t, st.groups, "nothing of a malformed record is applied")
		}
		checkState(t, st)
		roundTrip(t, st, 1)
	})
}

// FuzzSnapshot feeds arbitrary snapshot bodies (with a valid header and
// checksum, so that the body decoder is reached) and arbitrary whole files.
func FuzzSnapshot(f *testing.F) {
	st := newState(0)
	res := replayJournal(seedJournal(), 1, st)
	if res.reason != "" {
		f.Fatal(res.reason)
	}
	snap := encodeSnapshot(nil, st, 9)
	f.Add(snap[snapshotHeaderSize:], false)
	f.Add(snap, true)
	f.Fuzz(func(t *testing.T, data []byte, whole bool) {
		if !whole {
			body := data
			data = encodeSnapshot(nil, newState(0), 9)[:snapshotHeaderSize]
			data = append(data, body...)
			binary.LittleEndian.PutUint64(data[16:], uint64(len(body)))
			binary.LittleEndian.PutUint64(data[24:], xxhash.Sum64(body))
		}
		st, gen, pos, reason := decodeSnapshot(data)
		if reason != "" {
			require.Nil(t, st)
			require.GreaterOrEqual(t, pos, int64(0))
			require.LessOrEqual(t, pos, int64(len(data)))
			return
		}
		checkState(t, st)
		require.Equal(t, data, encodeSnapshot(nil, st, gen), "an accepted snapshot is canonical")
	})
}

// FuzzTail feeds arbitrary bytes to the scanner that a store runs on what
// other stores appended to the journal (from a record boundary to the
// file's end, while they may be writing): it must never panic, and the
// prefix it accepts must be whole valid records that replay alone, with no
// error, to as many records.
func FuzzTail(f *testing.F) {
	j := seedJournal()[journalHeaderSize:]
	f.Add(j)
	f.Add(j[:len(j)-5])
	f.Add(append(append([]byte{}, j[:30]...), j...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		valid, records, reason, malformed := scanRecords(data)
		require.LessOrEqual(t, valid, len(data))
		require.Equal(t, valid == len(data), reason == "", "a reason exactly when it stopped early")
		if malformed {
			require.NotEmpty(t, reason)
		}
		again, n, r, _ := scanRecords(data[:valid])
		require.Equal(t, []any{valid, records, ""}, []any{again, n, r}, "the accepted prefix scans alone")
		st := newState(0)
		res := replayJournal(append(appendJournalHeader(nil, 1), data[:valid]...), 1, st)
		require.Empty(t, res.reason)
		require.Equal(t, journalHeaderSize+valid, res.end)
		require.Equal(t, records, res.records)
		checkState(t, st)
	})
}
