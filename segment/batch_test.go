package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

func decodeAll(t testing.TB, b []byte) (Header, []Record) {
	t.Helper()
	var it RecordIter
	require.NoError(t, it.Reset(b, DefaultLimits))
	var out []Record
	for it.Next() {
		r := *it.Record()
		r.Headers = append([]RecordHeader(nil), r.Headers...)
		out = append(out, r)
	}
	require.NoError(t, it.Err())
	return it.Header(), out
}

func TestRoundTrip(t *testing.T) {
	large := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	cases := []struct {
		name string
		recs []Record
	}{
		{"keys", []Record{{Timestamp: 1000, Key: []byte("k1"), Value: []byte("v1")}, {Timestamp: 1002, Key: []byte("k2"), Value: []byte("v2")}}},
		{"no keys", []Record{{Timestamp: 5, Value: []byte("a")}, {Timestamp: 4, Value: []byte("b")}}},
		{"empty key and value", []Record{{Timestamp: 7, Key: []byte{}, Value: []byte{}}}},
		{"null value", []Record{{Timestamp: 7, Key: []byte("tomb")}}},
		{"headers", []Record{{Timestamp: 9, Value: []byte("x"), Headers: []RecordHeader{{Key: []byte("h1"), Value: []byte("a")}, {Key: []byte(""), Value: nil}, {Key: []byte("h3"), Value: []byte{}}}}}},
		{"large value", []Record{{Timestamp: 1, Value: large}, {Timestamp: 2, Key: []byte("after"), Value: []byte("small")}}},
		{"negative timestamps", []Record{{Timestamp: -50, Value: []byte("old")}, {Timestamp: -10, Value: []byte("older")}}},
	}
	for _, codec := range allCodecs {
		for _, tc := range cases {
			t.Run(codec.String()+"/"+tc.name, func(t *testing.T) {
				opts := EncodeOptions{Codec: codec, ProducerID: 42, ProducerEpoch: 3, BaseSequence: 17, LeaderEpoch: 5, BaseOffset: 100}
				b, err := AppendBatch([]byte("prefix"), tc.recs, opts)
				require.NoError(t, err)
				require.Equal(t, []byte("prefix"), b[:6])
				b = b[6:]
				h, got := decodeAll(t, b)
				assert.Equal(t, codec, h.Codec())
				assert.Equal(t, int64(100), h.BaseOffset)
				assert.Equal(t, int64(100+len(tc.recs)-1), h.LastOffset())
				assert.Equal(t, int64(42), h.ProducerID)
				assert.Equal(t, int16(3), h.ProducerEpoch)
				assert.Equal(t, int32(17), h.BaseSequence)
				assert.Equal(t, int32(5), h.LeaderEpoch)
				assert.Equal(t, len(b), h.Size())
				require.Len(t, got, len(tc.recs))
				maxTS := tc.recs[0].Timestamp
				for i, want := range tc.recs {
					maxTS = max(maxTS, want.Timestamp)
					assert.Equal(t, int64(100+i), got[i].Offset)
					assert.Equal(t, want.Timestamp, got[i].Timestamp)
					assert.Equal(t, want.Key, got[i].Key, "key of record %d", i)
					assert.Equal(t, want.Value, got[i].Value, "value of record %d", i)
					assert.Equal(t, want.Key == nil, got[i].Key == nil)
					assert.Equal(t, want.Value == nil, got[i].Value == nil)
					require.Len(t, got[i].Headers, len(want.Headers))
					for j := range want.Headers {
						assert.Equal(t, want.Headers[j].Key, got[i].Headers[j].Key)
						assert.Equal(t, want.Headers[j].Value, got[i].Headers[j].Value)
						assert.Equal(t, want.Headers[j].Value == nil, got[i].Headers[j].Value == nil)
					}
				}
				assert.Equal(t, tc.recs[0].Timestamp, h.BaseTimestamp)
				assert.Equal(t, maxTS, h.MaxTimestamp)
			})
		}
	}
}

func TestNoProducer(t *testing.T) {
	b, err := AppendBatch(nil, []Record{{Value: []byte("v")}}, EncodeOptions{})
	require.NoError(t, err)
	h, err := Verify(b, DefaultLimits)
	require.NoError(t, err)
	assert.Equal(t, int64(NoProducerID), h.ProducerID)
	assert.False(t, h.HasProducer())
}

func TestEncodeInvalid(t *testing.T) {
	_, err := AppendBatch(nil, nil, EncodeOptions{})
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = AppendBatch(nil, []Record{{Value: []byte("v")}}, EncodeOptions{Codec: 7})
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestPatchKeepsChecksum(t *testing.T) {
	b, err := AppendBatch(nil, []Record{{Timestamp: 1, Value: []byte("v")}, {Timestamp: 2, Value: []byte("w")}}, EncodeOptions{Codec: CodecZstd})
	require.NoError(t, err)
	SetBaseOffset(b, 1<<40)
	SetLeaderEpoch(b, 77)
	h, recs := decodeAll(t, b)
	assert.Equal(t, int64(1<<40), h.BaseOffset)
	assert.Equal(t, int32(77), h.LeaderEpoch)
	assert.Equal(t, int64(1<<40+1), recs[1].Offset)
}

func smallBatch(t testing.TB, codec Codec) []byte {
	recs := []Record{
		{Timestamp: 1700000000000, Key: []byte("key"), Value: []byte("value one"), Headers: []RecordHeader{{Key: []byte("h"), Value: []byte("hv")}}},
		{Timestamp: 1700000000005, Value: []byte("value two")},
	}
	b, err := AppendBatch(nil, recs, EncodeOptions{Codec: codec, ProducerID: 9, BaseSequence: 1})
	require.NoError(t, err)
	return b
}

// Every single-byte change is detected, except in the two fields that the
// log patches without a new checksum (baseOffset, leaderEpoch); there the
// batch decodes with the changed value, and the segment's offset checks
// (see segment tests) catch a changed baseOffset.
func TestEveryByteFlipDetected(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			orig := smallBatch(t, codec)
			for i := range orig {
				for _, mask := range []byte{0x01, 0x80, 0xff} {
					b := bytes.Clone(orig)
					b[i] ^= mask
					_, err := ValidateRecords(b, DefaultLimits)
					patchable := i < offBatchLength || (i >= offLeaderEpoch && i < offVersion)
					if patchable {
						h, perr := ParseHeader(b, DefaultLimits)
						if perr == nil {
							orig, _ := ParseHeader(orig, DefaultLimits)
							assert.True(t, h.BaseOffset != orig.BaseOffset || h.LeaderEpoch != orig.LeaderEpoch, "byte %d", i)
						}
						continue
					}
					require.Error(t, err, "flip %#x at byte %d decoded as valid", mask, i)
					assert.ErrorIs(t, err, ErrCorrupt, "byte %d", i)
				}
			}
		})
	}
}

func TestChecksumErrorDistinguishable(t *testing.T) {
	b := smallBatch(t, CodecNone)
	b[len(b)-1] ^= 1
	_, err := Verify(b, DefaultLimits)
	assert.ErrorIs(t, err, ErrChecksum)
	assert.ErrorIs(t, err, ErrCorrupt)
	b = smallBatch(t, CodecNone)
	b[offVersion] = 9
	_, err = Verify(b, DefaultLimits)
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrChecksum)
}

func TestTruncatedAtEveryLength(t *testing.T) {
	for _, codec := range allCodecs {
		b := smallBatch(t, codec)
		for n := 0; n < len(b); n++ {
			_, err := ValidateRecords(b[:n], DefaultLimits)
			require.Error(t, err, "%s truncated to %d bytes", codec, n)
			assert.ErrorIs(t, err, ErrCorrupt)
		}
	}
}

// A batch whose header claims gigabytes is refused before any allocation.
func TestHugeLengthRefused(t *testing.T) {
	b := smallBatch(t, CodecNone)
	b[offBatchLength], b[offBatchLength+1], b[offBatchLength+2], b[offBatchLength+3] = 0x7f, 0xff, 0xff, 0xff
	_, err := ParseHeader(b, DefaultLimits)
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.ErrorIs(t, err, ErrCorrupt)
	// Only the error is allocated, never the claimed length.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _ = ValidateRecords(b, DefaultLimits)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
}

// Checksums are valid (a producer could send this) but the records expand
// far past the limit: decoding stops at the limit with ErrTooLarge.
func TestDecompressionBomb(t *testing.T) {
	big := make([]byte, 8<<20) // zeros compress ~1000:1
	lim := Limits{MaxBatchBytes: 1 << 20, MaxRecordsBytes: 1 << 20}
	for _, codec := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			b, err := AppendBatch(nil, []Record{{Value: big}}, EncodeOptions{Codec: codec})
			require.NoError(t, err)
			require.Less(t, len(b), lim.MaxBatchBytes, "the compressed batch itself is under the batch limit")
			_, err = ValidateRecords(b, lim)
			assert.ErrorIs(t, err, ErrTooLarge)
			assert.ErrorIs(t, err, ErrCorrupt)
		})
	}
	// A zstd frame that lies about its size is refused too.
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	frame := enc.EncodeAll(big, nil)
	_, err = decompress(CodecZstd, nil, frame, 1<<20)
	assert.ErrorIs(t, err, ErrTooLarge)
}

func TestUncompressedRecordsLimit(t *testing.T) {
	b, err := AppendBatch(nil, []Record{{Value: make([]byte, 4096)}}, EncodeOptions{})
	require.NoError(t, err)
	_, err = ValidateRecords(b, Limits{MaxRecordsBytes: 1024})
	assert.ErrorIs(t, err, ErrTooLarge)
}

func TestHostileRecordLengths(t *testing.T) {
	// Hand-built records sections with lying lengths, wrapped in a batch
	// with a correct checksum, so only the record decoder can catch them.
	cases := []struct {
		name    string
		section []byte
	}{
		// Kafka's record: length, attributes, timestampDelta,
		// offsetDelta, keyLength, key, valueLength, value, headerCount,
		// every number a zigzag varint (6 is 12, -1 is 1).
		{"record length past end", []byte{0x7e, 0}},
		{"negative record length", []byte{0x01, 0}},
		{"huge varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"key length past record", []byte{12, 0, 0, 0, 0x7e, 1, 0}},
		{"negative key length", []byte{12, 0, 0, 0, 0x05, 1, 0}},
		{"offset delta past the last offset delta", []byte{12, 0, 0, 2, 1, 1, 0}},
		{"negative offset delta", []byte{12, 0, 0, 1, 1, 1, 0}},
		{"header count absurd", []byte{14, 0, 0, 0, 1, 1, 0x7e, 0}},
		{"negative header count", []byte{12, 0, 0, 0, 1, 1, 1}},
		{"trailing bytes in record", []byte{14, 0, 0, 0, 1, 1, 0, 9}},
		{"trailing bytes after last record", []byte{12, 0, 0, 0, 1, 1, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := rawBatch(tc.section, 1)
			_, err := ValidateRecords(b, DefaultLimits)
			assert.ErrorIs(t, err, ErrCorrupt)
		})
	}
	// The well-formed one decodes, so the cases above fail for their reason.
	_, err := ValidateRecords(rawBatch([]byte{12, 0, 0, 0, 1, 1, 0}, 1), DefaultLimits)
	require.NoError(t, err)
}

// rawBatch wraps a records section in a header with a valid checksum.
func rawBatch(section []byte, count int32) []byte {
	b, _ := AppendBatch(nil, []Record{{Value: []byte{}}}, EncodeOptions{})
	b = append(b[:HeaderSize], section...)
	b[offAttributesV2+relRecordCount+3] = byte(count)
	b[offAttributesV2+relLastDelta+3] = byte(count - 1)
	fixLengthAndChecksum(b)
	return b
}

func TestRandomRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		n := 1 + rng.IntN(50)
		recs := make([]Record, n)
		for i := range recs {
			recs[i].Timestamp = rng.Int64N(1 << 45)
			if rng.IntN(2) == 0 {
				recs[i].Key = randBytes(rng, rng.IntN(20))
			}
			if rng.IntN(10) > 0 {
				recs[i].Value = randBytes(rng, rng.IntN(3000))
			}
			for j := rng.IntN(3); j > 0; j-- {
				recs[i].Headers = append(recs[i].Headers, RecordHeader{Key: randBytes(rng, rng.IntN(5)), Value: randBytes(rng, rng.IntN(5))})
			}
		}
		codec := allCodecs[rng.IntN(len(allCodecs))]
		b, err := AppendBatch(nil, recs, EncodeOptions{Codec: codec})
		require.NoError(t, err)
		_, got := decodeAll(t, b)
		require.Len(t, got, n)
		for i := range recs {
			require.Equal(t, recs[i].Timestamp, got[i].Timestamp, fmt.Sprint(codec, i))
			require.Equal(t, string(recs[i].Key), string(got[i].Key))
			require.Equal(t, string(recs[i].Value), string(got[i].Value))
			require.Equal(t, len(recs[i].Headers), len(got[i].Headers))
		}
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestParseCodec(t *testing.T) {
	for _, c := range allCodecs {
		got, err := ParseCodec(c.String())
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	_, err := ParseCodec("s2")
	assert.Error(t, err, "s2 is read in version-1 batches, never written")
	assert.True(t, errors.Is(ErrChecksum, ErrCorrupt))
}

// TestZstdFrameChecksum: batches are written without the zstd frame's
// content checksum (the batch checksum covers the compressed bytes), and
// frames written with one (by earlier versions, or another producer) are
// still read, their checksum verified.
func TestZstdFrameChecksum(t *testing.T) {
	src := bytes.Repeat([]byte("seglog zstd frame "), 500)
	ours, err := compress(CodecZstd, nil, src)
	require.NoError(t, err)
	var h zstd.Header
	require.NoError(t, h.Decode(ours))
	assert.False(t, h.HasCheckSum, "written without the frame checksum")

	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	require.NoError(t, err)
	theirs := enc.EncodeAll(src, nil)
	require.NoError(t, h.Decode(theirs))
	require.True(t, h.HasCheckSum)
	for _, frame := range [][]byte{ours, theirs} {
		out, err := decompress(CodecZstd, nil, frame, 1<<20)
		require.NoError(t, err)
		assert.Equal(t, src, out)
	}
	bad := slices.Clone(theirs)
	bad[len(bad)-1] ^= 1 // the frame checksum's last byte
	_, err = decompress(CodecZstd, nil, bad, 1<<20)
	assert.ErrorIs(t, err, errDecompress)
}
