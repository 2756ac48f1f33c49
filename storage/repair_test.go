package storage

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// brokenLog builds a partition of several segments, closed cleanly, and
// returns its directory and segments.
func brokenLog(t *testing.T) (string, []SegmentInfo) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openFilled(t, dir, small(), 1000, 5)
	segs := segmentsOf(t, l)
	require.Greater(t, len(segs), 3)
	require.NoError(t, l.Close())
	return dir, segs
}

// batchEnd returns the byte position and offset after the batches of the
// segment at base that hold offsets below upto.
func batchEnd(t *testing.T, dir string, base, upto int64) (pos, next int64) {
	t.Helper()
	sc, err := scanLog(vfs.Default, dir, base, upto, segment.DefaultLimits)
	require.NoError(t, err)
	return sc.end, sc.next
}

// dirBytes returns every file under dir with its content.
func dirBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}

// TestCheckReportsWhatRecoveryWouldDo: Check names each problem with its
// file, position and offsets, its severity, and whether Open repairs it,
// by the rules recovery applies (and Open then does what Check said).
func TestCheckReportsWhatRecoveryWouldDo(t *testing.T) {
	cases := []struct {
		name        string
		damage      func(t *testing.T, dir string, segs []SegmentInfo) (file string, from int64)
		kind        ProblemKind
		severity    Severity
		openRepairs bool
		openErr     bool // Open refuses the directory
		openDamaged bool // Open refuses writes
	}{
		{"bit flip below the recovery point", func(t *testing.T, dir string, segs []SegmentInfo) (string, int64) {
			last := segs[len(segs)-1]
			pos, next := batchEnd(t, dir, last.BaseOffset, last.BaseOffset+10)
			flipByte(t, last.Path, pos+segment.HeaderSize+2)
			// Unclean: the open rescans the segment that holds the
			// recovery point (a clean one verifies only the tail).
			require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))
			return last.Path, next
		}, ProblemDamage, SeverityError, false, false, true},
		{"torn tail past the recovery point", func(t *testing.T, dir string, segs []SegmentInfo) (string, int64) {
			last := segs[len(segs)-1]
			require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))
			require.NoError(t, writeCheckpoint(vfs.Default, dir, recoveryPointFile, last.BaseOffset, 0o640))
			pos, next := batchEnd(t, dir, last.BaseOffset, last.NextOffset-8)
			require.NoError(t, os.Truncate(last.Path, pos+20))
			return last.Path, next
		}, ProblemTornTail, SeverityWarning, true, false, false},
		{"missing middle segment", func(t *testing.T, dir string, segs []SegmentInfo) (string, int64) {
			removeSegmentFiles(t, dir, segs[1].BaseOffset)
			return segs[0].Path, segs[1].BaseOffset
		}, ProblemHole, SeverityError, false, true, false},
		{"missing sealed index", func(t *testing.T, dir string, segs []SegmentInfo) (string, int64) {
			require.NoError(t, os.Remove(filepath.Join(dir, segment.FileName(segs[1].BaseOffset, segment.IndexSuffix))))
			return segs[1].Path, -1
		}, ProblemIndex, SeverityError, false, false, false},
		{"index without its .log", func(t *testing.T, dir string, segs []SegmentInfo) (string, int64) {
			name := filepath.Join(dir, segment.FileName(segs[len(segs)-1].NextOffset+50, segment.IndexSuffix))
			require.NoError(t, os.WriteFile(name, make([]byte, 8), 0o640))
			return name, -1
		}, ProblemUnusableFile, SeverityWarning, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, segs := brokenLog(t)
			rep, err := Check(dir, CheckOptions{})
			require.NoError(t, err)
			assert.Empty(t, rep.Problems, "a healthy log")

			file, from := tc.damage(t, dir, segs)
			before := dirBytes(t, dir)
			rep, err = Check(dir, CheckOptions{})
			require.NoError(t, err)
			assert.Equal(t, before, dirBytes(t, dir), "Check changes nothing")
			require.Len(t, rep.Problems, 1, "%v", rep.Problems)
			p := rep.Problems[0]
			assert.Equal(t, tc.kind, p.Kind)
			assert.Equal(t, file, p.File)
			assert.Equal(t, from, p.From)
			assert.Equal(t, tc.severity, p.Severity)
			assert.Equal(t, tc.openRepairs, p.OpenRepairs)
			assert.Equal(t, dir, p.Partition)

			l, err := Open(dir, small())
			if tc.openErr {
				require.ErrorIs(t, err, ErrCorrupt)
				return
			}
			require.NoError(t, err)
			defer l.Close()
			assert.Equal(t, tc.openDamaged, l.OpenStats().Damage != nil)
		})
	}
}

// TestRepair: a dry run changes nothing and says what it would do; a
// repair rebuilds sealed indexes, and cuts at damage only when asked,
// reporting exactly the offsets that go and keeping their bytes in
// quarantine; afterwards Check finds nothing and the log takes writes.
func TestRepair(t *testing.T) {
	t.Run("dry run", func(t *testing.T) {
		dir, segs := brokenLog(t)
		require.NoError(t, os.Remove(filepath.Join(dir, segment.FileName(segs[1].BaseOffset, segment.TimeIndexSuffix))))
		before := dirBytes(t, dir)
		rep, err := Repair(dir, RepairOptions{DryRun: true, TruncateAtDamage: true})
		require.NoError(t, err)
		assert.Equal(t, before, dirBytes(t, dir))
		require.NotEmpty(t, rep.Actions)
		assert.Equal(t, ActionRebuildIndex, rep.Actions[0].Action)
		assert.False(t, rep.Actions[0].Done)
		assert.Empty(t, rep.Left)
	})
	t.Run("sealed indexes missing or damaged", func(t *testing.T) {
		dir, segs := brokenLog(t)
		require.NoError(t, os.Remove(filepath.Join(dir, segment.FileName(segs[1].BaseOffset, segment.IndexSuffix))))
		idx := filepath.Join(dir, segment.FileName(segs[2].BaseOffset, segment.TimeIndexSuffix))
		fi, err := os.Stat(idx)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(idx, fi.Size()-5))
		rep, err := Repair(dir, RepairOptions{})
		require.NoError(t, err)
		assert.Len(t, rep.Before.Problems, 2)
		assert.Empty(t, rep.Left)
		after, err := Check(dir, CheckOptions{})
		require.NoError(t, err)
		assert.Empty(t, after.Problems)
		assert.FileExists(t, filepath.Join(dir, QuarantineDir, filepath.Base(idx)), "the damaged index is kept aside")
	})
	t.Run("damage below the recovery point", func(t *testing.T) {
		dir, segs := brokenLog(t)
		victim := segs[2]
		pos, cutAt := batchEnd(t, dir, victim.BaseOffset, victim.BaseOffset+12)
		flipByte(t, victim.Path, pos+segment.HeaderSize+1)
		// Unclean, with the recovery point in the last segment: the
		// damaged segment is below it.
		require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))

		rep, err := Repair(dir, RepairOptions{})
		require.NoError(t, err)
		require.Len(t, rep.Left, 1, "without TruncateAtDamage the damage stays")
		assert.Equal(t, ProblemDamage, rep.Left[0].Kind)
		assert.True(t, rep.Left[0].CutAtDamage(), "only TruncateAtDamage repairs it")

		end := segs[len(segs)-1].NextOffset
		rep, err = Repair(dir, RepairOptions{TruncateAtDamage: true})
		require.NoError(t, err)
		assert.Empty(t, rep.Left, "%v", rep.Left)
		var cut *RepairAction
		for i := range rep.Actions {
			if rep.Actions[i].Action == ActionTruncate {
				cut = &rep.Actions[i]
			}
		}
		require.NotNil(t, cut)
		assert.Equal(t, cutAt, cut.From)
		assert.Equal(t, end, cut.Upto)
		assert.Equal(t, victim.Path, cut.File)
		kept, err := os.ReadFile(filepath.Join(dir, QuarantineDir, filepath.Base(victim.Path)+".from-byte-"+strconv.FormatInt(pos, 10)))
		require.NoError(t, err)
		assert.Equal(t, victim.Size-pos, int64(len(kept)), "the bytes cut are kept")
		assert.FileExists(t, filepath.Join(dir, QuarantineDir, filepath.Base(segs[3].Path)))

		l := openLog(t, dir, small())
		assert.Equal(t, cutAt, l.EndOffset())
		assert.Nil(t, l.OpenStats().Damage)
		assert.Equal(t, cutAt, readAll(t, l, 0))
		fill(t, l, 5, 5)
		require.NoError(t, l.Close())
		after, err := Check(dir, CheckOptions{})
		require.NoError(t, err)
		assert.Empty(t, after.Problems)
	})
}
