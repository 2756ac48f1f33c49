package storage

import (
	"maps"
	"testing"
	"time"
)

// Fuzz targets for every small file the log reads back from disk. Each
// decoder must refuse what it cannot read without panicking, and what it
// accepts must encode back to bytes that decode to the same thing.

func FuzzCheckpoint(f *testing.F) {
	f.Add(encodeCheckpoint(recoveryPointFile, 0))
	f.Add(encodeCheckpoint(recoveryPointFile, 1<<40))
	f.Add([]byte("seglog recovery-point v1 -1 0000000000000000\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeCheckpoint(recoveryPointFile, b)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("negative offset %d accepted", v)
		}
		if w, err := decodeCheckpoint(recoveryPointFile, encodeCheckpoint(recoveryPointFile, v)); err != nil || w != v {
			t.Fatalf("round trip: %d -> %d, %v", v, w, err)
		}
	})
}

func FuzzProducerSnapshot(f *testing.F) {
	ps := newProducerState()
	ps.m[7] = &producerEntry{epoch: 2, lastSeen: 99, batches: []producerBatch{{0, 4, 10, 14}, {5, 9, 20, 24}}}
	ps.m[9] = &producerEntry{epoch: 0, lastSeen: 1}
	f.Add(ps.encode())
	f.Add(newProducerState().encode())
	f.Add([]byte("SGPS\x01\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := decodeProducerSnapshot(b)
		if err != nil {
			return
		}
		again, err := decodeProducerSnapshot(ps.encode())
		if err != nil || len(again.m) != len(ps.m) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzEpochCache(f *testing.F) {
	f.Add((&epochCache{entries: []EpochEntry{{1, 0}, {4, 100}, {9, 100000}}}).encode())
	f.Add((&epochCache{}).encode())
	f.Add([]byte("seglog leader-epoch-checkpoint v1 99999999\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeEpochCache(b)
		if err != nil {
			return
		}
		for i := 1; i < len(c.entries); i++ {
			if c.entries[i].Epoch <= c.entries[i-1].Epoch || c.entries[i].StartOffset < c.entries[i-1].StartOffset {
				t.Fatalf("accepted entries out of order: %v", c.entries)
			}
		}
		again, err := decodeEpochCache(c.encode())
		if err != nil || len(again.entries) != len(c.entries) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzManifest(f *testing.F) {
	m := manifest{Segments: []segmentInfo{{0, 4096, 1700000000000, 12}, {368769, -1, 0, -1}}, Snapshots: []int64{368769}}
	f.Add(m.encode())
	f.Add((&manifest{Segments: []segmentInfo{{5, 0, 0, -1}}}).encode())
	f.Add([]byte("seglog manifest v1 1000000000 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := decodeManifest(b)
		if !ok {
			return
		}
		if len(m.Segments) == 0 {
			t.Fatal("accepted a manifest with no segment")
		}
		again, ok := decodeManifest(m.encode())
		if !ok || len(again.Segments) != len(m.Segments) || len(again.Snapshots) != len(m.Snapshots) {
			t.Fatal("round trip failed")
		}
	})
}

// FuzzTopicConfig: the topic config decoder never panics, and what it
// accepts encodes back to the same bytes.
func FuzzTopicConfig(f *testing.F) {
	f.Add(encodeTopicConfig(TopicConfig{}))
	f.Add(encodeTopicConfig(TopicConfig{SegmentBytes: 4096, SegmentAge: time.Hour, Sync: "always", Compression: "zstd", RetentionBytes: 1 << 30, RetentionConsumed: true}))
	f.Add([]byte("seglog topic-config v1 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeTopicConfig(b)
		if err != nil {
			return
		}
		c2, err := decodeTopicConfig(encodeTopicConfig(c))
		if err != nil || c2 != c {
			t.Fatalf("round trip of %+v: %+v, %v", c, c2, err)
		}
	})
}

func FuzzStoreStartOffsets(f *testing.F) {
	f.Add(encodeStartOffsets(map[string]int64{"a-0": 5, "x-y-3": 40}))
	f.Add(encodeStartOffsets(map[string]int64{}))
	f.Add([]byte("seglog log-start-offset-checkpoint v1 1\na 0 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeStartOffsets(b)
		if err != nil {
			return
		}
		back, err := decodeStartOffsets(encodeStartOffsets(m))
		if err != nil || !maps.Equal(m, back) {
			t.Fatalf("round trip: %v -> %v, %v", m, back, err)
		}
	})
}
