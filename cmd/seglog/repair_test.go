package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// TestRepairLeavesVerifyClean: seglog repair is a dry run by default (the
// directory is unchanged), --apply rebuilds indexes and quarantines what
// the log cannot use, damage below the recovery point stays until
// --truncate-at-damage cuts there (naming the offsets that go), and
// afterwards seglog verify finds nothing.
func TestRepairLeavesVerifyClean(t *testing.T) {
	root := t.TempDir()
	makeLog(t, root, "orders", 2, 30, 5, 1024)
	p0, p1 := filepath.Join(root, "orders-0"), filepath.Join(root, "orders-1")
	bases := segmentBases(t, p0)
	require.Greater(t, len(bases), 3)

	// orders-0: a sealed segment's index gone, another's time index cut
	// short, an index without its .log.
	require.NoError(t, os.Remove(filepath.Join(p0, segment.FileName(bases[1], segment.IndexSuffix))))
	ti := filepath.Join(p0, segment.FileName(bases[2], segment.TimeIndexSuffix))
	fi, err := os.Stat(ti)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(ti, fi.Size()-3))
	require.NoError(t, os.WriteFile(filepath.Join(p0, segment.FileName(1<<40, segment.IndexSuffix)), make([]byte, 8), 0o640))
	// orders-1: a bit flip in a sealed segment, below the recovery point.
	bases1 := segmentBases(t, p1)
	flip(t, filepath.Join(p1, segment.FileName(bases1[1], segment.LogSuffix)), segment.HeaderSize+20)

	r := seglog(t, "", "verify", root)
	require.Equal(t, exitFailure, r.code, "verify finds the damage")

	before := hashTree(t, root)
	r = seglog(t, "", "repair", root)
	assert.Equal(t, exitFailure, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "dry run")
	assert.Contains(t, r.stdout, "would rebuild-index")
	assert.Contains(t, r.stdout, "--truncate-at-damage")
	assert.Equal(t, before, hashTree(t, root), "a dry run changes nothing")

	r = seglog(t, "", "repair", "--apply", root)
	assert.Equal(t, exitFailure, r.code, "the damage in orders-1 is left: %s", r.stdout)
	assert.Contains(t, r.stdout, "did rebuild-index")
	assert.Contains(t, r.stdout, "left: error: "+filepath.Join(p1, segment.FileName(bases1[1], segment.LogSuffix)))
	assert.FileExists(t, filepath.Join(p0, storage.QuarantineDir, segment.FileName(1<<40, segment.IndexSuffix)))
	r = seglog(t, "", "verify", p0)
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)

	r = seglog(t, "", "repair", "--apply", "--truncate-at-damage", root)
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "did truncate: "+filepath.Join(p1, segment.FileName(bases1[1], segment.LogSuffix))+": cut at byte 0: offsets "+itoa(int(bases1[1]))+" to 149 go")
	assert.Contains(t, r.stdout, "0 problems left")

	r = seglog(t, "", "verify", root)
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, ": 0 errors, 0 warnings")

	r = seglog(t, "", "repair", root)
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "0 problems found, 0 problems left")
}
