package segment

import (
	"encoding/binary"
	"testing"

	"github.com/cespare/xxhash/v2"
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
	binary.BigEndian.PutUint64(b[offChecksum:], xxhash.Sum64(b[checksumStart:]))
}
