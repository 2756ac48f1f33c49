package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs"
)

// TestConsumeTopicWithEmptyPartitions: partitions that were never
// written read as empty: consume prints what the
// others hold and exits 0, whatever --from says.
func TestConsumeTopicWithEmptyPartitions(t *testing.T) {
	root := t.TempDir()
	r := seglog(t, "", "topics", "create", "--dir", root, "--topic", "t", "--partitions", "3")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "a\nb\n", "produce", "--dir", root, "--topic", "t", "--partition", "1")
	require.Equal(t, 0, r.code, r.stderr)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"all partitions", nil, "a\nb\n"},
		{"an empty partition", []string{"--partition", "2"}, ""},
		{"from an offset", []string{"--partition", "1", "--from", "1"}, "b\n"},
		{"from latest", []string{"--from", "latest"}, ""},
		{"from a time", []string{"--from", "ms:0"}, "a\nb\n"},
		{"as a group", []string{"--group", "g"}, "a\nb\n"},
		{"as a group again", []string{"--group", "g"}, ""},
		{"json", []string{"--format", "json", "--max", "1"}, `{"partition":1,"offset":0,`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := seglog(t, "", append([]string{"consume", "--dir", root, "--topic", "t"}, tc.args...)...)
			assert.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, r.stderr)
			if strings.HasPrefix(tc.want, "{") {
				assert.True(t, strings.HasPrefix(r.stdout, tc.want), r.stdout)
			} else {
				assert.Equal(t, tc.want, r.stdout)
			}
		})
	}
	r = seglog(t, "", "verify", root)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
}

// follower is a consume --follow running in the test's process, its
// stdout read line by line.
type follower struct {
	t      *testing.T
	cancel context.CancelFunc
	lines  chan string
	stderr *lockedBuffer
	done   chan int
	out    *io.PipeReader
}

func startFollower(t *testing.T, args ...string) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	f := &follower{t: t, cancel: cancel, lines: make(chan string), stderr: &lockedBuffer{}, done: make(chan int, 1), out: pr}
	go func() {
		code := runEnv(&env{ctx: ctx, stdin: strings.NewReader(""), stdout: pw, stderr: f.stderr, fs: vfs.Default},
			append([]string{"consume", "--follow"}, args...))
		pw.Close()
		f.done <- code
	}()
	go func() {
		defer close(f.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
	}()
	return f
}

// lockedBuffer is a strings.Builder that a command writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// next returns the next line the follower prints (the wait is a safety
// net against a hang, not a measure of speed).
func (f *follower) next() string {
	f.t.Helper()
	select {
	case l, ok := <-f.lines:
		require.True(f.t, ok, "consume --follow stopped: %s", f.stderr.String())
		return l
	case <-time.After(30 * time.Second):
		f.t.Fatalf("consume --follow printed nothing in 30s; stderr: %s", f.stderr.String())
	}
	return ""
}

// exit waits for the follower to exit (after stop, or on its own) and
// returns its exit code.
func (f *follower) exit() int {
	f.t.Helper()
	go func() { _, _ = io.Copy(io.Discard, f.out) }()
	select {
	case code := <-f.done:
		return code
	case <-time.After(30 * time.Second):
		f.t.Fatal("consume --follow did not exit")
	}
	return -1
}

// TestConsumeFollowBesideALaterProducer: consume --follow started on a
// topic no record was ever appended to delivers what a producer appends
// afterwards, to any partition.
func TestConsumeFollowBesideALaterProducer(t *testing.T) {
	root := t.TempDir()
	r := seglog(t, "", "topics", "create", "--dir", root, "--topic", "t", "--partitions", "2")
	require.Equal(t, 0, r.code, r.stderr)

	f := startFollower(t, "--dir", root, "--topic", "t", "--format", "json")
	for i, p := range []int{1, 0, 1} {
		r := seglog(t, fmt.Sprintf("v%d\n", i), "produce", "--dir", root, "--topic", "t", "--partition", fmt.Sprint(p))
		require.Equal(t, 0, r.code, r.stderr)
		l := f.next()
		assert.Contains(t, l, fmt.Sprintf(`"partition":%d,`, p))
		assert.Contains(t, l, fmt.Sprintf(`"value":"v%d"`, i))
	}
	f.cancel()
	assert.Equal(t, 0, f.exit(), f.stderr.String())
	assert.Empty(t, f.stderr.String())
}

// TestConsumeFollowFailureIsReported: when following fails (here, the
// topic is deleted under it), consume --follow says so and exits 1; it
// exited 0 without a word.
func TestConsumeFollowFailureIsReported(t *testing.T) {
	root := t.TempDir()
	r := seglog(t, "a\n", "produce", "--dir", root, "--topic", "t", "--partitions", "2", "--partition", "0")
	require.Equal(t, 0, r.code, r.stderr)
	f := startFollower(t, "--dir", root, "--topic", "t")
	assert.Equal(t, "a", f.next())
	r = seglog(t, "", "topics", "delete", "--dir", root, "--topic", "t")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 1, f.exit())
	assert.Contains(t, f.stderr.String(), "seglog consume: t-")
	assert.Contains(t, f.stderr.String(), ": waiting for records: ")
}

// TestConsumeFollowWaitsForATopicToBeCreated: consume --follow of a topic
// that does not exist yet says once that it waits, then delivers what a
// producer appends once it creates the topic; without --follow the same
// topic is an error.
func TestConsumeFollowWaitsForATopicToBeCreated(t *testing.T) {
	root := t.TempDir()
	r := seglog(t, "", "topics", "create", "--dir", root, "--topic", "other")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "", "consume", "--dir", root, "--topic", "later")
	assert.Equal(t, exitFailure, r.code)
	assert.Contains(t, r.stderr, "topic later does not exist")

	f := startFollower(t, "--dir", root, "--topic", "later")
	require.Eventually(t, func() bool { return strings.Contains(f.stderr.String(), "waiting for it") }, 30*time.Second, time.Millisecond)
	r = seglog(t, "", "topics", "create", "--dir", root, "--topic", "later", "--partitions", "2")
	require.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "first\n", "produce", "--dir", root, "--topic", "later", "--partition", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "first", f.next())
	f.cancel()
	assert.Equal(t, 0, f.exit(), f.stderr.String())
	assert.Equal(t, 1, strings.Count(f.stderr.String(), "waiting for it"), f.stderr.String())

	// Interrupted while it waits: it exits as an interrupted follow does.
	f = startFollower(t, "--dir", root, "--topic", "never")
	require.Eventually(t, func() bool { return strings.Contains(f.stderr.String(), "waiting for it") }, 30*time.Second, time.Millisecond)
	f.cancel()
	assert.Equal(t, 0, f.exit(), f.stderr.String())
}
