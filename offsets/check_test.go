package offsets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkedStore writes a store with commits in two groups, compacted into
// a snapshot and then committed to again, and returns its directory and
// the current journal.
func checkedStore(t *testing.T) (dir, journal string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "offsets")
	st, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, st.Commit("g1", "orders", 0, 10, ""))
	require.NoError(t, st.Compact())
	for i := range 5 {
		require.NoError(t, st.Commit("g2", "orders", int32(i), int64(100+i), "meta"))
	}
	require.NoError(t, st.Close())
	m, err := filepath.Glob(filepath.Join(dir, journalPrefix+"*"))
	require.NoError(t, err)
	require.NotEmpty(t, m)
	return dir, m[len(m)-1]
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestCheckReportsWhatOpenWouldDo: Check reports each problem of an offset
// store with its file and position, as an error exactly when Open refuses
// the store, and Open then does what Check said (a warning is gone after
// it).
func TestCheckReportsWhatOpenWouldDo(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir, journal string) (file string, pos int64)
		isErr  bool
		what   string
	}{
		{"torn journal tail", func(t *testing.T, dir, journal string) (string, int64) {
			fi, err := os.Stat(journal)
			require.NoError(t, err)
			appendBytes(t, journal, []byte{9, 0, 0})
			return journal, fi.Size()
		}, false, "a torn tail of 3 bytes"},
		{"corrupt record in the middle of a journal", func(t *testing.T, dir, journal string) (string, int64) {
			b, err := os.ReadFile(journal)
			require.NoError(t, err)
			b[journalHeaderSize+recordHeaderSize+2] ^= 0x10
			require.NoError(t, os.WriteFile(journal, b, 0o644))
			return journal, journalHeaderSize
		}, true, "Open refuses the store"},
		{"corrupt snapshot", func(t *testing.T, dir, journal string) (string, int64) {
			p := filepath.Join(dir, snapshotName)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[len(b)-1] ^= 0x10
			require.NoError(t, os.WriteFile(p, b, 0o644))
			return p, -2 // any position
		}, true, "Open refuses the store"},
		{"interrupted snapshot write", func(t *testing.T, dir, journal string) (string, int64) {
			p := filepath.Join(dir, snapshotName+".123-1.tmp")
			require.NoError(t, os.WriteFile(p, []byte("half"), 0o644))
			return p, -1
		}, false, "the next open removes it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, journal := checkedStore(t)
			file, pos := tc.damage(t, dir, journal)
			rep, err := Check(dir)
			require.NoError(t, err)
			require.True(t, rep.Exists)
			require.Len(t, rep.Problems, 1, "%v", rep.Problems)
			p := rep.Problems[0]
			assert.Equal(t, file, p.File)
			if pos != -2 {
				assert.Equal(t, pos, p.Pos)
			}
			assert.Equal(t, tc.isErr, p.Err)
			assert.Contains(t, p.What, tc.what)

			st, err := Open(dir, Options{})
			if tc.isErr {
				require.ErrorIs(t, err, ErrCorrupt)
				return
			}
			require.NoError(t, err)
			require.NoError(t, st.Close())
			rep, err = Check(dir)
			require.NoError(t, err)
			assert.Empty(t, rep.Problems, "the open repaired what Check said it would")
		})
	}
}

// TestCheckCountsAndMissingStore: a healthy store's groups and positions
// are counted, and a directory that does not exist is no store, not an
// error.
func TestCheckCountsAndMissingStore(t *testing.T) {
	dir, _ := checkedStore(t)
	rep, err := Check(dir)
	require.NoError(t, err)
	assert.True(t, rep.Exists)
	assert.Empty(t, rep.Problems)
	assert.Equal(t, 2, rep.Groups)
	assert.Equal(t, 6, rep.Positions)
	assert.Zero(t, rep.Errors())

	rep, err = Check(filepath.Join(t.TempDir(), "none"))
	require.NoError(t, err)
	assert.False(t, rep.Exists)
}
