package offsets

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	crashDirEnv   = "SEGLOG_OFFSETS_CRASH_DIR"
	crashRoundEnv = "SEGLOG_OFFSETS_CRASH_ROUND"
	crashWorkers  = 4
	batchParts    = 4
)

// TestMain runs the crash child when the test binary is started as one.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashHelper(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashHelper is the child of TestCrashSIGKILL: it commits with
// SyncAlways until killed and prints each acknowledged commit as
//
//	S <worker> <offset>   single commit: group s<worker>, topic single, partition <worker>
//	B <worker> <offset>   batch: group b<worker>, topic batch, partitions 0..3, all <offset>
//
// Offsets are round*1e9 + i, so that they grow across rounds.
func crashHelper(dir string) {
	round, err := strconv.Atoi(os.Getenv(crashRoundEnv))
	if err != nil {
		panic(err)
	}
	// a small CompactBytes so that kills also land inside compactions
	s, err := Open(dir, Options{Sync: SyncAlways, CompactBytes: 32 << 10})
	if err != nil {
		panic(err)
	}
	var out sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	ack := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(w, format, args...)
		_ = w.Flush() // one write per acknowledgement
		out.Unlock()
	}
	var wg sync.WaitGroup
	for worker := range crashWorkers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := int64(1); ; i++ {
				off := int64(round)*1e9 + i
				if err := s.Commit(fmt.Sprintf("s%d", worker), "single", int32(worker), off, strconv.FormatInt(off, 10)); err != nil {
					panic(err)
				}
				ack("S %d %d\n", worker, off)
			}
		}()
		go func() {
			defer wg.Done()
			batch := make([]Commit, batchParts)
			for i := int64(1); ; i++ {
				off := int64(round)*1e9 + i
				for p := range batch {
					batch[p] = Commit{"batch", int32(p), off, strconv.FormatInt(off, 10)}
				}
				if err := s.CommitBatch(fmt.Sprintf("b%d", worker), batch); err != nil {
					panic(err)
				}
				ack("B %d %d\n", worker, off)
			}
		}()
	}
	wg.Wait()
}

// TestCrashSIGKILL runs crashHelper in a child process, kills it with
// SIGKILL after a random short time, reopens the store and checks that every
// acknowledged commit is there and that every batch is all or nothing.
func TestCrashSIGKILL(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for round := 1; round <= 6; round++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())

		acked := map[string]int64{} // "S 1" or "B 1" -> highest acknowledged offset
		lines := 0
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			first := true
			for sc.Scan() {
				if first {
					// the child is committing: kill it a little later
					first = false
					delay := time.Duration(50+rng.IntN(250)) * time.Millisecond
					time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
				}
				f := strings.Fields(sc.Text())
				if len(f) != 3 || (f[0] != "S" && f[0] != "B") {
					continue // test framework output, or a line cut by the kill
				}
				off, err := strconv.ParseInt(f[2], 10, 64)
				if err != nil {
					continue
				}
				k := f[0] + " " + f[1]
				acked[k] = max(acked[k], off)
				lines++
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatal("child did not start committing")
		}
		err = cmd.Wait()
		require.Error(t, err, "the child was killed")
		require.Positive(t, lines, "round %d: the child acknowledged commits", round)

		s, err := Open(dir, Options{})
		require.NoError(t, err, "round %d", round)
		for worker := range crashWorkers {
			if want, ok := acked[fmt.Sprintf("S %d", worker)]; ok {
				p, err := s.Fetch(fmt.Sprintf("s%d", worker), "single", int32(worker))
				require.NoError(t, err)
				assert.GreaterOrEqual(t, p.Offset, want, "round %d: acknowledged single commit lost", round)
				assert.Equal(t, strconv.FormatInt(p.Offset, 10), p.Metadata)
			}
			want, acknowledged := acked[fmt.Sprintf("B %d", worker)]
			positions := s.Positions(fmt.Sprintf("b%d", worker))
			if !acknowledged && len(positions) == 0 {
				continue
			}
			require.Len(t, positions, batchParts, "round %d: a batch is all or nothing", round)
			for _, p := range positions {
				assert.Equal(t, positions[0].Offset, p.Offset, "round %d: a batch is all or nothing", round)
				assert.Equal(t, strconv.FormatInt(p.Offset, 10), p.Metadata)
			}
			assert.GreaterOrEqual(t, positions[0].Offset, want, "round %d: acknowledged batch lost", round)
		}
		st := s.Stats()
		t.Logf("round %d: %d acknowledgements, generation %d, %d bytes dropped from a torn tail",
			round, lines, st.Generation, st.DroppedBytes)
		require.NoError(t, s.Close())
	}
}
