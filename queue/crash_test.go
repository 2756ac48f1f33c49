package queue_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/internal/crashchild"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/storage"
)

// TestMain runs the crash child when the test binary is started as one.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SEGLOG_QUEUE_CRASH_DIR"); dir != "" {
		crashChild(dir)
	}
	os.Exit(m.Run())
}

// crashChild is the child of TestCrashSIGKILL: it opens items, holding up
// to 1 to 8 leases at once (chosen per run), and confirms them in random
// order, aborting some, until it is killed. It prints "CONFIRMING off" before each Confirm and
// "CONFIRMED off" after one returned nil.
func crashChild(dir string) {
	fail := func(what string, err error) {
		fmt.Println("ERROR", what, err)
		os.Exit(3)
	}
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	if err != nil {
		fail("open store", err)
	}
	ost, err := offsets.Open(filepath.Join(dir, "offsets"), offsets.Options{})
	if err != nil {
		fail("open offsets", err)
	}
	q, err := queue.Open(store, ost, "jobs", queue.Options{LeaseTimeout: time.Hour})
	if err != nil {
		fail("open queue", err)
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	say("READY")
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 9))
	var open []queue.Item
	most := 1 + rng.IntN(8)
	for {
		if len(open) < most {
			// Holding none, wait for an item; else take one if there is one.
			ctx, cancel := context.WithCancel(context.Background())
			if len(open) > 0 {
				cancel()
			}
			it, err := q.Open(ctx)
			cancel()
			if err == nil {
				open = append(open, it)
				continue
			}
			if len(open) == 0 {
				fail("open", err)
			}
		}
		i := rng.IntN(len(open))
		it := open[i]
		open = append(open[:i], open[i+1:]...)
		if rng.IntN(10) == 0 {
			if err := q.Abort(it.Lease); err != nil {
				fail("abort", err)
			}
			continue
		}
		say("CONFIRMING %d", it.Offset)
		if err := q.Confirm(it.Lease); err != nil {
			fail("confirm", err)
		}
		say("CONFIRMED %d", it.Offset)
	}
}

// TestCrashSIGKILL kills a child that opens and confirms items at random
// moments (12 times at least, until 500 confirms), reopens the queue, and
// checks that no confirmed item is handed
// out again and that every item not confirmed is (nothing lost with its
// open lease).
func TestCrashSIGKILL(t *testing.T) {
	dir := t.TempDir()
	const perRound = 600
	rng := rand.New(rand.NewPCG(7, 7))
	confirmed := map[int64]bool{} // Confirm returned nil
	maybe := map[int64]bool{}     // killed during Confirm
	end := int64(0)
	// At least 12 kills, and on until 500 confirms survived them (a
	// loaded machine confirms fewer per round), 40 at most.
	for round := 0; round < 12 || len(confirmed) <= 500 && round < 40; round++ {
		// Top the queue up so the child never runs dry.
		store, err := storage.OpenStore(dir, storage.StoreOptions{})
		require.NoError(t, err)
		ost, err := offsets.Open(filepath.Join(dir, "offsets"), offsets.Options{})
		require.NoError(t, err)
		q, err := queue.Open(store, ost, "jobs", queue.Options{SweepInterval: -1})
		require.NoError(t, err)
		msgs := make([]queue.Message, perRound)
		for i := range msgs {
			msgs[i] = queue.Message{Value: []byte("item-" + strconv.FormatInt(end+int64(i), 10))}
		}
		_, err = q.Append(msgs...)
		require.NoError(t, err)
		end += perRound
		require.NoError(t, q.Close())
		require.NoError(t, ost.Close())
		require.NoError(t, store.Close())

		n := runChildAndKill(t, dir, time.Duration(20+rng.IntN(200))*time.Millisecond, func(f []string) {
			off, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err)
			switch f[0] {
			case "CONFIRMING":
				require.False(t, confirmed[off], "round %d: offset %d handed out again after its confirm", round, off)
				maybe[off] = true
			case "CONFIRMED":
				delete(maybe, off)
				confirmed[off] = true
			}
		})

		// Reopen after the crash: what the queue would hand out.
		store, err = storage.OpenStore(dir, storage.StoreOptions{})
		require.NoError(t, err)
		ost, err = offsets.Open(filepath.Join(dir, "offsets"), offsets.Options{})
		require.NoError(t, err)
		q, err = queue.Open(store, ost, "jobs", queue.Options{SweepInterval: -1})
		require.NoError(t, err)
		pending, err := q.Peek(int(end) + 1)
		require.NoError(t, err)
		got := map[int64]bool{}
		for _, it := range pending {
			require.Equal(t, "item-"+strconv.FormatInt(it.Offset, 10), string(it.Value))
			require.False(t, confirmed[it.Offset], "round %d: confirmed offset %d is handed out again", round, it.Offset)
			got[it.Offset] = true
		}
		for off := range end {
			if !confirmed[off] && !maybe[off] {
				require.True(t, got[off], "round %d: unconfirmed offset %d lost", round, off)
			}
		}
		// Settle the confirms the kill interrupted: the reopened queue says
		// which of them reached the offsets store.
		for off := range maybe {
			if !got[off] {
				confirmed[off] = true
			}
		}
		clear(maybe)
		// The queue hands them out in offset order, the lowest first.
		if len(pending) > 0 {
			it, err := q.Open(context.Background())
			require.NoError(t, err)
			assert.Equal(t, pending[0].Offset, it.Offset)
		}
		st := q.Stats()
		assert.Equal(t, int64(len(pending)), st.Pending, "round %d", round)
		require.NoError(t, q.Close()) // drops the lease: no commit
		require.NoError(t, ost.Close())
		require.NoError(t, store.Close())
		t.Logf("round %d: %d lines from the child, %d confirmed of %d, head %d", round, n, len(confirmed), end, st.Head)
	}
	assert.Greater(t, len(confirmed), 500, "the child made progress in 40 rounds")
}

// runChildAndKill runs this test binary as the crash child on dir, kills
// it with SIGKILL d after its first confirm, and calls onLine with the
// fields of every CONFIRMING and CONFIRMED line it printed, including
// those still in the pipe when it died. It returns the number of lines.
func runChildAndKill(t *testing.T, dir string, d time.Duration, onLine func([]string)) int {
	n := 0
	crashchild.Run(t, []string{"SEGLOG_QUEUE_CRASH_DIR=" + dir}, d, func(line string) bool {
		n++
		f := strings.Fields(line)
		if f[0] == "READY" {
			return false
		}
		require.Contains(t, []string{"CONFIRMING", "CONFIRMED"}, f[0], "child said: %s", line)
		onLine(f)
		return true
	})
	return n
}
