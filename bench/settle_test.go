package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMeminfoKiB(t *testing.T) {
	meminfo := []byte("MemTotal:       24554112 kB\nDirty:              1284 kB\nWriteback:             0 kB\nWritebackTmp:          8 kB\nBad:  x12 kB\nEmpty:\n")
	tests := []struct {
		name string
		want int64
		ok   bool
	}{
		{"Dirty:", 1284, true},
		{"Writeback:", 0, true},
		{"WritebackTmp:", 8, true},
		{"MemTotal:", 24554112, true},
		{"Bad:", 0, false},
		{"Empty:", 0, false},
		{"Missing:", 0, false},
	}
	for _, tc := range tests {
		v, ok := meminfoKiB(meminfo, tc.name)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.want, v, tc.name)
	}
}
