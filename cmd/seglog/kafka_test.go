package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
)

// copyFixture copies the partition directory src (a fixture of storage's
// testdata) to the partition directory dst, created.
func copyFixture(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dst, 0o750))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o640))
	}
}

// kafkaData copies storage's Kafka partition directory fixture
// (storage/testdata/kafka.README.md: Kafka's layout and formats, built
// with franz-go's kmsg, not by a broker) into a new data directory.
func kafkaData(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	copyFixture(t, filepath.Join("..", "..", "storage", "testdata", "kafka", "orders-0"), filepath.Join(root, "orders-0"))
	return root
}

// seglog dump of a Kafka .log prints what kafka-dump-log.sh
// --print-data-log prints for each batch and record (the golden file);
// verify and consume read the directory; nothing changes in it.
func TestKafkaPartitionDirectory(t *testing.T) {
	root := kafkaData(t)
	before := hashTree(t, root)
	seg0 := filepath.Join(root, "orders-0", segment.FileName(0, segment.LogSuffix))
	seg1 := filepath.Join(root, "orders-0", segment.FileName(88, segment.LogSuffix))
	out := transcript(t, root, []step{
		run1("dump", "--records", "--verify-index", seg0, seg1),
		run1("verify", "--deep", root),
		run1("consume", "--dir", root, "--topic", "orders", "--from", "earliest", "--format", `%o %k %v\n`),
	})
	checkGolden(t, "kafka", out)
	assert.Equal(t, before, hashTree(t, root), "read-only")

	r := seglog(t, "", "consume", "--dir", root, "--topic", "orders", "--from", "earliest", "--format", `%o\n`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, "\n"+r.stdout, "\n27\n", "the COMMIT marker at offset 27 is not a record a consumer gets")
}

// A data directory written with seglog's version-1 batch format verifies
// clean, its indexes (entries naming base offsets) included, and dumps
// with magic 1.
func TestVersion1DirectoryVerifiesAndDumps(t *testing.T) {
	root := t.TempDir()
	dst := filepath.Join(root, "v1-0")
	copyFixture(t, filepath.Join("..", "..", "storage", "testdata", "v1log"), dst)
	r := seglog(t, "", "verify", "--deep", root)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "v1-0: 2 segments, 40 batches, 100 records, end offset 100, ")
	r = seglog(t, "", "dump", "--records", "--verify-index", filepath.Join(dst, segment.FileName(0, segment.LogSuffix)))
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "magic: 1 compresscodec: s2")
	assert.Contains(t, r.stdout, "00000000000000000000.log: ok\n", "the index check")
}
