package raftstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Fuzz targets for every decoder of bytes read back from disk. Each must
// refuse what it cannot read without panicking, and what it accepts must
// encode back to something that decodes to the same value.

func FuzzDecodeEntry(f *testing.F) {
	for _, l := range entries(1, 8, 3) {
		f.Add(appendEntry(nil, l))
	}
	f.Add(appendEntry(nil, &raft.Log{Index: 1 << 62, Term: 1<<64 - 1, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{0xab}, 300)}))
	f.Add(appendEntry(nil, &raft.Log{Index: 2, AppendedAt: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}))
	f.Add([]byte{entryVersion, 0, 0, 0x80})                       // unfinished varint
	f.Add([]byte{entryVersion, flagNilExtensions, 0, 1, 1, 0x7f}) // data length past the end
	f.Add([]byte{2, 0, 0, 1, 1})                                  // unknown version
	f.Fuzz(func(t *testing.T, b []byte) {
		var l raft.Log
		err := decodeEntry(b, &l)
		if err != nil {
			return
		}
		if l.Index == 0 {
			t.Fatalf("index 0 accepted")
		}
		if len(l.Data)+len(l.Extensions) > len(b) {
			t.Fatalf("decoded %d bytes of data from %d", len(l.Data)+len(l.Extensions), len(b))
		}
		idx, err := entryIndex(b)
		if err != nil || idx != l.Index {
			t.Fatalf("entryIndex %d, %v; decodeEntry %d", idx, err, l.Index)
		}
		enc := appendEntry(nil, &l)
		if n := entrySize(&l); n != len(enc) {
			t.Fatalf("entrySize %d, encoded %d bytes", n, len(enc))
		}
		var again raft.Log
		if err := decodeEntry(enc, &again); err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if again.Index != l.Index || again.Term != l.Term || again.Type != l.Type ||
			!bytes.Equal(again.Data, l.Data) || (again.Data == nil) != (l.Data == nil) ||
			!bytes.Equal(again.Extensions, l.Extensions) || (again.Extensions == nil) != (l.Extensions == nil) ||
			!again.AppendedAt.Equal(l.AppendedAt) || again.AppendedAt.IsZero() != l.AppendedAt.IsZero() {
			t.Fatalf("round trip:\n%+v\n%+v", l, again)
		}
	})
}

func FuzzReplayJournal(f *testing.F) {
	j := appendJournalHeader(nil)
	j = appendJournalRecord(j, []byte("CurrentTerm"), []byte{0, 0, 0, 0, 0, 0, 0, 9})
	j = appendJournalRecord(j, []byte("LastVoteCand"), []byte("n1"))
	j = appendJournalRecord(j, []byte{}, []byte{})
	j = appendJournalRecord(j, []byte("CurrentTerm"), []byte{0, 0, 0, 0, 0, 0, 0, 10})
	f.Add(j)
	f.Add(j[:len(j)-3])
	f.Add(append(append([]byte(nil), j...), make([]byte, 40)...))
	f.Add(appendJournalHeader(nil))
	f.Add([]byte("RSSJ\x01\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kv, good, err := replayJournal(b)
		if err != nil {
			return
		}
		if good < journalHeader || good > len(b) {
			t.Fatalf("good %d of %d bytes", good, len(b))
		}
		// What was replayed is what the good prefix holds.
		again, g2, err := replayJournal(b[:good])
		if err != nil || g2 != good || len(again) != len(kv) {
			t.Fatalf("replay of the good prefix: %d %v", g2, err)
		}
		// And it encodes back to a journal that replays to the same map.
		j := appendJournalHeader(nil)
		for k, v := range kv {
			j = appendJournalRecord(j, []byte(k), v)
		}
		again, g3, err := replayJournal(j)
		if err != nil || g3 != len(j) || len(again) != len(kv) {
			t.Fatalf("round trip: %d of %d, %v", g3, len(j), err)
		}
		for k, v := range kv {
			if !bytes.Equal(again[k], v) {
				t.Fatalf("round trip of %q", k)
			}
		}
	})
}

func FuzzDecodeCutRecord(f *testing.F) {
	f.Add(cutRecord{base: 10, end: 14, batch: []byte("batch")}.encode())
	f.Add(seal([]byte("RSTC\x01")))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCutRecord(b)
		if err != nil {
			return
		}
		if c.base < 0 || c.end <= c.base || len(c.batch) == 0 {
			t.Fatalf("accepted %+v", c)
		}
		again, err := decodeCutRecord(c.encode())
		if err != nil || again.base != c.base || again.end != c.end || !bytes.Equal(again.batch, c.batch) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
