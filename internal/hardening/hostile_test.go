package hardening

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// listTree returns every path under dir, relative to it.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	}))
	return out
}

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileTopicNames: names that could reach outside the root, or are
// not Kafka names, are ErrInvalidTopic and create nothing anywhere.
func TestHostileTopicNames(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	s, err := storage.OpenStore(root, storage.StoreOptions{})
	require.NoError(t, err)
	defer s.Close()
	before := listTree(t, parent)
	for _, name := range []string{"", ".", "..", "../escape", "a/b", "/abs", "nul\x00byte", strings.Repeat("t", 300), strings.Repeat("t", 250), "sp ace", "ünï"} {
		t.Run(fmt.Sprintf("%.20q", name), func(t *testing.T) {
			assert.ErrorIs(t, s.CreateTopic(name, 1, storage.TopicConfig{}), storage.ErrInvalidTopic)
			_, err := s.Log(name, 0)
			assert.ErrorIs(t, err, storage.ErrInvalidTopic)
			_, err = s.Produce(name, storage.Record{Value: []byte("v")})
			assert.ErrorIs(t, err, storage.ErrInvalidTopic)
			assert.ErrorIs(t, s.DeleteTopic(name), storage.ErrInvalidTopic)
		})
	}
	assert.Equal(t, before, listTree(t, parent), "nothing was created")
	require.NoError(t, s.CreateTopic(strings.Repeat("t", storage.MaxTopicLength), 1, storage.TopicConfig{}), "249 characters is the limit")
}

// patchBatch replaces the records section of an encoded batch and fixes
// its length and checksum (the header layout is in package segment's doc).
func patchBatch(b, records []byte) []byte {
	out := append(slices.Clone(b[:segment.HeaderSize]), records...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// zstdBomb returns a zstd frame of n zero bytes, compressed in chunks so
// that the test itself never holds n bytes.
func zstdBomb(t *testing.T, n int) []byte {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf)
	require.NoError(t, err)
	zeros := make([]byte, 1<<20)
	for written := 0; written < n; written += len(zeros) {
		_, err := w.Write(zeros)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// TestHostileBatches: AppendBatch refuses batches whose length fields lie,
// without allocating what they claim; a decompression bomb is refused on
// append with ValidateRecords, and a Reader over one written without it
// returns an error without expanding it.
func TestHostileBatches(t *testing.T) {
	good, err := segment.AppendBatch(nil, []storage.Record{{Timestamp: 1, Value: []byte("v")}}, segment.EncodeOptions{Codec: segment.CodecZstd})
	require.NoError(t, err)
	// Records may expand to 1 MiB: a bomb of 100 MiB of zeros is refused
	// having decoded little more than that.
	limits := segment.Limits{MaxRecordsBytes: 1 << 20}
	bomb := patchBatch(good, zstdBomb(t, 100<<20))
	require.Less(t, len(bomb), 64<<10)

	huge := slices.Clone(good)
	binary.BigEndian.PutUint32(huge[8:], 0x7fff_fff0) // claims 2 GiB
	manyRecords := slices.Clone(good)
	binary.BigEndian.PutUint32(manyRecords[57:], 0x7fff_ffff) // recordsCount
	binary.BigEndian.PutUint32(manyRecords[23:], 0x7fff_fffe) // lastOffsetDelta
	negative := slices.Clone(good)
	binary.BigEndian.PutUint32(negative[8:], 0xffff_fff0)

	tests := []struct {
		name     string
		batch    []byte
		validate bool
	}{
		{"length claims 2 GiB", huge, false},
		{"negative length", negative, false},
		{"2^31 records", manyRecords, true},
		{"header only", good[:segment.HeaderSize], false},
		{"truncated", good[:len(good)-1], false},
		{"zstd bomb, validated", bomb, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := storage.Open(t.TempDir(), storage.Options{ValidateRecords: tt.validate, Limits: limits})
			require.NoError(t, err)
			defer l.Close()
			b := slices.Clone(tt.batch)
			var aerr error
			n := allocated(func() { _, aerr = l.AppendBatch(b) })
			assert.ErrorIs(t, aerr, storage.ErrInvalidBatch)
			assert.Less(t, n, uint64(16<<20), "refusing the batch allocated %d bytes", n)
			assert.Equal(t, int64(0), l.EndOffset())
		})
	}

	t.Run("zstd bomb read back", func(t *testing.T) {
		l, err := storage.Open(t.TempDir(), storage.Options{Limits: limits})
		require.NoError(t, err)
		defer l.Close()
		_, err = l.AppendBatch(slices.Clone(bomb))
		require.NoError(t, err, "without ValidateRecords only the header and checksum are checked")
		var rerr error
		n := allocated(func() {
			r := l.NewReader(0)
			for r.Next() {
			}
			rerr = r.Err()
		})
		assert.ErrorIs(t, rerr, segment.ErrTooLarge)
		assert.ErrorIs(t, rerr, storage.ErrCorrupt)
		assert.Less(t, n, uint64(16<<20), "the reader allocated %d bytes for a 100 MiB bomb", n)
	})
}

// buildSealed writes records into dir until there are at least three
// segments, closes the log cleanly and returns the model and segments.
func buildSealed(t *testing.T, dir string) (*model, []storage.SegmentInfo) {
	t.Helper()
	l, err := storage.Open(dir, smallLog(nil))
	require.NoError(t, err)
	m := newModel()
	appendN(t, l, m, "a", 20)
	segs, err := l.Segments()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(segs), 3)
	require.NoError(t, l.Close())
	m.synced()
	return m, segs
}

func indexPath(logPath, suffix string) string {
	return strings.TrimSuffix(logPath, segment.LogSuffix) + suffix
}

// TestHostileDataDirectory: damaged or foreign files in a partition
// directory are either repaired (derived data) or refused with an error
// naming the file; never a panic.
func TestHostileDataDirectory(t *testing.T) {
	t.Run("index entries past the log are rebuilt", func(t *testing.T) {
		dir := t.TempDir()
		m, segs := buildSealed(t, dir)
		for _, s := range segs {
			p := indexPath(s.Path, segment.IndexSuffix)
			fi, err := os.Stat(p)
			require.NoError(t, err)
			// Entries: relative offset (u32), position (u32). Point them
			// past the log.
			b := make([]byte, max(fi.Size(), 16))
			for i := 0; i+8 <= len(b); i += 8 {
				binary.BigEndian.PutUint32(b[i:], uint32(i/8+1))
				binary.BigEndian.PutUint32(b[i+4:], uint32(1<<30+i))
			}
			require.NoError(t, os.WriteFile(p, b, 0o640))
		}
		l, err := storage.Open(dir, smallLog(nil))
		require.NoError(t, err)
		defer l.Close()
		require.NoError(t, m.check(l))
		_, err = l.OffsetForTime(0)
		require.NoError(t, err)
	})
	t.Run("segment file name not 20 digits", func(t *testing.T) {
		// Every open lists the directory (a clean one too, to notice
		// files gone since the close): the stray file is refused and
		// named, and nothing is changed.
		for _, name := range []string{"123.log", "0000000000000000000x.index", "000000000000000000000.timeindex"} {
			for _, clean := range []bool{true, false} {
				dir := t.TempDir()
				buildSealed(t, dir)
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("junk"), 0o640))
				if !clean {
					require.NoError(t, os.Remove(filepath.Join(dir, ".clean-shutdown")))
				}
				_, err := storage.Open(dir, smallLog(nil))
				require.Error(t, err)
				assert.ErrorIs(t, err, storage.ErrCorrupt)
				assert.Contains(t, err.Error(), filepath.Join(dir, name))
				b, err := os.ReadFile(filepath.Join(dir, name))
				require.NoError(t, err)
				assert.Equal(t, "junk", string(b))
			}
		}
	})
	t.Run("recovery point beyond the log", func(t *testing.T) {
		for _, clean := range []bool{true, false} {
			dir := t.TempDir()
			m, _ := buildSealed(t, dir)
			body := "seglog recovery-point v1 999999999"
			ck := fmt.Sprintf("%s %016x\n", body, xxhash.Sum64String(body))
			require.NoError(t, os.WriteFile(filepath.Join(dir, storage.RecoveryPointFile), []byte(ck), 0o640))
			if !clean {
				require.NoError(t, os.Remove(filepath.Join(dir, ".clean-shutdown")))
			}
			// Records the checkpoint says were flushed are missing: the
			// log opens for reads and refuses writes (new records would
			// take offsets a consumer may have seen) until a repair cuts
			// there.
			l, err := storage.Open(dir, smallLog(nil))
			require.NoError(t, err)
			require.NoError(t, m.check(l))
			assert.LessOrEqual(t, l.FlushedOffset(), l.EndOffset())
			require.NotNil(t, l.OpenStats().Damage, "clean=%t", clean)
			assert.Equal(t, l.EndOffset(), l.OpenStats().Damage.Offset)
			_, err = l.Append(storage.Record{Value: []byte("x")})
			require.ErrorIs(t, err, storage.ErrDamaged)
			require.NoError(t, l.Close())
			rep, err := storage.Repair(dir, storage.RepairOptions{TruncateAtDamage: true})
			require.NoError(t, err)
			require.Empty(t, rep.Left)
			l, err = storage.Open(dir, smallLog(nil))
			require.NoError(t, err)
			require.NoError(t, m.check(l))
			appendN(t, l, m, "b", 3)
			require.NoError(t, l.Checkpoint())
			rp, ok, err := storage.ReadCheckpoint(dir, storage.RecoveryPointFile)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, l.EndOffset(), rp, "the next checkpoint is the true flushed offset (clean=%t)", clean)
			require.NoError(t, l.Close())
		}
	})
	t.Run("symlinked segment file is refused", func(t *testing.T) {
		dir := t.TempDir()
		_, segs := buildSealed(t, dir)
		elsewhere := filepath.Join(t.TempDir(), "target.log")
		last := segs[len(segs)-1].Path
		require.NoError(t, os.Rename(last, elsewhere))
		require.NoError(t, os.Symlink(elsewhere, last))
		before, err := os.ReadFile(elsewhere)
		require.NoError(t, err)
		_, err = storage.Open(dir, smallLog(nil))
		require.Error(t, err)
		assert.ErrorIs(t, err, storage.ErrCorrupt)
		assert.Contains(t, err.Error(), last)
		assert.Contains(t, err.Error(), "symbolic link")
		after, err := os.ReadFile(elsewhere)
		require.NoError(t, err)
		assert.Equal(t, before, after, "the link's target is untouched")
	})
	t.Run("symlinked log directory is refused", func(t *testing.T) {
		target := t.TempDir()
		link := filepath.Join(t.TempDir(), "p-0")
		require.NoError(t, os.Symlink(target, link))
		_, err := storage.Open(link, smallLog(nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), link)
		assert.Empty(t, listTree(t, target)[1:], "nothing created in the link's target")
	})
	t.Run("symlinked partition directory in a store is refused", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "root")
		s, err := storage.OpenStore(root, storage.StoreOptions{})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		target := t.TempDir()
		require.NoError(t, os.Symlink(target, filepath.Join(root, "evil-0")))
		_, err = storage.OpenStore(root, storage.StoreOptions{})
		require.Error(t, err)
		assert.ErrorIs(t, err, storage.ErrCorrupt)
		assert.Contains(t, err.Error(), filepath.Join(root, "evil-0"))
		assert.Empty(t, listTree(t, target)[1:])
	})
}

// runCLI runs the seglog binary and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(cliBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errb.String()
}

// TestCLIOnHostileFiles: seglog dump and seglog verify on damaged files
// exit 1 naming the file and the byte position, and never panic.
func TestCLIOnHostileFiles(t *testing.T) {
	good, err := segment.AppendBatch(nil, []storage.Record{{Timestamp: 1, Value: []byte("v")}}, segment.EncodeOptions{})
	require.NoError(t, err)
	huge := slices.Clone(good)
	binary.BigEndian.PutUint32(huge[8:], 0x7fff_fff0)
	badSum := slices.Clone(good)
	badSum[len(badSum)-1] ^= 0xff
	junk := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 100)
	twoBatches := append(slices.Clone(good), good...) // second batch repeats offset 0

	files := []struct {
		name string
		data []byte
		pos  string // the byte position the error must name
	}{
		{"00000000000000000000.log", append(slices.Clone(good), huge...), fmt.Sprintf("byte %d", len(good))},
		{"00000000000000000000.log", badSum, "byte 0"},
		{"00000000000000000000.log", junk, "byte 0"},
		{"00000000000000000000.log", append(slices.Clone(good), good[:30]...), fmt.Sprintf("byte %d", len(good))},
		{"00000000000000000000.log", twoBatches, fmt.Sprintf("byte %d", len(good))},
		{"00000000000000000000.index", junk[:13], ""},
		{"00000000000000000000.index", bytes.Repeat([]byte{0xff}, 16), ""},
		{"00000000000000000000.timeindex", junk[:25], ""},
	}
	for i, f := range files {
		t.Run(fmt.Sprintf("%d %s", i, f.name), func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			part := filepath.Join(data, "t-0")
			require.NoError(t, os.MkdirAll(part, 0o750))
			path := filepath.Join(part, f.name)
			require.NoError(t, os.WriteFile(path, f.data, 0o640))
			if !strings.HasSuffix(f.name, segment.LogSuffix) {
				require.NoError(t, os.WriteFile(filepath.Join(part, "00000000000000000000.log"), good, 0o640))
			}
			for _, args := range [][]string{{"dump", "--records", path}, {"dump", "--verify-index", path}, {"verify", "--deep", data}} {
				code, stdout, stderr := runCLI(t, args...)
				all := stdout + stderr
				assert.NotContains(t, all, "panic", "%v", args)
				assert.NotContains(t, all, "internal error", "%v", args)
				assert.NotContains(t, all, "goroutine ", "%v", args)
				if args[0] == "dump" && args[1] == "--records" && !strings.HasSuffix(f.name, segment.LogSuffix) {
					continue // an index dump that is well-formed enough has nothing to report
				}
				assert.Equal(t, 1, code, "%v\n%s", args, all)
				assert.Contains(t, stderr, path, "%v", args)
				if f.pos != "" {
					assert.Contains(t, stderr, f.pos, "%v", args)
				}
			}
		})
	}
}
