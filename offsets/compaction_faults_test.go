package offsets

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs/faultfs"
)

// TestCompactionFaultsKeepAcknowledged fails each step of a compaction and
// checks that every acknowledged commit, before and after the failure, is
// there after a reopen. In particular a failed directory fsync after the
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
			acked := map[key]val{}
			commit := func(p int32, off int64) {
				if s.Commit("g", "t", p, off, "") == nil {
					acked[key{"g", "t", p}] = val{off, ""}
				}
			}
			commit(0, 10)
			require.Len(t, acked, 1)
			fs.Add(c.rule)
			require.Error(t, s.Compact())
			require.Equal(t, 1, fs.Injected(), "the fault was injected")
			fs.Clear()
			commit(1, 20)
			commit(0, 30)
			_ = s.Close()

			s = openT(t, dir, Options{})
			defer s.Close()
			got := snapshotOf(s)
			for k, v := range acked {
				assert.Equal(t, v, got[k], "acknowledged commit %v lost", k)
			}
		})
	}
}
