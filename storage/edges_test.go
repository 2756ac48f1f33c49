package storage

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// segmentsOf lists a log's segments.
func segmentsOf(t testing.TB, l *Log) []SegmentInfo {
	t.Helper()
	segs, err := l.Segments()
	require.NoError(t, err)
	return segs
}

// flipByte inverts one byte of a file.
func flipByte(t testing.TB, path string, pos int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Less(t, pos, int64(len(b)))
	b[pos] ^= 0xff
	require.NoError(t, os.WriteFile(path, b, 0o640))
}

// closings are the ways a test closes a log before it damages its files:
// cleanly (the marker and manifest written), or uncleanly with the
// recovery point at the end (Checkpoint, then no marker).
var closings = []struct {
	name  string
	close func(t *testing.T, l *Log)
}{
	{"clean close", func(t *testing.T, l *Log) { require.NoError(t, l.Close()) }},
	{"unclean, recovery point at the end", func(t *testing.T, l *Log) {
		require.NoError(t, l.Checkpoint())
		require.NoError(t, l.CloseUnflushed())
	}},
}

// TestHoleInTheChainIsCorrupt: a segment gone from the middle of the
// chain is ErrCorrupt naming the missing offsets, whether the log was
// closed cleanly or not, and wherever the recovery point lies; never an
// open that succeeds and then reads EOF at the missing offsets.
func TestHoleInTheChainIsCorrupt(t *testing.T) {
	for _, tc := range closings {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openFilled(t, dir, small(), 1000, 5)
			segs := segmentsOf(t, l)
			require.Greater(t, len(segs), 3)
			gone := segs[1]
			tc.close(t, l)
			removeSegmentFiles(t, dir, gone.BaseOffset)

			_, err := Open(dir, small())
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrCorrupt)
			var hole *HoleError
			if errors.As(err, &hole) {
				assert.Equal(t, gone.BaseOffset, hole.From)
				assert.Equal(t, gone.NextOffset, hole.Upto)
			} else {
				assert.Contains(t, err.Error(), segment.FileName(gone.BaseOffset, segment.LogSuffix), "names the missing segment")
			}
		})
	}
}

// TestDamageBelowRecoveryPointIsNotCut: a bit flip in data that was
// fsynced and checkpointed is reported (file, position, offset) and not
// truncated: the log opens, reads below the damage work, writes refuse
// with ErrDamaged, and the files are left as they were.
func TestDamageBelowRecoveryPointIsNotCut(t *testing.T) {
	for _, tc := range closings {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openFilled(t, dir, small(), 1000, 5)
			segs := segmentsOf(t, l)
			last := segs[len(segs)-1]
			require.Greater(t, last.NextOffset-last.BaseOffset, int64(20))
			tc.close(t, l)
			before, err := os.ReadFile(last.Path)
			require.NoError(t, err)
			// Inside the last batch: a clean open verifies the tail of the
			// active segment (from its last index entry), a recovery the
			// whole segment that holds the recovery point.
			sc, err := scanLog(vfs.Default, dir, last.BaseOffset, -1, segment.DefaultLimits)
			require.NoError(t, err)
			require.Nil(t, sc.damage)
			flipAt := sc.end - 5
			flipByte(t, last.Path, flipAt)

			l = openLog(t, dir, small())
			st, err := l.Stats()
			require.NoError(t, err)
			var d *DamageError
			require.ErrorAs(t, st.Damaged, &d)
			assert.Equal(t, last.Path, d.File)
			assert.Greater(t, d.Offset, last.BaseOffset)
			assert.Less(t, d.Offset, last.NextOffset)
			assert.LessOrEqual(t, d.Pos, flipAt)
			assert.ErrorIs(t, st.Damaged, ErrCorrupt)
			assert.Equal(t, d, l.OpenStats().Damage)

			_, err = l.Append(Record{Value: []byte("x")})
			assert.ErrorIs(t, err, ErrDamaged)
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.ErrorIs(t, l.Truncate(5), ErrDamaged)
			_, err = l.DeleteSegmentsBefore(100)
			assert.ErrorIs(t, err, ErrDamaged)

			assert.Equal(t, d.Offset, readAll(t, l, 0), "every record below the damage reads")
			require.NoError(t, l.Close())
			after, err := os.ReadFile(last.Path)
			require.NoError(t, err)
			assert.Equal(t, len(before), len(after), "nothing cut")

			// And again at the next open: nothing was lowered meanwhile.
			l = openLog(t, dir, small())
			assert.NotNil(t, l.OpenStats().Damage)
			require.NoError(t, l.Close())
		})
	}
}

// TestUnusableFilesAreQuarantined: files the engine does not recognise or
// cannot use are moved into the partition's quarantine folder, reported
// in OpenStats, never deleted; the engine's own leftovers are removed.
func TestUnusableFilesAreQuarantined(t *testing.T) {
	cases := []struct {
		name        string
		file        func(end int64) string
		content     []byte
		quarantined bool
		left        bool // stays where it is, untouched
	}{
		{"garbage segment after the last", func(end int64) string { return segment.FileName(end+100, segment.LogSuffix) }, []byte("garbage, not a batch, but a file someone cares about"), true, false},
		{"orphan index", func(end int64) string { return segment.FileName(end+100, segment.IndexSuffix) }, make([]byte, 16), true, false},
		{"foreign temporary file", func(int64) string { return "notes.tmp" }, []byte("an operator's notes"), true, false},
		{"the engine's own temporary file", func(int64) string { return recoveryPointFile + ".123-4.tmp" }, []byte("x"), false, false},
		{"Kafka's partition.metadata being replaced by its writer", func(int64) string { return KafkaPartitionMetadataFile + ".123-4.tmp" }, []byte("version: 0\n"), false, true},
	}
	for _, tc := range cases {
		for _, clean := range []bool{true, false} {
			name := tc.name + map[bool]string{true: "/after a clean close", false: "/after an unclean close"}[clean]
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				l := openFilled(t, dir, small(), 300, 5)
				end := l.EndOffset()
				if clean {
					require.NoError(t, l.Close())
				} else {
					require.NoError(t, l.CloseUnflushed())
				}
				name := tc.file(end)
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), tc.content, 0o640))

				l = openLog(t, dir, small())
				_, err := l.Append(Record{Value: []byte("after")})
				require.NoError(t, err)
				assert.Equal(t, end+1, l.EndOffset())
				if tc.left {
					got, err := os.ReadFile(filepath.Join(dir, name))
					require.NoError(t, err, "left in place")
					assert.Equal(t, tc.content, got)
					assert.Empty(t, l.OpenStats().Quarantined)
					return
				}
				assert.NoFileExists(t, filepath.Join(dir, name))
				qpath := filepath.Join(dir, QuarantineDir, name)
				if !tc.quarantined {
					assert.NoFileExists(t, qpath)
					assert.Empty(t, l.OpenStats().Quarantined)
					return
				}
				got, err := os.ReadFile(qpath)
				require.NoError(t, err, "moved into quarantine")
				assert.Equal(t, tc.content, got)
				require.Len(t, l.OpenStats().Quarantined, 1)
				assert.Equal(t, filepath.Join(dir, name), l.OpenStats().Quarantined[0].File)
				assert.Equal(t, qpath, l.OpenStats().Quarantined[0].To)
				assert.NotEmpty(t, l.OpenStats().Quarantined[0].Why)
			})
		}
	}
}

// TestReadInAHoleIsCorrupt: a sealed segment whose data ends before the
// next segment begins (bytes lost after the open) fails a read at the
// missing offsets with ErrCorrupt naming them, never a bare EOF.
func TestReadInAHoleIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	l := openFilled(t, dir, small(), 1000, 5)
	segs := segmentsOf(t, l)
	require.Greater(t, len(segs), 3)
	require.NoError(t, l.Close())
	l = openLog(t, dir, small())
	require.True(t, l.OpenStats().FromManifest, "sealed segments are not opened")

	victim := segs[1]
	mid := victim.BaseOffset + (victim.NextOffset-victim.BaseOffset)/2
	sc, err := scanLog(vfs.Default, dir, victim.BaseOffset, mid, segment.DefaultLimits)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(victim.Path, sc.end)) // at a batch boundary

	_, err = l.Read(sc.next, 1<<20)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, io.EOF)
	var hole *HoleError
	require.ErrorAs(t, err, &hole)
	assert.Equal(t, sc.next, hole.From)
	assert.Equal(t, victim.NextOffset, hole.Upto)

	_, err = l.Read(victim.BaseOffset, 1)
	assert.NoError(t, err, "below the hole reads work")
}

// TestOwnLeftover: the leftovers of the engine's own writes and deletions
// are told from files that only look like them.
func TestOwnLeftover(t *testing.T) {
	cases := map[string]bool{
		recoveryPointFile + ".4242-7.tmp":        true,
		highWatermarkFile + ".1-1.tmp":           true,
		manifestFile + ".99-3.tmp":               true,
		"00000000000000000042.snapshot.tmp":      true,
		"00000000000000000042.log.deleted":       true,
		"00000000000000000042.timeindex.deleted": true,
		"notes.tmp":                              false,
		"recovery-pointx.1-1.tmp":                false,
		"42.log.deleted":                         false,
		"00000000000000000042.txt.deleted":       false,
		".tmp":                                   false,
	}
	for name, own := range cases {
		assert.Equal(t, own, ownLeftover(name), name)
	}
}
