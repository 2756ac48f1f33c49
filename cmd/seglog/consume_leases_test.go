package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/storage"
)

// lines collects what a consumer prints, one "partition value" a line.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, s)
}

// of returns the lines that end with suffix.
func (l *lines) of(suffix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.got {
		if strings.HasSuffix(s, suffix) {
			out = append(out, s)
		}
	}
	return out
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// scanInto reads a consumer's output into l.
func scanInto(r io.Reader, l *lines) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.add(sc.Text())
	}
}

// appendRound appends one record "r<round>" to every partition.
func appendRound(t *testing.T, store *storage.Store, topic string, n, round int) {
	t.Helper()
	for p := range int32(n) {
		l, err := store.Log(topic, p)
		require.NoError(t, err)
		_, err = l.Append(storage.Record{Value: []byte(fmt.Sprintf("r%d", round))})
		require.NoError(t, err)
	}
	require.NoError(t, store.Sync())
}

// splitRound appends rounds until one is read half by each consumer
// (their leases settled), and returns the next round number. Every
// record of every round is printed once in all.
func splitRound(t *testing.T, store *storage.Store, a, b *lines, round int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for ; time.Now().Before(deadline); round++ {
		appendRound(t, store, "split", 4, round)
		suffix := fmt.Sprintf(" r%d", round)
		require.Eventually(t, func() bool { return len(a.of(suffix))+len(b.of(suffix)) >= 4 }, 30*time.Second, 5*time.Millisecond)
		if len(a.of(suffix)) == 2 && len(b.of(suffix)) == 2 {
			return round + 1
		}
	}
	t.Fatalf("the consumers did not split the partitions: %v / %v", a.all(), b.all())
	return 0
}

// assertOnce checks that every line was printed by one consumer, once.
func assertOnce(t *testing.T, outs ...*lines) {
	t.Helper()
	seen := map[string]int{}
	for _, o := range outs {
		for _, s := range o.all() {
			seen[s]++
		}
	}
	for s, n := range seen {
		assert.Equal(t, 1, n, "%q printed %d times", s, n)
	}
}

func TestConsumeGroupProcessesSplitPartitionsByLeases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.CreateTopic("split", 4, storage.TopicConfig{}))
	appendRound(t, store, "split", 4, 0)

	start := func(out *lines) (context.CancelFunc, chan int) {
		ctx, cancel := context.WithCancel(context.Background())
		r, w := io.Pipe()
		go scanInto(r, out)
		done := make(chan int, 1)
		go func() {
			done <- runContext(ctx, []string{"consume", "--dir", dir, "--topic", "split", "--group", "g", "--follow", "--format", "%p %v\\n"}, strings.NewReader(""), w, io.Discard)
			w.Close()
		}()
		return cancel, done
	}
	var a, b lines
	cancelA, doneA := start(&a)
	defer cancelA()
	require.Eventually(t, func() bool { return len(a.of(" r0")) == 4 }, 30*time.Second, 5*time.Millisecond, "the first consumer reads everything alone")
	cancelB, doneB := start(&b)
	defer cancelB()
	round := splitRound(t, store, &a, &b, 1)

	// One stops: the other takes its partitions over from the commits.
	cancelB()
	require.Equal(t, exitOK, <-doneB)
	appendRound(t, store, "split", 4, round)
	suffix := fmt.Sprintf(" r%d", round)
	require.Eventually(t, func() bool { return len(a.of(suffix)) == 4 }, 30*time.Second, 5*time.Millisecond)
	cancelA()
	require.Equal(t, exitOK, <-doneA)
	assertOnce(t, &a, &b)
}

func TestConsumeGroupTakesOverFromAKilledProcess(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "data")
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.CreateTopic("split", 4, storage.TopicConfig{}))

	start := func(out *lines) *exec.Cmd {
		cmd := exec.Command(bin, "consume", "--dir", dir, "--topic", "split", "--group", "g", "--follow", "--format", "%p %v\\n")
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		go scanInto(stdout, out)
		return cmd
	}
	var a, b lines
	start(&a)
	killed := start(&b)
	round := splitRound(t, store, &a, &b, 1)

	require.NoError(t, killed.Process.Signal(syscall.SIGKILL))
	_ = killed.Wait()
	appendRound(t, store, "split", 4, round)
	suffix := fmt.Sprintf(" r%d", round)
	require.Eventually(t, func() bool { return len(a.of(suffix)) == 4 }, 30*time.Second, 5*time.Millisecond, "the survivor reads every partition: %v", a.all())
}
