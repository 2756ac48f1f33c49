package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs/faultfs"
)

func TestProduceConsumeRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var in strings.Builder
	var want []string
	for i := range 50 {
		line := fmt.Sprintf("key-%d\tvalue %d: ünïcode \"q\"", i%5, i)
		in.WriteString(line + "\n")
		want = append(want, line)
	}
	r := seglog(t, in.String(), "produce", "--dir", dir, "--topic", "events", "--partitions", "3", "--key-separator", "\t", "--sync", "always", "--batch", "7", "--compression", "zstd")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 50)
	perPart := map[string]int{}
	for _, l := range lines {
		var p, off int
		_, err := fmt.Sscanf(l, "%d %d", &p, &off)
		require.NoError(t, err, l)
		assert.Equal(t, perPart[fmt.Sprint(p)], off, "offsets are dense per partition")
		perPart[fmt.Sprint(p)]++
	}

	// Text, with keys: the same lines (order across partitions differs).
	r = seglog(t, "", "consume", "--dir", dir, "--topic", "events", "--key-separator", "\t")
	require.Equal(t, 0, r.code, r.stderr)
	got := strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.ElementsMatch(t, want, got)

	// JSON.
	r = seglog(t, "", "consume", "--dir", dir, "--topic", "events", "--format", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var fromJSON []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec struct {
			Partition *int32
			Offset    *int64
			Timestamp int64
			Key       string
			Value     string
			Headers   []any
		}
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		require.NotNil(t, rec.Partition)
		require.NotNil(t, rec.Offset)
		require.NotNil(t, rec.Headers)
		assert.InDelta(t, time.Now().UnixMilli(), rec.Timestamp, float64(time.Minute.Milliseconds()))
		fromJSON = append(fromJSON, rec.Key+"\t"+rec.Value)
	}
	assert.ElementsMatch(t, want, fromJSON)

	// --partition and --max.
	r = seglog(t, "", "consume", "--dir", dir, "--topic", "events", "--partition", "1", "--max", "2", "--format", "json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 2, strings.Count(r.stdout, `"partition":1`))
}

func TestProduceValuesOnlyAndBinary(t *testing.T) {
	dir := t.TempDir()
	in := "plain\n\nwith\rcr\nno newline at end"
	r := seglog(t, in, "produce", "--dir", dir, "--topic", "v", "--partition", "0", "--linger", "5ms")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "0 0\n0 1\n0 2\n0 3\n", r.stdout)
	r = seglog(t, "", "consume", "--dir", dir, "--topic", "v")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "plain\n\nwith\rcr\nno newline at end\n", r.stdout)
	r = seglog(t, "", "consume", "--dir", dir, "--topic", "v", "--format", "json", "--from", "2")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 2, strings.Count(r.stdout, "\n"))
	assert.Contains(t, r.stdout, `"key":null,"value":"with\rcr"`)

	// A missing separator is an error with the line number.
	r = seglog(t, "a:1\nnosep\n", "produce", "--dir", dir, "--topic", "v", "--key-separator", ":")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "stdin line 2 has no key separator")
}

func TestConsumeGroupAndFrom(t *testing.T) {
	root := t.TempDir()
	makeLog(t, root, "t", 1, 10, 10, 1024) // offsets 0..99, timestamps fixedTS + 10*offset
	base := []string{"consume", "--dir", root, "--topic", "t", "--format", "json"}
	offsetsOf := func(out string) []int64 {
		var offs []int64
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			var rec struct{ Offset int64 }
			require.NoError(t, json.Unmarshal([]byte(l), &rec))
			offs = append(offs, rec.Offset)
		}
		return offs
	}
	r := seglog(t, "", append(base, "--group", "g", "--max", "30")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, int64(0), offsetsOf(r.stdout)[0])
	r = seglog(t, "", append(base, "--group", "g", "--max", "5")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, []int64{30, 31, 32, 33, 34}, offsetsOf(r.stdout), "resumes at the committed offset")
	r = seglog(t, "", append(base, "--group", "g", "--max", "1", "--commit-first")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, []int64{35}, offsetsOf(r.stdout))

	r = seglog(t, "", append(base, "--from", "ms:"+fmt.Sprint(fixedTS+10*42))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, int64(42), offsetsOf(r.stdout)[0])
	rfc := time.UnixMilli(fixedTS + 10*57 - 3).UTC().Format(time.RFC3339Nano)
	r = seglog(t, "", append(base, "--from", rfc)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, int64(57), offsetsOf(r.stdout)[0])
	r = seglog(t, "", append(base, "--from", "latest")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	r = seglog(t, "", append(base, "--from", "yesterday")...)
	assert.Equal(t, 2, r.code)

	// Retention deleted below the committed offset: said, and reset.
	s, err := storage.OpenStore(root, storage.StoreOptions{})
	require.NoError(t, err)
	l, err := s.Log("t", 0)
	require.NoError(t, err)
	_, err = l.DeleteSegmentsBefore(60)
	require.NoError(t, err)
	start := l.StartOffset()
	require.Greater(t, start, int64(36))
	require.NoError(t, s.Close())
	r = seglog(t, "", append(base, "--group", "g", "--max", "1")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "committed offset 36 on t-0 is below the log start")
	assert.Equal(t, []int64{start}, offsetsOf(r.stdout))
}

func TestConsumeFollowStopsOnCancel(t *testing.T) {
	root := t.TempDir()
	makeLog(t, root, "t", 2, 2, 3, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := newLineWatcher(12)
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"consume", "--dir", root, "--topic", "t", "--group", "tail", "--follow"}, strings.NewReader(""), out, &errb)
	}()
	// Every record is printed; then consume --follow waits for more.
	select {
	case <-out.reached:
	case code := <-done:
		t.Fatalf("consume --follow ended before printing every record: exit %d: %s", code, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("consume --follow printed %d lines of 12", out.lines())
	}
	cancel()
	var r result
	select {
	case r.code = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("consume --follow did not stop")
	}
	r.stdout, r.stderr = out.String(), errb.String()
	noStackTrace(t, r.stderr)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 12, strings.Count(r.stdout, "\n"))
	st, err := offsets.Open(filepath.Join(root, "offsets"), offsets.Options{})
	require.NoError(t, err)
	defer st.Close()
	for p := int32(0); p < 2; p++ {
		pos, err := st.Fetch("tail", "t", p)
		require.NoError(t, err)
		assert.Equal(t, int64(6), pos.Offset)
	}
}

func TestOffsetsLagAndReset(t *testing.T) {
	root := t.TempDir()
	makeLog(t, root, "t", 2, 5, 10, 0) // 50 records per partition
	st, err := offsets.Open(filepath.Join(root, "offsets"), offsets.Options{})
	require.NoError(t, err)
	require.NoError(t, st.Commit("g1", "t", 0, 45, ""))
	require.NoError(t, st.Commit("g2", "t", 1, 10, ""))
	require.NoError(t, st.Close())

	r := seglog(t, "", "offsets", "--dir", root)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `g1\s+t\s+0\s+45\s+0\s+50\s+5\n`, r.stdout)
	assert.Regexp(t, `g1\s+t\s+1\s+-\s+0\s+50\s+50\n`, r.stdout)
	assert.Regexp(t, `g2\s+t\s+1\s+10\s+0\s+50\s+40\n`, r.stdout)

	r = seglog(t, "", "offsets", "--dir", root, "--group", "g2", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `{"group":"g2","topic":"t","partition":1,"committed":10,"log_start":0,"log_end":50,"lag":40}`)

	r = seglog(t, "", "offsets", "--dir", root, "--max-lag", "40")
	assert.Equal(t, 1, r.code, "g1 lags 50 on partition 1")
	assert.Contains(t, r.stderr, "group g1 lags 50 records on t-1")
	r = seglog(t, "", "offsets", "--dir", root, "--group", "g2", "--max-lag", "50")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `g2\s+t\s+0\s+-\s+0\s+50\s+50\n`, r.stdout, "no commit: the whole partition")

	// A dry run by default: the plan, and nothing changed.
	before := hashTree(t, root)
	r = seglog(t, "", "offsets", "reset", "--dir", root, "--group", "g1", "--topic", "t", "--to-latest")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `g1\s+t\s+1\s+-\s+50\n`, r.stdout)
	assert.Contains(t, r.stderr, "dry run: nothing was changed")
	assert.Equal(t, before, hashTree(t, root), "a dry run changes no byte")
	r = seglog(t, "", "offsets", "reset", "--dir", root, "--group", "g1", "--topic", "t", "--to-latest", "--execute")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "group g1: committed 2 offsets")
	r = seglog(t, "", "offsets", "reset", "--dir", root, "--group", "g2", "--topic", "t", "--partition", "1", "--to-offset", "7", "--execute")
	require.Equal(t, 0, r.code, r.stderr)
	// Out of range: moved to the nearer end, and said so.
	r = seglog(t, "", "offsets", "reset", "--dir", root, "--group", "g2", "--topic", "t", "--to-offset", "99")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `g2\s+t\s+1\s+7\s+50  \(99 is past the log end\)\n`, r.stdout)
	r = seglog(t, "", "offsets", "--dir", root, "--max-lag", "50")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `g1\s+t\s+0\s+50\s+0\s+50\s+0\n`, r.stdout)
	assert.Regexp(t, `g1\s+t\s+1\s+50\s+0\s+50\s+0\n`, r.stdout)
	assert.Regexp(t, `g2\s+t\s+1\s+7\s+0\s+50\s+43\n`, r.stdout)

	r = seglog(t, "", "offsets", "reset", "--dir", root, "--group", "g2", "--topic", "t")
	assert.Equal(t, 2, r.code)

	// --shift-by from the committed offset, --all-topics of the group.
	r = seglog(t, "", "offsets", "reset", "--dir", root, "--group", "g2", "--all-topics", "--shift-by", "-5", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `{"group":"g2","topic":"t","partition":1,"current":7,"new":2}`)
	assert.Contains(t, r.stdout, `{"group":"g2","topic":"t","partition":0,"current":null,"new":0,"note":"(-5 is below the log start)"}`)

	// offsets delete: one topic's offsets, then the group.
	r = seglog(t, "", "offsets", "delete", "--dir", root, "--group", "g2", "--topic", "t")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "", "offsets", "--dir", root, "--group", "g2")
	assert.Equal(t, 1, r.code, "g2 reads no topic any more, so it is gone")
	r = seglog(t, "", "offsets", "delete", "--dir", root, "--group", "g1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "group g1 deleted\n", r.stdout)
	r = seglog(t, "", "offsets", "delete", "--dir", root, "--group", "g1")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "group g1 does not exist")
}

func TestRetentionDryRunAndReal(t *testing.T) {
	root := t.TempDir()
	makeLog(t, root, "t", 1, 40, 5, 1024)
	segs := logs(t, filepath.Join(root, "t-0"))
	require.Greater(t, len(segs), 3)
	before := hashTree(t, root)

	r := seglog(t, "", "retention", "--dir", root, "--dry-run", "--max-bytes", "1", "--min-segments", "2")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "would delete "+fmt.Sprint(len(segs)-2)+" segments")
	assert.Contains(t, r.stdout, "size")
	after := hashTree(t, root)
	for name := range before {
		if strings.HasSuffix(name, ".log") || strings.HasSuffix(name, "log-start-offset") {
			assert.Equal(t, before[name], after[name], "dry run changed %s", name)
		}
	}
	assert.Len(t, logs(t, filepath.Join(root, "t-0")), len(segs))

	r = seglog(t, "", "retention", "--dir", root, "--max-bytes", "1", "--min-segments", "2", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, len(segs)-2, strings.Count(r.stdout, `"reason":"size"`))
	assert.Len(t, logs(t, filepath.Join(root, "t-0")), 2)
	r = seglog(t, "", "verify", root)
	assert.Equal(t, 0, r.code, r.stderr)

	r = seglog(t, "", "retention", "--dir", root)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "no policy")
}

func TestTopics(t *testing.T) {
	root := filepath.Join(t.TempDir(), "d")
	r := seglog(t, "", "topics", "create", "--dir", root, "--topic", "a", "--partitions", "3")
	require.Equal(t, 0, r.code, r.stderr)
	makeLog(t, root, "b", 1, 2, 2, 0)
	r = seglog(t, "", "topics", "--dir", root)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `a\s+2\s+0\s+0 B\s+0\s+0\s+0\n`, r.stdout, "listing opens read-only: no segment is created")
	assert.Regexp(t, `b\s+0\s+1\s+\d+ B\s+0\s+4\s+4\n`, r.stdout)
	r = seglog(t, "", "topics", "delete", "--dir", root, "--topic", "a")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "", "topics", "--dir", root, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, `"topic":"a"`)
	r = seglog(t, "", "topics", "delete", "--dir", root, "--topic", "a")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "topic a does not exist")
	r = seglog(t, "", "topics", "create", "--dir", root, "--topic", "../x", "--partitions", "1")
	assert.Equal(t, 2, r.code)
}

// TestEveryCommandHasItsHelpFile: each help file names a command, and
// each command shows its own description and examples.
func TestEveryCommandHasItsHelpFile(t *testing.T) {
	root := newRoot(&env{})
	files, err := fs.Glob(helpFiles, "help/*.txt")
	require.NoError(t, err)
	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())
		if len(path) > 1 && (path[1] == "help" || path[1] == "completion") {
			return
		}
		if len(path) > 1 {
			path = path[1:]
		}
		want = append(want, "help/"+strings.Join(path, "-")+".txt")
		assert.NotEmpty(t, c.Long, c.CommandPath())
		assert.Contains(t, c.Example, "  seglog", c.CommandPath())
		assert.NotContains(t, c.Long, "{workloads}", c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.ElementsMatch(t, want, files)
}

func TestHelpAndUsage(t *testing.T) {
	cmds := []string{"dump", "verify", "produce", "consume", "offsets", "retention", "topics", "describe", "queue", "bench", "version"}
	for _, c := range cmds {
		for _, args := range [][]string{{c, "--help"}, {c, "-h"}, {"help", c}} {
			r := seglog(t, "", args...)
			assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
			assert.Contains(t, r.stdout, "Example", "%v", args)
			assert.Contains(t, r.stdout, "seglog "+c, "%v", args)
		}
	}
	for _, args := range [][]string{{"offsets", "reset", "--help"}, {"offsets", "delete", "--help"}, {"topics", "create", "--help"}, {"topics", "alter", "--help"}, {"topics", "delete", "--help"}} {
		r := seglog(t, "", args...)
		assert.Equal(t, 0, r.code, "%v", args)
		assert.Contains(t, r.stdout, "Example", "%v", args)
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		r := seglog(t, "", args...)
		assert.Equal(t, 0, r.code)
		for _, c := range cmds {
			assert.Contains(t, r.stdout, "  "+c+" ")
		}
		assert.Contains(t, r.stdout, "Example")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"--verbose"}, "unknown flag: --verbose"},
		{[]string{"dump", "--bogus", "x.log"}, "unknown flag: --bogus"},
		{[]string{"dump", "-bogus", "x.log"}, "unknown flag -bogus: long flags take two dashes (--bogus)"},
		{[]string{"consume", "--dir", dir, "--topic", "t", "--max", "x"}, `invalid argument "x" for "--max" flag: not a whole number`},
		{[]string{"dump", "--json=maybe", "x.log"}, `invalid argument "maybe" for "--json" flag`},
		{[]string{"consume", "--dir"}, "flag needs an argument: --dir"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--batch-bytes", "lots"}, `invalid argument "lots" for "--batch-bytes" flag: want a size like`},
		{[]string{"retention", "--dir", dir, "--max-age", "60"}, `invalid argument "60" for "--max-age" flag: want a duration like 500ms, 90m, 1h30m or 7d`},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--batch-bytes", "0"}, "--batch-bytes 0: want at least 1 byte"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--batch-bytes", "17MiB"}, "--batch-bytes 17MiB: at most 16MiB"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--batch-bytes", "16777217"}, "--batch-bytes 16777217: at most 16MiB"},
		{[]string{"dump"}, "no FILE given"},
		{[]string{"dump", "--max-value-bytes", "x", "a.log"}, "not a whole number"},
		{[]string{"verify", "a", "b"}, "want one DIR (or --dir DIR), got 2"},
		{[]string{"verify", "--dir", "a", "b"}, "want one DIR (or --dir DIR), got 2"},
		{[]string{"produce", "--topic", "t"}, "--dir is required"},
		{[]string{"produce", "--dir", dir}, "--topic is required"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--sync", "sometimes"}, `--sync "sometimes": want never, every-n, interval, always`},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--sync", "none"}, `--sync "none": want never, every-n, interval, always`},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--format", "json", "--key-separator", ":"}, "--key-separator goes with --format text"},
		{[]string{"topics", "create", "--dir", dir, "--topic", "t", "--sync", "sometimes"}, `--sync "sometimes"`},
		{[]string{"topics", "create", "--dir", dir, "--topic", "t", "--segment-bytes", "64M"}, `want a size like`},
		{[]string{"topics", "create", "--dir", dir, "--topic", "t", "--segment-bytes", "10"}, `segment bytes 10 under`},
		{[]string{"describe", "--dir", dir}, "--topic is required"},
		{[]string{"consume", "--dir", dir, "--topic", "t", "--from", "-x"}, "--from"},
		{[]string{"consume", "--dir", dir, "--topic", "t", "--format", "%z"}, "unknown token %z"},
		{[]string{"consume", "--dir", dir, "--topic", "t", "--format", "json", "--print-key"}, "go with --format text"},
		{[]string{"produce", "--dir", dir, "--topic", "t", "--compression", "lz5"}, "--compression"},
		{[]string{"produce", "--dir", dir, "--topic", "bad/name"}, "invalid topic"},
		{[]string{"consume", "--dir", dir, "--topic", "t", "--format", "xml"}, "--format"},
		{[]string{"consume", "--dir", dir, "--topic", "t", "--commit-first"}, "needs --group"},
		{[]string{"offsets"}, "--dir is required"},
		{[]string{"offsets", "reset", "--dir", dir, "--group", "g", "--topic", "t", "--to-datetime", "soon"}, "--to-datetime"},
		{[]string{"offsets", "reset", "--dir", dir, "--group", "g", "--topic", "t"}, "give one of --to-earliest"},
		{[]string{"offsets", "reset", "--dir", dir, "--group", "g", "--topic", "t", "--to-earliest", "--to-latest"}, "give one of --to-earliest"},
		{[]string{"offsets", "reset", "--dir", dir, "--group", "g", "--to-earliest"}, "give --topic T or --all-topics"},
		{[]string{"offsets", "delete", "--dir", dir}, "--group is required"},
		{[]string{"version", "x"}, "unexpected argument"},
		{[]string{"topics", "--dir", dir, "rename"}, "unknown subcommand"},
		{[]string{"bench", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"bench", "nope"}, "unknown workload"},
		{[]string{"bench", "--size", "10"}, "--size 10: want at least 1MiB"},
	} {
		r := seglog(t, "", tc.args...)
		assert.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		assert.Contains(t, r.stderr, tc.want, "%v", tc.args)
		assert.Empty(t, r.stdout, "%v", tc.args)
	}
}

func TestMissingDirectoryIsAClearError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	for _, args := range [][]string{
		{"consume", "--dir", missing, "--topic", "t"},
		{"offsets", "--dir", missing},
		{"offsets", "reset", "--dir", missing, "--group", "g", "--topic", "t", "--to-offset", "0"},
		{"describe", "--dir", missing, "--topic", "t"},
		{"topics", "alter", "--dir", missing, "--topic", "t", "--retention-age", "1d"},
		{"dump", "--dir", missing, "--topic", "t"},
		{"retention", "--dir", missing, "--max-age", "1h"},
		{"topics", "--dir", missing},
		{"topics", "delete", "--dir", missing, "--topic", "t"},
		{"verify", missing},
	} {
		r := seglog(t, "", args...)
		assert.Equal(t, 1, r.code, "%v", args)
		assert.Contains(t, r.stderr, missing+": no such file or directory", "%v", args)
		assert.NotContains(t, r.stderr, "corrupt", "%v", args)
		_, err := os.Stat(missing)
		assert.True(t, os.IsNotExist(err), "%v created the directory", args)
	}
	root := t.TempDir()
	r := seglog(t, "", "consume", "--dir", root, "--topic", "nope")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "topic nope does not exist in "+root)
}

func TestDirectoryLockedByAnotherProcess(t *testing.T) {
	root := t.TempDir()
	held, err := storage.OpenStore(root, storage.StoreOptions{})
	require.NoError(t, err)
	defer held.Close()
	r := seglog(t, "x\n", "produce", "--dir", root, "--topic", "t")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "is in use by another process")
	// Read-only commands do not take the lock.
	r = seglog(t, "", "verify", root)
	assert.Equal(t, 0, r.code, r.stderr)
}

// TestCreateDataDirDurably: the commands that create a data directory
// fsync the parent of every directory they create:
// failing that fsync fails the command, naming the directory.
func TestCreateDataDirDurably(t *testing.T) {
	cases := []struct {
		name string
		args func(dir string) []string
	}{
		{"produce", func(dir string) []string { return []string{"produce", "--dir", dir, "--topic", "t"} }},
		{"topics create", func(dir string) []string {
			return []string{"topics", "create", "--dir", dir, "--topic", "t", "--partitions", "1"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "new", "data")

			fsys := faultfs.New(nil)
			fsys.FailAll(faultfs.OpSyncDir, parent, syscall.EIO)
			r := seglogFS(t, fsys, "x\n", tc.args(dir)...)
			assert.Equal(t, 1, r.code, r.stderr)
			assert.Contains(t, r.stderr, "data directory "+dir)
			assert.Contains(t, r.stderr, "input/output error")
			assert.Equal(t, 1, fsys.Injected())

			// Without the fault: every created directory's parent is synced.
			fsys = faultfs.New(nil)
			dir2 := filepath.Join(t.TempDir(), "a", "b")
			r = seglogFS(t, fsys, "x\n", tc.args(dir2)...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.GreaterOrEqual(t, fsys.Calls(faultfs.OpSyncDir), 2)
		})
	}
}

// lineWatcher is an io.Writer safe for concurrent use that closes reached
// once n lines were written to it.
type lineWatcher struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	n       int
	reached chan struct{}
}

func newLineWatcher(n int) *lineWatcher {
	return &lineWatcher{n: n, reached: make(chan struct{})}
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before := bytes.Count(w.buf.Bytes(), []byte("\n"))
	n, err := w.buf.Write(p)
	if before < w.n && before+bytes.Count(p, []byte("\n")) >= w.n {
		close(w.reached)
	}
	return n, err
}

func (w *lineWatcher) lines() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Count(w.buf.Bytes(), []byte("\n"))
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
