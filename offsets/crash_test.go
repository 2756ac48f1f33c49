package offsets

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
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
	crashChildEnv = "SEGLOG_OFFSETS_CRASH_CHILD" // set: one of two children sharing the directory
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

// crashHelper is the child of the SIGKILL tests: it commits with
// SyncAlways until killed and prints each acknowledged commit as
//
//	S <worker> <offset>   single commit: group s<worker>, topic single, partition <worker>
//	B <worker> <offset>   batch: group b<worker>, topic batch, partitions 0..3, all <offset>
//
// Offsets are round*1e9 + i, so that they grow across rounds. When two
// children share the directory (crashChildEnv is C), workers are C-<n>
// (groups s<C>-<n>, b<C>-<n>), and two more kinds of commits go:
//
//	P <worker> <offset>   one group for both children: group shared, topic sp, partition C*crashWorkers + n
//	X 0 <offset>          one key for both children: group both, topic both, partition 0
//
// X commits are made one at a time across both children, each holding a
// flock on a counter file beside the directory while it reads the counter,
// commits the next value and writes it back: so the acknowledged X values
// grow in the order they were acknowledged, and the surviving value must
// be the greatest one acknowledged or a later one.
func crashHelper(dir string) {
	round, err := strconv.Atoi(os.Getenv(crashRoundEnv))
	if err != nil {
		panic(err)
	}
	child := os.Getenv(crashChildEnv)
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
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	var wg sync.WaitGroup
	for n := range crashWorkers {
		worker, group := strconv.Itoa(n), strconv.Itoa(n)
		if child != "" {
			worker, group = child+"-"+worker, child+"-"+group
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := int64(1); ; i++ {
				off := int64(round)*1e9 + i
				must(s.Commit("s"+group, "single", int32(n), off, strconv.FormatInt(off, 10)))
				ack("S %s %d\n", worker, off)
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
				must(s.CommitBatch("b"+group, batch))
				ack("B %s %d\n", worker, off)
			}
		}()
		if child == "" {
			continue
		}
		c, err := strconv.Atoi(child)
		must(err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(1); ; i++ {
				off := int64(round)*1e9 + i
				must(s.Commit("shared", "sp", int32(c*crashWorkers+n), off, strconv.FormatInt(off, 10)))
				ack("P %s %d\n", worker, off)
			}
		}()
	}
	if child != "" {
		counter, err := os.OpenFile(dir+".counter", os.O_RDWR|os.O_CREATE, 0o640)
		must(err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 20)
			for {
				must(syscall.Flock(int(counter.Fd()), syscall.LOCK_EX))
				n, err := counter.ReadAt(buf, 0)
				if err != nil && err != io.EOF {
					panic(err)
				}
				v := int64(0)
				if n > 0 {
					v, err = strconv.ParseInt(string(buf[:n]), 10, 64)
					must(err)
				}
				v++
				must(s.Commit("both", "both", 0, v, strconv.FormatInt(v, 10)))
				_, err = counter.WriteAt([]byte(fmt.Sprintf("%020d", v)), 0)
				must(err)
				ack("X 0 %d\n", v)
				must(syscall.Flock(int(counter.Fd()), syscall.LOCK_UN))
			}
		}()
	}
	wg.Wait()
}

// crashChild is a running child of the SIGKILL tests.
type crashChild struct {
	cmd   *exec.Cmd
	done  chan struct{}
	acked map[string]int64 // "S 1" or "B 1" -> highest acknowledged offset
	lines int
}

// startCrashChild starts a child committing to dir and kills it with
// SIGKILL a random 50 to 300 ms after its first acknowledgement.
func startCrashChild(t *testing.T, dir string, round int, child string, rng *rand.Rand) *crashChild {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round), crashChildEnv+"="+child)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	c := &crashChild{cmd: cmd, done: make(chan struct{}), acked: map[string]int64{}}
	delay := time.Duration(50+rng.IntN(250)) * time.Millisecond
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			if first {
				// the child is committing: kill it a little later
				first = false
				time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
			}
			f := strings.Fields(sc.Text())
			if len(f) != 3 || !strings.Contains("SBPX", f[0]) || len(f[0]) != 1 {
				continue // test framework output, or a line cut by the kill
			}
			off, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				continue
			}
			k := f[0] + " " + f[1]
			c.acked[k] = max(c.acked[k], off)
			c.lines++
		}
	}()
	return c
}

// wait waits for the child to be killed and for its output to end.
func (c *crashChild) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Fatal("child did not start committing")
	}
	require.Error(t, c.cmd.Wait(), "the child was killed")
}

// checkCrashed checks a store after a crash against what children
// acknowledged: every acknowledged single commit is there or a later one,
// every batch is all or nothing and not older than acknowledged.
func checkCrashed(t *testing.T, s *Store, round int, children []*crashChild, names []string) {
	t.Helper()
	for ci, c := range children {
		for n := range crashWorkers {
			worker := strconv.Itoa(n)
			if names[ci] != "" {
				worker = names[ci] + "-" + worker
			}
			if want, ok := c.acked["S "+worker]; ok {
				p, err := s.Fetch("s"+worker, "single", int32(n))
				require.NoError(t, err)
				assert.GreaterOrEqual(t, p.Offset, want, "round %d: acknowledged single commit lost", round)
				assert.Equal(t, strconv.FormatInt(p.Offset, 10), p.Metadata)
			}
			want, acknowledged := c.acked["B "+worker]
			positions := s.Positions("b" + worker)
			if acknowledged || len(positions) > 0 {
				require.Len(t, positions, batchParts, "round %d: a batch is all or nothing", round)
				for _, p := range positions {
					assert.Equal(t, positions[0].Offset, p.Offset, "round %d: a batch is all or nothing", round)
					assert.Equal(t, strconv.FormatInt(p.Offset, 10), p.Metadata)
				}
				assert.GreaterOrEqual(t, positions[0].Offset, want, "round %d: acknowledged batch lost", round)
			}
			if want, ok := c.acked["P "+worker]; ok {
				p, err := s.Fetch("shared", "sp", int32(ci*crashWorkers+n))
				require.NoError(t, err)
				assert.GreaterOrEqual(t, p.Offset, want, "round %d: acknowledged commit of the shared group lost", round)
			}
		}
	}
	var both int64 = -1
	for _, c := range children {
		if v, ok := c.acked["X 0"]; ok {
			both = max(both, v)
		}
	}
	if both >= 0 {
		p, err := s.Fetch("both", "both", 0)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, p.Offset, both, "round %d: the key both children commit to went back", round)
		assert.Equal(t, strconv.FormatInt(p.Offset, 10), p.Metadata)
	}
}

// TestCrashSIGKILL runs crashHelper in a child process, kills it with
// SIGKILL after a random short time, reopens the store and checks that every
// acknowledged commit is there and that every batch is all or nothing.
func TestCrashSIGKILL(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for round := 1; round <= 6; round++ {
		c := startCrashChild(t, dir, round, "", rng)
		c.wait(t)
		require.Positive(t, c.lines, "round %d: the child acknowledged commits", round)

		s, err := Open(dir, Options{})
		require.NoError(t, err, "round %d", round)
		checkCrashed(t, s, round, []*crashChild{c}, []string{""})
		st := s.Stats()
		t.Logf("round %d: %d acknowledgements, generation %d, %d bytes dropped from a torn tail",
			round, c.lines, st.Generation, st.DroppedBytes)
		require.NoError(t, s.Close())
	}
}

// TestCrashSIGKILLTwoProcesses runs two children committing to one
// directory at once - each its own groups, one group on different
// partitions, and one key both write - and kills each with SIGKILL at its
// own random time, so that one often goes on committing after the other
// died in the middle of a write or a compaction (and must cut its torn
// record, or follow its interrupted compaction). Every acknowledged commit
// must survive; per key, the value is the last acknowledged one or a later
// one. A read-only store opened before the writing Open must answer the
// same.
func TestCrashSIGKILLTwoProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "offsets")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	names := []string{"0", "1"}
	for round := 1; round <= 6; round++ {
		children := []*crashChild{
			startCrashChild(t, dir, round, names[0], rng),
			startCrashChild(t, dir, round, names[1], rng),
		}
		for i, c := range children {
			c.wait(t)
			require.Positive(t, c.lines, "round %d: child %d acknowledged commits", round, i)
		}

		ro, err := OpenReadOnly(dir, Options{})
		require.NoError(t, err, "round %d", round)
		checkCrashed(t, ro, round, children, names)
		s, err := Open(dir, Options{})
		require.NoError(t, err, "round %d", round)
		checkCrashed(t, s, round, children, names)
		assert.Equal(t, snapshotOf(s), snapshotOf(ro), "round %d: the read-only store reads what Open recovers", round)
		st := s.Stats()
		t.Logf("round %d: %d + %d acknowledgements, generation %d, %d bytes dropped from a torn tail",
			round, children[0].lines, children[1].lines, st.Generation, st.DroppedBytes)
		require.NoError(t, ro.Close())
		require.NoError(t, s.Close())
	}
}
