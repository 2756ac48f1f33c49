package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// verifyData makes a data directory with two topics, several segments per
// partition and an offset store with commits.
func verifyData(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	makeLog(t, root, "orders", 2, 30, 5, 2048)
	makeLog(t, root, "audit", 1, 3, 2, 0)
	st, err := offsets.Open(filepath.Join(root, "offsets"), offsets.Options{})
	require.NoError(t, err)
	require.NoError(t, st.Commit("billing", "orders", 0, 40, ""))
	require.NoError(t, st.Commit("billing", "orders", 1, 150, ""))
	require.NoError(t, st.Close())
	return root
}

func TestVerifyClean(t *testing.T) {
	root := verifyData(t)
	before := hashTree(t, root)
	r := seglog(t, "", "verify", root)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	assert.Contains(t, r.stdout, "orders-0: ")
	assert.Contains(t, r.stdout, "orders-1: ")
	assert.Contains(t, r.stdout, "audit-0: 1 segment, 3 batches, 6 records, end offset 6, ")
	assert.Contains(t, r.stdout, "clean shutdown: ok\n")
	assert.Contains(t, r.stdout, "offsets: 1 group, 2 committed positions: ok")
	assert.Contains(t, r.stdout, ": 3 partitions: 0 errors, 0 warnings")
	assert.Equal(t, before, hashTree(t, root), "verify changed the directory")

	// A single partition directory: no offset store line.
	r = seglog(t, "", "verify", filepath.Join(root, "orders-1"))
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "orders-1: ")
	assert.NotContains(t, r.stdout, "offsets: ")
	assert.Equal(t, before, hashTree(t, root))
}

func TestVerifyFindsDamageAndChangesNothing(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, root string)
		want   string
		// warning: the next open does without what is damaged (exit 0).
		warning bool
	}{
		{"bit flip in a sealed segment", func(t *testing.T, root string) {
			flip(t, filepath.Join(root, "orders-0", segment.FileName(0, segment.LogSuffix)), segment.HeaderSize+20)
		}, "checksum mismatch", false},
		{"bit flip in the active segment", func(t *testing.T, root string) {
			p := lastLog(t, filepath.Join(root, "orders-1"))
			flip(t, p, segment.HeaderSize+2)
		}, "checksum mismatch", false},
		{"truncated sealed segment", func(t *testing.T, root string) {
			p := filepath.Join(root, "orders-0", segment.FileName(0, segment.LogSuffix))
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, fi.Size()-3))
		}, "runs past the end of the file", false},
		{"missing segment", func(t *testing.T, root string) {
			segs := logs(t, filepath.Join(root, "orders-0"))
			require.Greater(t, len(segs), 2)
			require.NoError(t, os.Remove(segs[1]))
		}, "are missing: the segment ends at", false},
		{"corrupt checkpoint", func(t *testing.T, root string) {
			require.NoError(t, os.WriteFile(filepath.Join(root, "audit-0", "recovery-point"), []byte("seglog recovery-point v1 6 0000000000000000\n"), 0o644))
		}, "recovery-point: checksum mismatch; the next open does without it", true},
		{"flipped offset store snapshot or journal", func(t *testing.T, root string) {
			ents, err := os.ReadDir(filepath.Join(root, "offsets"))
			require.NoError(t, err)
			for _, e := range ents {
				if e.Name() != "LOCK" {
					p := filepath.Join(root, "offsets", e.Name())
					fi, err := os.Stat(p)
					require.NoError(t, err)
					if fi.Size() > 30 {
						flip(t, p, 30)
						return
					}
				}
			}
			t.Fatal("no offsets file to damage")
		}, filepath.Join("offsets", ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := verifyData(t)
			tc.damage(t, root)
			before := hashTree(t, root)
			r := seglog(t, "", "verify", root)
			code, prefix := 1, "seglog verify: error: "
			if tc.warning {
				code, prefix = 0, "seglog verify: warning: "
			}
			assert.Equal(t, code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assert.Contains(t, r.stderr, prefix)
			assert.Contains(t, r.stderr, tc.want)
			assert.Equal(t, before, hashTree(t, root), "verify changed a damaged directory")
		})
	}
}

func TestVerifyUsage(t *testing.T) {
	r := seglog(t, "", "verify")
	assert.Equal(t, 2, r.code)
	missing := filepath.Join(t.TempDir(), "nope")
	r = seglog(t, "", "verify", missing)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, missing+": no such file or directory")
}

func flip(t *testing.T, path string, at int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Less(t, at, int64(len(b)))
	b[at] ^= 0x04
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, fi.Mode()))
}

func logs(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+segment.LogSuffix))
	require.NoError(t, err)
	return m
}

func lastLog(t *testing.T, dir string) string {
	l := logs(t, dir)
	require.NotEmpty(t, l)
	return l[len(l)-1]
}

// TestVerifyNeverAppendedPartition: a partition that was opened but never
// appended to (a 0-byte .log and no index files) or never opened (an
// empty directory) is healthy; a non-empty .log without its indexes is
// still reported.
func TestVerifyNeverAppendedPartition(t *testing.T) {
	// makeData writes topic t with 2 partitions: t-0 has records, t-1 was
	// opened and closed without an append.
	makeData := func(t *testing.T) string {
		root := t.TempDir()
		s, err := storage.OpenStore(root, storage.StoreOptions{})
		require.NoError(t, err)
		require.NoError(t, s.CreateTopic("t", 2, storage.TopicConfig{}))
		l, err := s.Log("t", 0)
		require.NoError(t, err)
		_, err = l.Append(storage.Record{Value: []byte("x")})
		require.NoError(t, err)
		_, err = s.Log("t", 1)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		return root
	}
	seg := func(root, part, suffix string) string {
		return filepath.Join(root, part, segment.FileName(0, suffix))
	}
	removeIndexes := func(t *testing.T, root, part string) {
		for _, suf := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
			if err := os.Remove(seg(root, part, suf)); err != nil {
				require.ErrorIs(t, err, os.ErrNotExist)
			}
		}
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T, root string)
		code    int
		stdout  string // a line of stdout
		stderr  string // "" means none at all
	}{
		{"0-byte log without indexes", func(t *testing.T, root string) {
			removeIndexes(t, root, "t-1")
		}, 0, "t-1: 1 segment, 0 batches, 0 records, end offset 0, 0 B, recovery point 0, clean shutdown: ok\n", ""},
		{"0-byte log without indexes, unclean shutdown", func(t *testing.T, root string) {
			removeIndexes(t, root, "t-1")
			require.NoError(t, os.Remove(filepath.Join(root, "t-1", ".clean-shutdown")))
		}, 0, "t-1: 1 segment, 0 batches, 0 records, end offset 0, 0 B, recovery point 0, unclean shutdown: ok\n", ""},
		{"empty partition directory", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "t-1")))
			require.NoError(t, os.Mkdir(filepath.Join(root, "t-1"), 0o750))
		}, 0, "t-1: empty (never written): ok\n", ""},
		{"non-empty log without indexes", func(t *testing.T, root string) {
			removeIndexes(t, root, "t-0")
		}, 1, "t-0: 1 segment, 1 batch, 1 record", "00000000000000000000.index is missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := makeData(t)
			tc.prepare(t, root)
			fi, err := os.Stat(seg(root, "t-0", segment.LogSuffix))
			require.NoError(t, err)
			require.NotZero(t, fi.Size())
			r := seglog(t, "", "verify", root)
			assert.Equal(t, tc.code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, tc.stdout)
			if tc.stderr == "" {
				assert.Empty(t, r.stderr)
			} else {
				assert.Contains(t, r.stderr, tc.stderr)
			}
		})
	}
}

// TestVerifyEmptyPartitionDirectory: an empty partition directory given
// directly is checked as a partition, not as a data root with nothing in
// it.
func TestVerifyEmptyPartitionDirectory(t *testing.T) {
	root := t.TempDir()
	r := seglog(t, "", "topics", "create", "--dir", root, "--topic", "t", "--partitions", "2")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "", "verify", filepath.Join(root, "t-1"))
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	assert.Contains(t, r.stdout, "t-1: empty (never written): ok\n")
	assert.Contains(t, r.stdout, ": 1 partition: 0 errors, 0 warnings")

	// A data root whose name looks like a partition's is still a root.
	data := filepath.Join(t.TempDir(), "data-1")
	makeLog(t, data, "x", 1, 2, 2, 0)
	r = seglog(t, "", "verify", data)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "x-0: 1 segment, ")
}

// TestVerifyBesideAWriter: index entries past the end of the log data
// and a batch cut short at the end are what a writer appending leaves (it
// writes the batch, then the index entry). While a writer holds the
// directory, verify reads through a follower up to the last whole batch
// and says once that the tail is not judged; after an unclean shutdown a
// torn tail is a warning (the next open cuts it and rebuilds the index);
// after a clean one, index entries past the data are errors.
func TestVerifyBesideAWriter(t *testing.T) {
	cases := []struct {
		name   string
		clean  bool
		locked bool
		torn   bool // the log ends inside a batch (being written)
		code   int
		stdout string
		stderr []string // nil means nothing on stderr
	}{
		{"a writer holds the directory", false, true, false, 0, "(held by a writer: checked up to offset 75; the tail being written is not judged)", nil},
		{"a writer holds the directory and is writing a batch", false, true, true, 0, "(held by a writer: checked up to offset 75; the tail being written is not judged)", nil},
		{"unclean shutdown", false, false, false, 0, "unclean shutdown: ok\n", nil},
		{"unclean shutdown, torn tail", false, false, true, 0, "unclean shutdown: ok, 1 warning\n", []string{"warning: ", "the next open cuts these 10 bytes [torn-tail, the next open repairs it]"}},
		{"clean shutdown", true, false, false, 1, "clean shutdown: 5 errors, 0 warnings\n", []string{"error: ", "past the end of the valid log data"}},
		{"clean shutdown, torn tail", true, false, true, 0, "clean shutdown: ok, 1 warning\n", []string{"warning: ", "the next open cuts these 10 bytes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			makeLog(t, root, "t", 1, 20, 5, 0)
			dir := filepath.Join(root, "t-0")
			logPath := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
			b, err := os.ReadFile(logPath)
			require.NoError(t, err)
			// Cut the last batches, as if they were appended after verify
			// read the log's size.
			cut := int64(0)
			for n := 0; n < 15; n++ {
				h, err := segment.ParseHeader(b[cut:], segment.DefaultLimits)
				require.NoError(t, err)
				cut += int64(h.Size())
			}
			if tc.torn {
				cut += 10
			}
			require.NoError(t, os.Truncate(logPath, cut))
			// The recovery point covered the cut batches: drop it (verify
			// reads it before the log, so it never passes a live log's end).
			require.NoError(t, os.Remove(filepath.Join(dir, storage.RecoveryPointFile)))
			if !tc.clean {
				require.NoError(t, os.Remove(filepath.Join(dir, ".clean-shutdown")))
			}
			if tc.locked {
				f, err := os.Open(root)
				require.NoError(t, err)
				defer f.Close()
				require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
			}
			r := seglog(t, "", "verify", root)
			assert.Equal(t, tc.code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, "t-0: 1 segment, 15 batches, 75 records, end offset 75, ")
			assert.Contains(t, r.stdout, tc.stdout)
			if tc.stderr == nil {
				assert.Empty(t, r.stderr)
			}
			for _, want := range tc.stderr {
				assert.Contains(t, r.stderr, want)
			}
		})
	}
}
