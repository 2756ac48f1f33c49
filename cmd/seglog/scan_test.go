package main

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// largeBatchLog writes one partition log in dir with one batch per entry
// of sizes (records of 1 KiB of incompressible bytes, so that a
// compressed batch is about as large on disk) and returns the record
// count.
func largeBatchLog(t *testing.T, dir string, codec segment.Codec, sizes []int) int {
	t.Helper()
	l, err := storage.Open(dir, storage.Options{Compression: codec})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 0
	for _, size := range sizes {
		recs := make([]storage.Record, size/1024)
		for i := range recs {
			v := make([]byte, 1024)
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			recs[i] = storage.Record{Timestamp: fixedTS + int64(n), Value: v}
			n++
		}
		_, err := l.Append(recs...)
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	return n
}

// TestLargeBatches: dump and verify read batches of any size up to the
// limits, not only those that fit the first read buffer (a batch over
// 64 KiB must not read as "unknown version 0").
func TestLargeBatches(t *testing.T) {
	sizes := []int{100 << 10, 2 << 20, 1 << 20, 100 << 10, 2<<20 + 512<<10}
	for _, codec := range []segment.Codec{segment.CodecNone, segment.CodecGzip, segment.CodecSnappy, segment.CodecLZ4, segment.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "big-0")
			nrec := largeBatchLog(t, dir, codec, sizes)
			logPath := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))

			r := seglog(t, "", "verify", "--deep", dir)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, r.stderr)
			assert.Contains(t, r.stdout, "big-0: 1 segment, 5 batches, "+itoa(nrec)+" records")

			r = seglog(t, "", "dump", "--verify-index", logPath)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, r.stderr)
			assert.Equal(t, len(sizes), strings.Count(r.stdout, "valid: true"))
			assert.NotContains(t, r.stdout, "valid: false")

			r = seglog(t, "", "dump", "--records", "--max-value-bytes", "4", logPath)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, nrec, strings.Count(r.stdout, "| offset: "))
		})
	}
}

// TestVerifyProducedDefaultBatches: what seglog produce writes with its
// defaults (1 KB lines, batches far over 64 KiB) verifies and dumps clean.
func TestVerifyProducedDefaultBatches(t *testing.T) {
	root := t.TempDir()
	line := strings.Repeat("x", 1000) + "\n"
	r := seglog(t, strings.Repeat(line, 3000), "produce", "--dir", root, "--topic", "t")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "", "verify", root)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	assert.Contains(t, r.stdout, "3000 records")
	r = seglog(t, "", "dump", filepath.Join(root, "t-0", segment.FileName(0, segment.LogSuffix)))
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
}
