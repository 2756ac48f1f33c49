package offsets

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs/faultfs"
)

// TestCompactionFaultsKeepAcknowledged fails each step of a compaction and
// checks that every acknowledged commit, before and after the failure, of
// the failing store and of a store beside it, is there after a reopen. In particular a failed directory fsync after the
// snapshot's rename must not let the store go on appending to the journal
// that the new snapshot makes obsolete (Open deletes it unread).
func TestCompactionFaultsKeepAcknowledged(t *testing.T) {
	cases := []struct {
		name string
		rule faultfs.Rule
	}{
		{"create the new journal", faultfs.Rule{Ops: faultfs.OpCreate, Path: journalPrefix, Err: syscall.ENOSPC}},
		{"fsync the new journal", faultfs.Rule{Ops: faultfs.OpSync, Path: journalPrefix}},
		{"directory fsync after the new journal", faultfs.Rule{Ops: faultfs.OpSyncDir, Nth: 0}},
		{"write the snapshot", faultfs.Rule{Ops: faultfs.OpWrite, Path: snapshotName, ShortWrite: true}},
		{"fsync the snapshot", faultfs.Rule{Ops: faultfs.OpSync, Path: snapshotName}},
		{"rename the snapshot", faultfs.Rule{Ops: faultfs.OpRename, Path: snapshotName}},
		{"directory fsync after the rename", faultfs.Rule{Ops: faultfs.OpSyncDir, Nth: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fs := faultfs.New(nil)
			s := openT(t, dir, Options{FS: fs})
			beside := openT(t, dir, Options{})
			acked := map[key]val{}
			commit := func(s *Store, g string, p int32, off int64) {
				if s.Commit(g, "t", p, off, "") == nil {
					acked[key{g, "t", p}] = val{off, ""}
				}
			}
			commit(s, "g", 0, 10)
			commit(beside, "b", 0, 11)
			require.Len(t, acked, 2)
			fs.Add(c.rule)
			require.Error(t, s.Compact())
			require.Equal(t, 1, fs.Injected(), "the fault was injected")
			fs.Clear()
			commit(beside, "b", 0, 12)
			commit(s, "g", 1, 20)
			commit(beside, "b", 1, 13)
			commit(s, "g", 0, 30)
			require.NoError(t, beside.Compact(), "a store beside compacts after the failed compaction")
			commit(beside, "b", 0, 14)
			commit(s, "g", 0, 31)
			require.Equal(t, val{14, ""}, acked[key{"b", "t", 0}], "the store beside acknowledged every commit")
			require.Equal(t, val{13, ""}, acked[key{"b", "t", 1}], "the store beside acknowledged every commit")
			_ = s.Close()
			require.NoError(t, beside.Close())

			s = openT(t, dir, Options{})
			defer s.Close()
			got := snapshotOf(s)
			for k, v := range acked {
				assert.Equal(t, v, got[k], "acknowledged commit %v lost", k)
			}
		})
	}
}
