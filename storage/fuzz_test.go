package storage

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/seglog/seglog/vfs"
)

// Fuzz targets for every small file the log reads back from disk. Each
// decoder must refuse what it cannot read without panicking, and what it
// accepts must encode back to bytes that decode to the same thing.

// fuzzRoundTrip fuzzes decode from the seeds: what it refuses ends the
// case; what it accepts must pass valid (if not nil), and encode must turn
// it into bytes that decode again to a value same as it.
func fuzzRoundTrip[T any](f *testing.F, seeds [][]byte, decode func([]byte) (T, error), encode func(T) []byte, valid func(T) error, same func(a, b T) bool) {
	for _, b := range seeds {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decode(b)
		if err != nil {
			return
		}
		if valid != nil {
			if err := valid(v); err != nil {
				t.Fatalf("accepted %+v: %v", v, err)
			}
		}
		again, err := decode(encode(v))
		if err != nil || !same(v, again) {
			t.Fatalf("round trip: %+v -> %+v, %v", v, again, err)
		}
	})
}

func equal[T comparable](a, b T) bool { return a == b }

func FuzzCheckpoint(f *testing.F) {
	fuzzRoundTrip(f, [][]byte{
		encodeCheckpoint(recoveryPointFile, 0),
		encodeCheckpoint(recoveryPointFile, 1<<40),
		[]byte("seglog recovery-point v1 -1 0000000000000000\n"),
		{},
	},
		func(b []byte) (int64, error) { return decodeCheckpoint(recoveryPointFile, b) },
		func(v int64) []byte { return encodeCheckpoint(recoveryPointFile, v) },
		func(v int64) error {
			if v < 0 {
				return fmt.Errorf("negative offset %d", v)
			}
			return nil
		},
		equal[int64])
}

// FuzzCleanStamp: the clean-shutdown marker's stamp of the directory.
func FuzzCleanStamp(f *testing.F) {
	fuzzRoundTrip(f, [][]byte{
		encodeCleanStamp(cleanStamp{Dir: vfs.DirStamp{Dev: 2049, Ino: 1 << 40, Ctime: 1_796_148_937_571_594_515, Mount: 1 << 33, Boot: [16]byte{0x8a, 0x4d, 15: 0xe6}}, Manifest: 0x0123456789abcdef}),
		encodeCleanStamp(cleanStamp{Dir: vfs.DirStamp{Dev: 1<<64 - 1, Ino: 1<<64 - 1, Ctime: -1, Mount: 1<<64 - 1}, Manifest: 1<<64 - 1}),
		[]byte("seglog .clean-shutdown v1 1 2 3 4 000102030405060708090a0b0c0d0e0f 0000000000000004 0000000000000000\n"),
		{},
	}, decodeCleanStamp, encodeCleanStamp, nil, equal[cleanStamp])
}

func FuzzProducerSnapshot(f *testing.F) {
	ps := newProducerState()
	ps.m[7] = &producerEntry{epoch: 2, lastSeen: 99, batches: []producerBatch{{0, 4, 10, 14}, {5, 9, 20, 24}}}
	ps.m[9] = &producerEntry{epoch: 0, lastSeen: 1}
	fuzzRoundTrip(f, [][]byte{
		ps.encode(),
		newProducerState().encode(),
		[]byte("SGPS\x01\xff\xff\xff\xff"),
	},
		decodeProducerSnapshot, (*producerState).encode, nil,
		func(a, b *producerState) bool { return len(a.m) == len(b.m) })
}

func FuzzEpochCache(f *testing.F) {
	fuzzRoundTrip(f, [][]byte{
		(&epochCache{entries: []EpochEntry{{1, 0}, {4, 100}, {9, 100000}}}).encode(),
		(&epochCache{}).encode(),
		[]byte("seglog leader-epoch-checkpoint v1 99999999\n"),
	},
		decodeEpochCache, (*epochCache).encode,
		func(c *epochCache) error {
			for i := 1; i < len(c.entries); i++ {
				if c.entries[i].Epoch <= c.entries[i-1].Epoch || c.entries[i].StartOffset < c.entries[i-1].StartOffset {
					return fmt.Errorf("entries out of order: %v", c.entries)
				}
			}
			return nil
		},
		func(a, b *epochCache) bool { return len(a.entries) == len(b.entries) })
}

func FuzzManifest(f *testing.F) {
	m := manifest{Segments: []segmentInfo{{0, 4096, 1700000000000, 12}, {368769, -1, 0, -1}}, Snapshots: []int64{368769}}
	fuzzRoundTrip(f, [][]byte{
		m.encode(),
		(&manifest{Segments: []segmentInfo{{5, 0, 0, -1}}}).encode(),
		[]byte("seglog manifest v1 1000000000 0\n"),
	},
		func(b []byte) (*manifest, error) {
			if m, ok := decodeManifest(b); ok {
				return m, nil
			}
			return nil, errors.New("refused")
		},
		(*manifest).encode,
		func(m *manifest) error {
			if len(m.Segments) == 0 {
				return errors.New("a manifest with no segment")
			}
			return nil
		},
		func(a, b *manifest) bool {
			return len(a.Segments) == len(b.Segments) && len(a.Snapshots) == len(b.Snapshots)
		})
}

// FuzzTopicConfig: the topic config decoder never panics, and what it
// accepts encodes back to the same bytes.
func FuzzTopicConfig(f *testing.F) {
	fuzzRoundTrip(f, [][]byte{
		encodeTopicConfig(TopicConfig{}),
		encodeTopicConfig(TopicConfig{SegmentBytes: 4096, SegmentAge: time.Hour, Sync: "always", Compression: "zstd", RetentionBytes: 1 << 30, RetentionConsumed: true}),
		[]byte("seglog topic-config v1 0\n"),
	},
		decodeTopicConfig, encodeTopicConfig, nil, equal[TopicConfig])
}

func FuzzStoreStartOffsets(f *testing.F) {
	fuzzRoundTrip(f, [][]byte{
		encodeStartOffsets(map[string]int64{"a-0": 5, "x-y-3": 40}),
		encodeStartOffsets(map[string]int64{}),
		[]byte("seglog log-start-offset-checkpoint v1 1\na 0 1\n"),
	},
		decodeStartOffsets, encodeStartOffsets, nil, maps.Equal[map[string]int64])
}
