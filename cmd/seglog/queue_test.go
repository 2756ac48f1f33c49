package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/faultfs"
)

func TestQueuePutGetPeek(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // put creates it
	r := seglog(t, "a\nb\nc\nd", "queue", "put", "--dir", dir, "--queue", "jobs")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "0\n1\n2\n3\n", r.stdout, "the offset of each item")
	assert.Empty(t, r.stderr)

	for _, step := range []struct {
		name string
		args []string
		want string
	}{
		{"peek shows what get hands out next", []string{"peek", "--max", "2"}, "a\nb\n"},
		{"get hands out one", []string{"get"}, "a\n"},
		{"peek again", []string{"peek"}, "b\nc\nd\n"},
		{"get --max 2", []string{"get", "--max", "2"}, "b\nc\n"},
		{"get --max 0 takes the rest", []string{"get", "--max", "0"}, "d\n"},
		{"an empty queue prints nothing", []string{"get"}, ""},
		{"peek of an empty queue", []string{"peek"}, ""},
		{"stats", []string{"stats", "--queue", "jobs"}, "QUEUE  POSITION  END  PENDING  CONFIRMED-ABOVE\njobs   4         4    0        0\n"},
	} {
		t.Run(step.name, func(t *testing.T) {
			args := append([]string{"queue", step.args[0], "--dir", dir, "--queue", "jobs"}, step.args[1:]...)
			r := seglog(t, "", args...)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, r.stderr)
			assert.Equal(t, step.want, r.stdout)
		})
	}
	// The items are an ordinary topic; the position a group's commit.
	r = seglog(t, "", "consume", "--dir", dir, "--topic", "jobs")
	assert.Equal(t, "a\nb\nc\nd\n", r.stdout)
	r = seglog(t, "", "offsets", "--dir", dir, "--group", queue.Group)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "__queue  jobs   0          4          0          4        0")
	r = seglog(t, "", "verify", dir)
	assert.Equal(t, 0, r.code, r.stderr)
}

func TestQueueStatsListsQueues(t *testing.T) {
	dir := t.TempDir()
	for _, q := range []string{"b", "a"} {
		r := seglog(t, "x\ny\n", "queue", "put", "--dir", dir, "--queue", q)
		require.Equal(t, 0, r.code, r.stderr)
	}
	r := seglog(t, "", "queue", "get", "--dir", dir, "--queue", "b")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "z\n", "produce", "--dir", dir, "--topic", "not-a-queue")
	require.Equal(t, 0, r.code, r.stderr)

	r = seglog(t, "", "queue", "stats", "--dir", dir)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "QUEUE  POSITION  END  PENDING  CONFIRMED-ABOVE\na      0         2    2        0\nb      1         2    1        0\n", r.stdout)
	r = seglog(t, "", "queue", "stats", "--dir", dir, "--json", "--queue", "b")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `{"queue":"b","position":1,"end_offset":2,"pending":1,"confirmed_above":0}`+"\n", r.stdout)
}

func TestQueueTTL(t *testing.T) {
	dir := t.TempDir()
	r := seglog(t, "gone\n", "queue", "put", "--dir", dir, "--queue", "q", "--ttl", "1ms")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "kept\n", "queue", "put", "--dir", dir, "--queue", "q", "--ttl", "1h", "--sync", "always")
	require.Equal(t, 0, r.code, r.stderr)
	// Peek skips the first item once its expiry has passed.
	assert.Eventually(t, func() bool {
		r = seglog(t, "", "queue", "peek", "--dir", dir, "--queue", "q", "--format", "json")
		return r.code == 0 && strings.Contains(r.stdout, `"value":"kept"`)
	}, 10*time.Second, time.Millisecond, "peek never skipped the expired item")
	require.Equal(t, 0, r.code, r.stderr)
	var it struct {
		Offset     int64  `json:"offset"`
		Value      string `json:"value"`
		ExpiresAt  *int64 `json:"expires_at"`
		Deliveries int    `json:"deliveries"`
		Headers    []struct {
			Key, Value string
		} `json:"headers"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &it), r.stdout)
	assert.Equal(t, int64(1), it.Offset)
	assert.Equal(t, "kept", it.Value)
	require.NotNil(t, it.ExpiresAt)
	assert.Greater(t, *it.ExpiresAt, time.Now().UnixMilli())
	require.Len(t, it.Headers, 1)
	assert.Equal(t, queue.ExpiresAtHeader, it.Headers[0].Key)

	r = seglog(t, "", "queue", "get", "--dir", dir, "--queue", "q", "--max", "0", "--format", "json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &it), r.stdout)
	assert.Equal(t, "kept", it.Value)
	assert.Equal(t, 1, it.Deliveries)
	assert.Equal(t, 1, strings.Count(r.stdout, "\n"), "the expired item is skipped")
	r = seglog(t, "", "queue", "stats", "--dir", dir, "--queue", "q")
	assert.Contains(t, r.stdout, "q      2         2    0        0")
}

// TestQueueGetGivesBackWhatItCannotPrint: an item that get fails to write
// is not removed.
func TestQueueGetGivesBackWhatItCannotPrint(t *testing.T) {
	dir := t.TempDir()
	r := seglog(t, "a\nb\n", "queue", "put", "--dir", dir, "--queue", "q")
	require.Equal(t, 0, r.code, r.stderr)
	var errb bytes.Buffer
	code := runEnv(&env{ctx: context.Background(), stdin: strings.NewReader(""), stdout: failingWriter{}, stderr: &errb, fs: vfs.Default},
		[]string{"queue", "get", "--dir", dir, "--queue", "q"})
	assert.Equal(t, 1, code)
	assert.Contains(t, errb.String(), "write stdout: disk on fire (item 0 is not removed)")
	noStackTrace(t, errb.String())
	r = seglog(t, "", "queue", "get", "--dir", dir, "--queue", "q", "--max", "0")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "a\nb\n", r.stdout)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk on fire") }

// TestQueueGetAfterUnconfirmedOpen: the CLI reads the library's state, so
// an item that a library user opened and never confirmed is handed out by
// the next get, and one it confirmed out of order is not.
func TestQueueGetAfterUnconfirmedOpen(t *testing.T) {
	dir := t.TempDir()
	r := seglog(t, "a\nb\n", "queue", "put", "--dir", dir, "--queue", "q")
	require.Equal(t, 0, r.code, r.stderr)
	// Out of order: b confirmed, a left open and dropped.
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	require.NoError(t, err)
	ost, err := offsets.Open(offsets.Dir(dir), offsets.Options{})
	require.NoError(t, err)
	q, err := queue.Open(store, ost, "q", queue.Options{SweepInterval: -1})
	require.NoError(t, err)
	a, err := q.Open(context.Background())
	require.NoError(t, err)
	b, err := q.Open(context.Background())
	require.NoError(t, err)
	require.NoError(t, q.Confirm(b.Lease))
	_ = a
	require.NoError(t, errors.Join(q.Close(), ost.Close(), store.Close()))

	r = seglog(t, "", "queue", "stats", "--dir", dir, "--queue", "q")
	assert.Contains(t, r.stdout, "q      0         2    1        1")
	r = seglog(t, "", "queue", "get", "--dir", dir, "--queue", "q", "--max", "0")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "a\n", r.stdout)
	ost, err = offsets.Open(offsets.Dir(dir), offsets.Options{})
	require.NoError(t, err)
	defer ost.Close()
	pos, err := ost.Fetch(queue.Group, "q", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(2), pos.Offset)
	assert.Empty(t, pos.Metadata)
}

func TestQueueGetWaits(t *testing.T) {
	dir := t.TempDir()
	r := seglog(t, "", "topics", "create", "--dir", dir, "--topic", "q", "--partitions", "1")
	require.Equal(t, 0, r.code, r.stderr)
	start := time.Now()
	r = seglog(t, "", "queue", "get", "--dir", dir, "--queue", "q", "--wait", "50ms")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "it waited")

	// Cancelled (as by Ctrl-C) while waiting: exit 0.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- seglogCtx(t, ctx, "", "queue", "get", "--dir", dir, "--queue", "q", "--wait", "1h") }()
	cancel()
	r = <-done
	assert.Equal(t, 0, r.code, r.stderr)
}

func TestQueueHelpAndUsage(t *testing.T) {
	for _, args := range [][]string{
		{"queue", "--help"}, {"help", "queue"},
		{"queue", "put", "--help"}, {"queue", "get", "--help"}, {"queue", "peek", "--help"}, {"queue", "stats", "--help"},
	} {
		r := seglog(t, "", args...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "Example", "%v", args)
		assert.Contains(t, r.stdout, "seglog queue", "%v", args)
	}
	r := seglog(t, "", "--help")
	assert.Contains(t, r.stdout, "  queue       put, get and peek items of a Kestrel-style queue\n")

	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"queue"}, "a subcommand is required"},
		{[]string{"queue", "pop"}, `unknown subcommand "pop"`},
		{[]string{"queue", "get", "--queue", "q"}, "--dir is required"},
		{[]string{"queue", "get", "--dir", dir}, "--queue is required"},
		{[]string{"queue", "put", "--dir", dir, "--queue", "q", "file.txt"}, "items come from stdin"},
		{[]string{"queue", "put", "--dir", dir, "--queue", "q", "--ttl", "-1s"}, "--ttl -1s is negative"},
		{[]string{"queue", "put", "--dir", dir, "--queue", "q", "--sync", "none"}, `--sync "none": want never, every-n, interval, always`},
		{[]string{"queue", "put", "--dir", dir, "--queue", "../q"}, "invalid topic"},
		{[]string{"queue", "get", "--dir", dir, "--queue", "q", "--max", "-1"}, "--max -1 is negative"},
		{[]string{"queue", "get", "--dir", dir, "--queue", "q", "--wait", "-1s"}, "--wait -1s is negative"},
		{[]string{"queue", "get", "--dir", dir, "--queue", "q", "--lease", "0s"}, "--lease 0: want a positive duration"},
		{[]string{"queue", "get", "--dir", dir, "--queue", "q", "--format", "xml"}, "--format"},
		{[]string{"queue", "peek", "--dir", dir, "--queue", "q", "--max", "0"}, "--max 0"},
		{[]string{"queue", "stats", "--dir", dir, "extra"}, `unexpected argument "extra"`},
	} {
		r := seglog(t, "", tc.args...)
		assert.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		assert.Contains(t, r.stderr, tc.want, "%v", tc.args)
		assert.Empty(t, r.stdout, "%v", tc.args)
	}
	// Failures: exit 1.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"queue", "get", "--dir", dir, "--queue", "nope"}, "queue nope does not exist in " + dir},
		{[]string{"queue", "peek", "--dir", dir, "--queue", "nope"}, "queue nope does not exist"},
		{[]string{"queue", "get", "--dir", filepath.Join(dir, "missing"), "--queue", "q"}, "no such file or directory"},
	} {
		r := seglog(t, "", tc.args...)
		assert.Equal(t, 1, r.code, "%v: %s", tc.args, r.stderr)
		assert.Contains(t, r.stderr, tc.want, "%v", tc.args)
	}
	// A topic with several partitions is not a queue.
	r = seglog(t, "", "topics", "create", "--dir", dir, "--topic", "wide", "--partitions", "2")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "", "queue", "get", "--dir", dir, "--queue", "wide")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "topic exists")
}

// TestQueuePutFailedAppendNamesItsLines: when the append of a batch in
// the middle of the input fails (here the second of three: 1,000 lines
// each), queue put names that batch's lines, and the offsets of the
// lines before it are printed.
func TestQueuePutFailedAppendNamesItsLines(t *testing.T) {
	root := t.TempDir()
	fs := faultfs.New(nil)
	fs.Add(faultfs.Rule{Ops: faultfs.OpWriteAt, Path: segment.LogSuffix, Nth: 1, Err: syscall.EIO})
	var in strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&in, "item-%d\n", i)
	}
	r := seglogFS(t, fs, in.String(), "queue", "put", "--dir", root, "--queue", "q")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "append lines 1001 to 2000: ")
	assert.Equal(t, 1000, strings.Count(r.stdout, "\n"), "the offsets of the first batch")
}
