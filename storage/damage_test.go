package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildLog writes n records (batches of 5) into a fresh log in dir and
// closes it cleanly; it returns the segments.
func buildLog(t *testing.T, dir string, n int) []SegmentInfo {
	l, err := Open(dir, small())
	require.NoError(t, err)
	fill(t, l, n, 5)
	segs, err := l.Segments()
	require.NoError(t, err)
	require.NoError(t, l.Close())
	return segs
}

// batchStarts returns the position of every batch in a .log file.
func batchStarts(t *testing.T, b []byte) []int {
	var out []int
	for p := 0; p+segment.HeaderSize <= len(b); {
		h, err := segment.ParseHeader(b[p:], segment.DefaultLimits)
		require.NoError(t, err)
		out = append(out, p)
		p += h.Size()
	}
	return out
}

// TestDamagedLastSegment injects truncations and bit flips into the last
// segment, as a crash or a bad disk would, and checks that a reopen keeps
// every valid record before the damage and nothing after.
func TestDamagedLastSegment(t *testing.T) {
	base := t.TempDir()
	segs := buildLog(t, filepath.Join(base, "orig"), 600)
	last := segs[len(segs)-1]
	orig, err := os.ReadFile(last.Path)
	require.NoError(t, err)
	starts := batchStarts(t, orig)
	require.Greater(t, len(starts), 3)

	type damage struct {
		name string
		edit func([]byte) []byte
		// the batch (index into starts) at which the damage begins
		batch int
	}
	var cases []damage
	mid := len(starts) / 2
	for _, cut := range []int{1, 10, segment.HeaderSize, segment.HeaderSize + 5} {
		cases = append(cases, damage{"cut last batch +" + itoa(cut), func(b []byte) []byte { return b[:starts[len(starts)-1]+cut] }, len(starts) - 1})
	}
	cases = append(cases,
		damage{"cut mid-file", func(b []byte) []byte { return b[:starts[mid]+20] }, mid},
		damage{"flip in header", func(b []byte) []byte { b[starts[mid]+30] ^= 0x40; return b }, mid},
		damage{"flip in record", func(b []byte) []byte { b[starts[mid]+segment.HeaderSize+3] ^= 0x01; return b }, mid},
		damage{"flip base offset", func(b []byte) []byte { b[starts[mid]+7] ^= 0x01; return b }, mid},
		damage{"garbage appended", func(b []byte) []byte { return append(b, 1, 2, 3, 4, 5, 6, 7) }, len(starts)},
		damage{"zeros appended", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, len(starts)},
	)
	// With a clean-shutdown marker, Open does not rescan (that is the
	// point of the marker), so only damage that changes the file's size
	// is visible to it; bit flips there are caught by checksums at read
	// time (TestFlipAfterCleanCloseFailsRead).
	sizeDamage := []string{"cut last batch +01", "cut last batch +10", "cut mid-file", "garbage appended"}
	// crash: no marker and no recovery point (the damage may be a torn
	// write: cut); below: no marker, the recovery point of the clean
	// close (the damage is in fsynced data: reported, not cut); marker:
	// the clean close's files as they are.
	for _, mode := range []string{"crash", "below", "marker"} {
		for _, tc := range cases {
			if mode == "marker" && !slices.Contains(sizeDamage, tc.name) {
				continue
			}
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "p")
				copyDir(t, filepath.Join(base, "orig"), dir)
				if mode != "marker" {
					require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))
				}
				if mode == "crash" {
					require.NoError(t, os.Remove(filepath.Join(dir, recoveryPointFile)))
				}
				p := filepath.Join(dir, filepath.Base(last.Path))
				damaged := tc.edit(slices.Clone(orig))
				require.NoError(t, os.WriteFile(p, damaged, 0o640))

				l, err := Open(dir, small())
				require.NoError(t, err)
				defer l.Close()
				keep := last.BaseOffset + int64(tc.batch*5)
				assert.Equal(t, keep, l.EndOffset())
				assert.Equal(t, keep, readAll(t, l, 0), "every valid record before the damage, nothing after")
				if mode != "crash" && tc.batch < len(starts) {
					// Acknowledged data is not cut: writes refuse.
					_, err := l.Append(Record{Value: []byte("x")})
					assert.ErrorIs(t, err, ErrDamaged)
					// Nothing but a zero tail (bytes never written, no
					// data) is cut.
					now, err := os.ReadFile(p)
					require.NoError(t, err)
					assert.GreaterOrEqual(t, len(now), starts[tc.batch], "nothing valid cut")
					assert.Equal(t, damaged[:len(now)], now)
					assert.False(t, slices.ContainsFunc(damaged[len(now):], func(b byte) bool { return b != 0 }), "only zeros cut")
					return
				}
				// Appends continue at the cut.
				fill(t, l, 7, 7)
				assert.Equal(t, keep+7, readAll(t, l, 0))
			})
		}
	}
}

func itoa(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

// TestDamagedIndexes damages index files; reopening rebuilds them from the
// .log and every record stays readable by offset and by time.
func TestDamagedIndexes(t *testing.T) {
	base := t.TempDir()
	segs := buildLog(t, filepath.Join(base, "orig"), 600)
	require.Greater(t, len(segs), 3)
	targets := []string{
		segment.FileName(segs[0].BaseOffset, segment.IndexSuffix),
		segment.FileName(segs[1].BaseOffset, segment.TimeIndexSuffix),
		segment.FileName(segs[len(segs)-1].BaseOffset, segment.IndexSuffix),
		segment.FileName(segs[len(segs)-1].BaseOffset, segment.TimeIndexSuffix),
	}
	edits := map[string]func([]byte) []byte{
		"truncated odd": func(b []byte) []byte { return b[:max(len(b)-3, 0)] },
		"past the log":  func(b []byte) []byte { return append(b, 0, 0, 0, 9, 0x7f, 0, 0, 0) },
		"flipped":       func(b []byte) []byte { b = append(b, make([]byte, 16)...); b[len(b)-20] ^= 0xff; return b },
		"emptied":       func([]byte) []byte { return nil },
		"garbage":       func([]byte) []byte { return []byte("not an index at all, just some bytes") },
	}
	for _, target := range targets {
		for name, edit := range edits {
			for _, clean := range []bool{true, false} {
				t.Run(target+"/"+name, func(t *testing.T) {
					dir := filepath.Join(t.TempDir(), "p")
					copyDir(t, filepath.Join(base, "orig"), dir)
					if !clean {
						require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))
					}
					p := filepath.Join(dir, target)
					b, err := os.ReadFile(p)
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(p, edit(b), 0o640))
					l, err := Open(dir, small())
					require.NoError(t, err)
					defer l.Close()
					assert.Equal(t, int64(600), readAll(t, l, 0))
					for _, off := range []int64{0, 37, 299, 451, 599} {
						bs, err := l.Read(off, 1)
						require.NoError(t, err)
						h, err := segment.ParseHeader(bs, segment.DefaultLimits)
						require.NoError(t, err)
						assert.True(t, h.BaseOffset <= off && off <= h.LastOffset(), "offset %d in batch %d..%d", off, h.BaseOffset, h.LastOffset())
						got, err := l.OffsetForTime(1_000_000 + off)
						require.NoError(t, err)
						assert.Equal(t, off, got)
					}
				})
			}
		}
	}
}

// A recovery-point that names an offset beyond the log, or a damaged one,
// is not trusted: the log opens with everything it holds.
func TestBadRecoveryPoint(t *testing.T) {
	base := t.TempDir()
	buildLog(t, filepath.Join(base, "orig"), 300)
	for name, content := range map[string][]byte{
		"beyond the log": encodeCheckpoint(recoveryPointFile, 1<<40),
		"garbage":        []byte("seglog recovery-point v1 12 0000000000000000\n"),
		"huge":           make([]byte, 1<<20),
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			copyDir(t, filepath.Join(base, "orig"), dir)
			require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))
			require.NoError(t, os.WriteFile(filepath.Join(dir, recoveryPointFile), content, 0o640))
			l, err := Open(dir, small())
			require.NoError(t, err)
			defer l.Close()
			assert.Equal(t, int64(300), readAll(t, l, 0))
			assert.LessOrEqual(t, l.FlushedOffset(), l.EndOffset())
		})
	}
}

func TestUnexpectedFiles(t *testing.T) {
	for name, file := range map[string]string{
		"short name":    "123.log",
		"letters":       "0000000000000000000x.log",
		"index name":    "1.index",
		"long timeidx":  "000000000000000000001.timeindex",
		"negative-like": "-0000000000000000001.log",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte("x"), 0o640))
			_, err := Open(dir, small())
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), file)
		})
	}
}

func TestSymlinkSegmentRefused(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "elsewhere.log")
	require.NoError(t, os.WriteFile(outside, nil, 0o640))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, segment.FileName(0, segment.LogSuffix))))
	_, err := Open(dir, small())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "symbolic link")
}

// A bit flipped in a cleanly closed log is not rescanned at open, but a
// read of that batch fails its checksum: it never returns garbage.
func TestFlipAfterCleanCloseFailsRead(t *testing.T) {
	dir := t.TempDir()
	segs := buildLog(t, dir, 100)
	b, err := os.ReadFile(segs[0].Path)
	require.NoError(t, err)
	b[segment.HeaderSize+4] ^= 0x20
	require.NoError(t, os.WriteFile(segs[0].Path, b, 0o640))
	l, err := Open(dir, small())
	require.NoError(t, err)
	defer l.Close()
	r := l.NewReader(0)
	assert.False(t, r.Next())
	assert.ErrorIs(t, r.Err(), ErrCorrupt)
	assert.ErrorIs(t, r.Err(), segment.ErrChecksum)
}

// A clean open reads the manifest instead of listing the directory; a
// manifest that is damaged, or that no longer matches the files, is not
// trusted.
func TestManifest(t *testing.T) {
	base := t.TempDir()
	orig := filepath.Join(base, "orig")
	segs := buildLog(t, orig, 600)
	require.Greater(t, len(segs), 3)

	l, err := Open(orig, small())
	require.NoError(t, err)
	assert.True(t, l.OpenStats().FromManifest)
	got, err := l.Segments()
	require.NoError(t, err)
	assert.Equal(t, segs, got, "sizes and timestamps from the manifest match the files")
	assert.Equal(t, int64(600), readAll(t, l, 0))
	require.NoError(t, l.Close())

	cases := map[string]func(dir string){
		"damaged manifest": func(dir string) {
			p := filepath.Join(dir, manifestFile)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[10] ^= 1
			require.NoError(t, os.WriteFile(p, b, 0o640))
		},
		"last segment gone": func(dir string) {
			last := segs[len(segs)-1]
			for _, sfx := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
				require.NoError(t, os.Remove(filepath.Join(dir, segment.FileName(last.BaseOffset, sfx))))
			}
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			copyDir(t, orig, dir)
			damage(dir)
			l, err := Open(dir, small())
			require.NoError(t, err)
			defer l.Close()
			assert.False(t, l.OpenStats().FromManifest)
			want := int64(600)
			if name == "last segment gone" {
				want = segs[len(segs)-1].BaseOffset
			}
			assert.Equal(t, want, readAll(t, l, 0))
		})
	}
}

// A read-only open changes no byte, even of a log whose index is damaged.
func TestReadOnlyChangesNothing(t *testing.T) {
	dir := t.TempDir()
	segs := buildLog(t, dir, 600)
	idx := filepath.Join(dir, segment.FileName(segs[1].BaseOffset, segment.IndexSuffix))
	require.NoError(t, os.WriteFile(idx, nil, 0o640))
	require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))
	before := snapshotDir(t, dir)
	opts := small()
	opts.ReadOnly = true
	l, err := Open(dir, opts)
	require.NoError(t, err)
	assert.Equal(t, int64(600), readAll(t, l, 0))
	_, err = l.Segments()
	require.NoError(t, err)
	require.NoError(t, l.Close())
	assert.Equal(t, before, snapshotDir(t, dir))
}

// snapshotDir maps every file name in dir to its content.
func snapshotDir(t *testing.T, dir string) map[string]string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}
