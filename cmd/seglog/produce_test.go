package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs/faultfs"
)

// bigLines returns n lines of size bytes (without the "\n"), each
// different, and stdin holding them.
func bigLines(n, size int) ([]string, string) {
	lines := make([]string, n)
	var b strings.Builder
	for i := range lines {
		head := fmt.Sprintf("line %d ", i+1)
		lines[i] = head + strings.Repeat(string(rune('a'+i%26)), size-len(head))
		b.WriteString(lines[i] + "\n")
	}
	return lines, b.String()
}

type dumpedBatch struct {
	Count int32 `json:"count"`
	Size  int   `json:"size"`
}

// dumpBatches returns the batches of every .log of a partition directory,
// read with seglog dump --json.
func dumpBatches(t *testing.T, dir string) []dumpedBatch {
	t.Helper()
	var out []dumpedBatch
	for _, p := range logs(t, dir) {
		r := seglog(t, "", "dump", "--json", p)
		require.Equal(t, 0, r.code, r.stderr)
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var b dumpedBatch
			require.NoError(t, json.Unmarshal([]byte(l), &b), l)
			out = append(out, b)
		}
	}
	return out
}

// TestProduceBatchBytes: batches are capped by bytes as well as lines
// so that 1,000 lines of 20 KB do not make one 20 MB batch that the
// engine refuses, losing all of it. --linger holds lines back until a
// batch is full, so the caps alone cut the batches (the input is all
// there; the end of input ends the wait): every batch but the last is
// full.
func TestProduceBatchBytes(t *testing.T) {
	const lineBytes = 20_000
	cases := []struct {
		name    string
		lines   int
		flags   []string
		cap     int // most bytes of records in a batch of more than one line
		batches int // at least this many batches
		lineCap int // --batch, when given
	}{
		{"default 1MiB", 1000, nil, 1 << 20, 1000 * lineBytes / (1 << 20), 0},
		{"512KiB zstd", 200, []string{"--batch-bytes", "512KiB", "--compression", "zstd"}, 512 << 10, 200 * lineBytes / (512 << 10), 0},
		{"plain bytes", 200, []string{"--batch-bytes", "100000"}, 100000, 200 * lineBytes / 100000, 0},
		{"a line larger than the cap goes alone", 30, []string{"--batch-bytes", "10KiB"}, 10 << 10, 30, 0},
		{"the line cap still applies", 100, []string{"--batch", "7"}, segment.HeaderSize + 7*(lineBytes+segment.MaxRecordOverhead), 100 / 7, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			want, stdin := bigLines(tc.lines, lineBytes)
			args := append([]string{"produce", "--dir", root, "--topic", "t", "--linger", "1h"}, tc.flags...)
			r := seglog(t, stdin, args...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, tc.lines, strings.Count(r.stdout, "\n"))

			batches := dumpBatches(t, filepath.Join(root, "t-0"))
			assert.GreaterOrEqual(t, len(batches), tc.batches)
			total := 0
			for i, b := range batches {
				total += int(b.Count)
				size := func(lines int) int { return segment.HeaderSize + lines*(lineBytes+segment.MaxRecordOverhead) }
				if b.Count > 1 {
					assert.LessOrEqual(t, size(int(b.Count)), tc.cap, "batch %d: %d lines", i, b.Count)
				}
				// Full: one more line would pass a cap (a batch was cut
				// into a full one and a one-line remainder).
				if i < len(batches)-1 {
					assert.True(t, size(int(b.Count)+1) > tc.cap || (tc.lineCap > 0 && int(b.Count) == tc.lineCap),
						"batch %d of %d has %d lines: not full", i, len(batches), b.Count)
				}
			}
			assert.Equal(t, tc.lines, total)

			r = seglog(t, "", "consume", "--dir", root, "--topic", "t")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, strings.Join(want, "\n")+"\n", r.stdout)
			r = seglog(t, "", "verify", "--deep", root)
			assert.Equal(t, 0, r.code, r.stderr)
		})
	}
}

// keysFor returns a key that the store sends to partition 0 and one it
// sends to partition 1, of a topic with 2 partitions.
func keysFor(t *testing.T) (string, string) {
	var k [2]string
	for i := 0; k[0] == "" || k[1] == ""; i++ {
		key := fmt.Sprintf("k%d", i)
		if p := xxhash.Sum64String(key) % 2; k[p] == "" {
			k[p] = key
		}
	}
	return k[0], k[1]
}

// TestProduceStopReportsWhatWasAppended: when produce stops on an error,
// everything before the failing line or batch is appended and stderr
// says exactly which lines were, at which offsets.
func TestProduceStopReportsWhatWasAppended(t *testing.T) {
	k0, k1 := keysFor(t)
	numbered := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(f(i) + "\n")
		}
		return b.String()
	}
	cases := []struct {
		name     string
		stdin    string
		flags    []string
		fault    func(fs *faultfs.FS)
		stderr   []string
		printed  int // stdout lines: the lines appended in whole batches
		consumed int // records in the topic afterwards
	}{
		{
			name:     "a line longer than the largest batch",
			stdin:    "one\ntwo\n" + strings.Repeat("x", segment.DefaultMaxBatchBytes) + "\nfour\n",
			stderr:   []string{"stdin line 3 is longer than", "appended lines 1-2 (offsets 0-1 of partition 0); line 3 onward not appended"},
			printed:  2,
			consumed: 2,
		},
		{
			name:     "a line without the key separator",
			stdin:    "a:1\nb:2\nc:3\nd:4\nnosep\nf:6\n",
			flags:    []string{"--key-separator", ":", "--batch", "3", "--linger", "1h", "--partitions", "1"},
			stderr:   []string{"stdin line 5 has no key separator", "appended lines 1-4 (offsets 0-3 of partition 0); line 5 onward not appended"},
			printed:  4,
			consumed: 4,
		},
		{
			name:     "the first line without the key separator",
			stdin:    "nosep\na:1\n",
			flags:    []string{"--key-separator", ":"},
			stderr:   []string{"stdin line 1 has no key separator", "no line was appended; line 1 onward not appended"},
			printed:  0,
			consumed: 0,
		},
		{
			name:  "a failed write",
			stdin: numbered(50, func(i int) string { return fmt.Sprint("v", i) }),
			flags: []string{"--batch", "10", "--linger", "1h"},
			fault: func(fs *faultfs.FS) {
				fs.Add(faultfs.Rule{Ops: faultfs.OpWriteAt, Path: segment.LogSuffix, Nth: 2, Err: syscall.EIO})
			},
			stderr:   []string{"append lines 21-30: ", "appended lines 1-20 (offsets 0-19 of partition 0); line 21 onward not appended"},
			printed:  20,
			consumed: 20,
		},
		{
			name: "a failed write to one partition of a batch",
			stdin: numbered(40, func(i int) string {
				if i%2 == 1 {
					return fmt.Sprintf("%s:%d", k0, i)
				}
				return fmt.Sprintf("%s:%d", k1, i)
			}),
			flags: []string{"--key-separator", ":", "--partitions", "2", "--batch", "10", "--linger", "1h"},
			fault: func(fs *faultfs.FS) {
				fs.Add(faultfs.Rule{Ops: faultfs.OpWriteAt, Path: filepath.Join("t-1", segment.FileName(0, segment.LogSuffix)), Nth: 1, Err: syscall.EIO})
			},
			stderr: []string{"append the 5 of lines 11-20 for partition 1: ",
				"appended lines 1-10 (offsets 0-4 of partition 0, 0-4 of partition 1); of lines 11-20, appended only those for partition 0 (5 lines, offsets 5-9); not appended: the other lines of 11-20 and line 21 onward"},
			printed:  10,
			consumed: 15,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			fs := faultfs.New(nil)
			if tc.fault != nil {
				tc.fault(fs)
			}
			args := append([]string{"produce", "--dir", root, "--topic", "t"}, tc.flags...)
			r := seglogFS(t, fs, tc.stdin, args...)
			assert.Equal(t, 1, r.code, r.stderr)
			for _, want := range tc.stderr {
				assert.Contains(t, r.stderr, want)
			}
			assert.Equal(t, tc.printed, strings.Count(r.stdout, "\n"), "one stdout line per line appended")
			r = seglog(t, "", "consume", "--dir", root, "--topic", "t")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, tc.consumed, strings.Count(r.stdout, "\n"))
		})
	}
}
