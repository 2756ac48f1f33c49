package vfs

import (
	"encoding/binary"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dirent encodes one linux_dirent64 record, padded to 8 bytes.
func dirent(ino uint64, typ uint8, name string) []byte {
	n := (direntName + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint64(b, ino)
	binary.NativeEndian.PutUint16(b[direntReclen:], uint16(n))
	b[direntType] = typ
	copy(b[direntName:], name)
	return b
}

// TestScanDirentsRefusesDamage: records whose length runs past the buffer
// or cannot hold a name are an error, never a panic or a wrong name.
func TestScanDirentsRefusesDamage(t *testing.T) {
	good := append(dirent(7, 8, "00000000000000000000.log"), dirent(0, 8, "unused")...)
	var names []string
	require.NoError(t, scanDirents("d", good, func(name string, _ fs.FileMode) error {
		names = append(names, strings.Clone(name))
		return nil
	}))
	assert.Equal(t, []string{"00000000000000000000.log"}, names, "an entry of inode 0 is an unused slot")

	short := dirent(7, 8, "x")
	binary.NativeEndian.PutUint16(short[direntReclen:], uint16(len(short)+8))
	zero := dirent(7, 8, "x")
	binary.NativeEndian.PutUint16(zero[direntReclen:], 0)
	for name, b := range map[string][]byte{"past the end": short, "zero length": zero, "cut header": good[:10]} {
		err := scanDirents("d", b, func(string, fs.FileMode) error { return nil })
		assert.Error(t, err, name)
	}
}

// FuzzScanDirents: any bytes give entries inside the input or an error.
func FuzzScanDirents(f *testing.F) {
	f.Add(append(dirent(1, 8, "a.log"), dirent(2, 4, "sub")...))
	f.Add(dirent(3, 0, "unknown-type"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = scanDirents("/nonexistent-seglog-fuzz", b, func(name string, _ fs.FileMode) error {
			if name == "" || strings.IndexByte(name, 0) >= 0 || len(name) > len(b) {
				t.Fatalf("bad name %q", name)
			}
			return nil
		})
	})
}
