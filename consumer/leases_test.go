package consumer

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process that looks at the members while another's member file is
// created but not yet locked takes it for a dead member's. The joining
// process must still end up a member that both see.
func TestJoinLeasesWhileAnotherTakesTheNewFileForADeadMembers(t *testing.T) {
	tests := []struct {
		name string
		// look runs between the creation of the first member file of the
		// second process and its flock; it returns what runs after the
		// flock (nil: nothing).
		look func(t *testing.T, a *leases, path string) func()
	}{
		{"removed before the flock", func(t *testing.T, a *leases, _ string) func() {
			_, err := a.share() // the file is unlocked: a removes it
			require.NoError(t, err)
			return nil
		}},
		{"locked by the looker at the flock", func(t *testing.T, _ *leases, path string) func() {
			f, locked, err := tryLock(path, false) // share's look, caught mid-way
			require.NoError(t, err)
			require.True(t, locked)
			return func() { os.Remove(path); f.Close() }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			a, err := joinLeases(root, "g", "t", 4)
			require.NoError(t, err)
			defer a.close()
			var after func()
			looks := 0
			beforeMemberLock = func(path string) {
				if after != nil {
					after()
					after = nil
				}
				if looks++; looks == 1 {
					after = tt.look(t, a, path)
				}
			}
			defer func() { beforeMemberLock = nil }()
			b, err := joinLeases(root, "g", "t", 4)
			require.NoError(t, err)
			defer b.close()
			assert.Equal(t, 2, looks, "the second process joined again under a new name")

			for name, l := range map[string]*leases{"a": a, "b": b} {
				share, err := l.share()
				require.NoError(t, err)
				assert.Equal(t, 2, share, "%s's share of 4 partitions between 2 members", name)
			}
			entries, err := os.ReadDir(a.dir + "/members")
			require.NoError(t, err)
			assert.Len(t, entries, 2, "one member file each, none left over")
		})
	}
}
