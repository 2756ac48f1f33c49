package segment

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// createT creates the segment at baseOffset in dir, with testOpts.
func createT(t testing.TB, dir string, baseOffset int64) *Segment {
	t.Helper()
	s, err := Create(dir, baseOffset, testOpts())
	require.NoError(t, err)
	return s
}

// fixLengthAndChecksum rewrites the length and checksum of a hand-built batch.
func fixLengthAndChecksum(b []byte) {
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-lengthPrefix))
	binary.BigEndian.PutUint32(b[offChecksum:], crc32.Checksum(b[offAttributesV2:], crcTable))
}

// closedSegment creates a segment at 0 in a new directory with n batches
// of 3 records of 100 bytes, closes it, and returns the directory, the
// .log's path, the batches and the file's bytes.
func closedSegment(t *testing.T, n int) (dir, logPath string, batches [][]byte, full []byte) {
	t.Helper()
	dir = t.TempDir()
	s := createT(t, dir, 0)
	batches = appendN(t, s, n, 3, 100)
	require.NoError(t, s.Close())
	logPath = filepath.Join(dir, FileName(0, LogSuffix))
	full, err := os.ReadFile(logPath)
	require.NoError(t, err)
	return dir, logPath, batches, full
}
