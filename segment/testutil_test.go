package segment

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// fixLengthAndChecksum rewrites the length and checksum of a hand-built batch.
func fixLengthAndChecksum(b []byte) {
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-lengthPrefix))
	binary.BigEndian.PutUint64(b[offChecksum:], xxhash.Sum64(b[checksumStart:]))
}
