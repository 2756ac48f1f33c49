package raftstore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/internal/crashchild"
	"github.com/seglog/seglog/storage"
)

const crashEnv = "RAFTSTORE_CRASH_DIR"

var keyTerm = []byte("CurrentTerm")

// TestMain runs the crash child when the test binary is started as one.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
	}
	os.Exit(m.Run())
}

func crashOpts() Options {
	// Small segments: kills land in rolls and front deletions too.
	return Options{Log: storage.Options{SegmentBytes: 8 << 10, IndexIntervalBytes: 512, MaxIndexBytes: 4096}}
}

// crashChild is the child of TestCrashSIGKILL. It acts as a raft node
// would on its stores, until killed, and says what it does on stdout
// (each line is one write, which a kill cannot split):
//
//	TERM t         about to set CurrentTerm to t
//	TERMSET t      CurrentTerm is t, durably
//	ACK f l t      entries f to l of term t are stored (StoreLogs returned)
//	CUT x          about to delete the entries from x to the end
//	HEAD y         about to delete the entries up to y
func crashChild(dir string) {
	fail := func(what string, err error) {
		fmt.Println("ERROR", what, err)
		os.Exit(3)
	}
	s, err := Open(dir, crashOpts())
	if err != nil {
		fail("open", err)
	}
	term, err := s.GetUint64(keyTerm)
	if err != nil && err != ErrKeyNotFound {
		fail("get term", err)
	}
	setTerm := func() {
		term++
		fmt.Println("TERM", term)
		if err := s.SetUint64(keyTerm, term); err != nil {
			fail("set term", err)
		}
		fmt.Println("TERMSET", term)
	}
	setTerm() // a restarted node starts a new term
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 11))
	for {
		first, err1 := s.FirstIndex()
		last, err2 := s.LastIndex()
		if err1 != nil || err2 != nil {
			fail("index", fmt.Errorf("%v %v", err1, err2))
		}
		switch op := rng.IntN(100); {
		case op < 6 && last > first+1:
			// A new leader's entries conflict from x on: cut, often
			// inside a batch.
			x := last - rng.Uint64N(min(last-first, 30))
			fmt.Println("CUT", x)
			if err := s.DeleteRange(x, last); err != nil {
				fail("cut", err)
			}
			setTerm()
		case op < 10 && last > first+50:
			y := first + rng.Uint64N(last-first-40)
			fmt.Println("HEAD", y)
			if err := s.DeleteRange(first, y); err != nil {
				fail("head", err)
			}
		default:
			n := 1 + rng.IntN(20)
			logs := entries(last+1, n, term)
			if err := s.StoreLogs(logs); err != nil {
				fail("store", err)
			}
			fmt.Println("ACK", last+1, last+uint64(n), term)
		}
	}
}

// crashModel is what the parent knows the child acknowledged.
type crashModel struct {
	must      map[uint64]uint64 // index -> term of entries that must be there
	headMax   uint64            // entries up to here may have been deleted
	termSet   uint64            // CurrentTerm acknowledged
	termAsked uint64            // CurrentTerm being set when the child died
}

func (m *crashModel) line(t *testing.T, line string) {
	f := strings.Fields(line)
	require.NotEmpty(t, f)
	num := func(i int) uint64 {
		require.Greater(t, len(f), i, "child said: %s", line)
		v, err := strconv.ParseUint(f[i], 10, 64)
		require.NoError(t, err, "child said: %s", line)
		return v
	}
	switch f[0] {
	case "ACK":
		for i := num(1); i <= num(2); i++ {
			m.must[i] = num(3)
		}
	case "CUT":
		// From now on they may be gone (and later replaced).
		for i := range m.must {
			if i >= num(1) {
				delete(m.must, i)
			}
		}
	case "HEAD":
		m.headMax = max(m.headMax, num(1))
	case "TERM":
		m.termAsked = num(1)
	case "TERMSET":
		m.termSet = num(1)
	default:
		t.Fatalf("child said: %s", line)
	}
}

// check opens the store the child left and checks it against the model.
func (m *crashModel) check(t *testing.T, dir string, round int) int {
	s, err := Open(dir, crashOpts())
	require.NoError(t, err, "round %d", round)
	defer s.Close()
	first, last := firstLast(t, s)
	for i, term := range m.must {
		if i <= m.headMax {
			continue
		}
		require.True(t, i >= first && i <= last, "round %d: acknowledged index %d lost: the log holds [%d, %d]", round, i, first, last)
		var l raft.Log
		require.NoError(t, s.GetLog(i, &l), "round %d index %d", round, i)
		require.Equal(t, term, l.Term, "round %d index %d", round, i)
	}
	// Whatever is there is whole and in order.
	prevTerm := uint64(0)
	for i := first; i <= last && first > 0; i++ {
		var l raft.Log
		require.NoError(t, s.GetLog(i, &l), "round %d index %d", round, i)
		require.Equal(t, i, l.Index)
		require.Equal(t, entryData(i, l.Term), l.Data, "round %d index %d", round, i)
		require.GreaterOrEqual(t, l.Term, prevTerm, "round %d index %d: terms go down", round, i)
		prevTerm = l.Term
	}
	term, err := s.GetUint64(keyTerm)
	if m.termSet == 0 && err == ErrKeyNotFound {
		term = 0
	} else {
		require.NoError(t, err)
	}
	assert.Contains(t, []uint64{m.termSet, m.termAsked}, term, "round %d: CurrentTerm", round)
	assert.NoFileExists(t, filepath.Join(dir, CutFile), "round %d: Open finished the cut", round)
	return int(last - first + 1)
}

// TestCrashSIGKILL kills a child that stores, cuts and compacts at random
// moments, reopens its store and checks that every acknowledged entry is
// there and equal, that nothing else is half there, and that the stable
// store holds the last term set (or the one being set).
func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	m := &crashModel{must: map[uint64]uint64{}}
	acked, resumed := 0, 0
	// At least 20 rounds, and more while the child has acknowledged few
	// StoreLogs: on a loaded machine (the race detector, other tests'
	// fsyncs) it stores less in the same time. A child that makes no
	// progress at all still fails below, after 200 rounds.
	for round := 0; round < 20 || (acked <= 100 && round < 200); round++ {
		runChildUntilKilled(t, dir, time.Duration(50+rng.IntN(150))*time.Millisecond, func(line string) {
			if strings.HasPrefix(line, "ACK") {
				acked++
			}
			m.line(t, line)
		})
		if _, err := os.Stat(filepath.Join(dir, CutFile)); err == nil {
			resumed++ // killed during a cut inside a batch
		}
		n := m.check(t, dir, round)
		if round%5 == 4 {
			t.Logf("round %d: %d entries in the log, %d acknowledged StoreLogs, %d cuts resumed so far", round, n, acked, resumed)
		}
	}
	assert.Greater(t, acked, 100, "the child made progress")
}

// runChildUntilKilled runs this test binary as the crash child on dir,
// kills it with SIGKILL d after its first line, and passes every line it
// printed (including those still in the pipe when it died) to onLine.
func runChildUntilKilled(t *testing.T, dir string, d time.Duration, onLine func(string)) {
	crashchild.Run(t, []string{crashEnv + "=" + dir}, d, func(line string) bool {
		require.False(t, strings.HasPrefix(line, "ERROR"), "child: %s", line)
		onLine(line)
		return true
	})
}
