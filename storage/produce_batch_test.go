package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/seglog/seglog/segment"
)

func TestBatchLimitsFitRecordsAndBytesWithTheFraming(t *testing.T) {
	l := BatchLimits{Records: 3, Bytes: segment.HeaderSize + 2*RecordBytes(100)}
	for _, tc := range []struct {
		name                   string
		n, size, add, addBytes int
		want                   bool
	}{
		{"an empty batch takes a record larger than the cap", 0, 0, 1, RecordBytes(1 << 20), true},
		{"a second record within the bytes", 1, RecordBytes(100), 1, RecordBytes(100), true},
		{"a byte past the cap", 1, RecordBytes(100), 1, RecordBytes(101), false},
		{"the record cap", 3, RecordBytes(1), 1, RecordBytes(1), false},
		{"records that reach the cap together", 1, RecordBytes(1), 2, 2 * RecordBytes(1), true},
		{"records that pass the cap together", 2, RecordBytes(1), 2, 2 * RecordBytes(1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, l.Fits(tc.n, tc.size, tc.add, tc.addBytes))
		})
	}
}
