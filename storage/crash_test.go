package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/crashchild"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashValue is the value of the record at offset o in the crash tests.
func crashValue(o int64) []byte {
	v := []byte(fmt.Sprintf("rec-%d-", o))
	return append(v, bytes.Repeat([]byte{byte('a' + o%26)}, int(o%300))...)
}

func crashOpts() Options {
	// Small segments so that kills land in the middle of rolls too.
	return Options{Sync: SyncAlways, SegmentBytes: 64 << 10, IndexIntervalBytes: 1024, MaxIndexBytes: 4096}
}

// TestMain runs the crash child when the test binary is started as one.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SEGLOG_CRASH_DIR"); dir != "" {
		crashChild(dir)
	}
	if dir := os.Getenv("SEGLOG_IDEMPOTENT_DIR"); dir != "" {
		idempotentChild(dir)
	}
	os.Exit(m.Run())
}

// crashChild is the child process of TestCrashSIGKILL: it appends until
// killed and prints "ACK first last" after each acknowledged append.
func crashChild(dir string) {
	l, err := Open(dir, crashOpts())
	if err != nil {
		fmt.Println("OPEN-ERROR", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 7))
	for {
		n := 1 + rng.IntN(20)
		recs := make([]Record, n)
		next := l.EndOffset()
		for j := range recs {
			o := next + int64(j)
			recs[j] = Record{Timestamp: 1_700_000_000_000 + o, Key: []byte(strconv.FormatInt(o, 10)), Value: crashValue(o)}
		}
		res, err := l.Append(recs...)
		if err != nil {
			fmt.Fprintln(out, "APPEND-ERROR", err)
			out.Flush()
			os.Exit(4)
		}
		fmt.Fprintln(out, "ACK", res.FirstOffset, res.LastOffset)
		out.Flush()
	}
}

// TestCrashSIGKILL kills a child that appends with sync-on-every-append at
// random moments, reopens, and checks that every acknowledged record is
// there byte for byte and that nothing invalid is returned.
func TestCrashSIGKILL(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(42, 42))
	var acked int64 = -1
	// At least 20 kills, and on until 1,000 acknowledged appends survived
	// them (a loaded machine fsyncs fewer per round), 60 at most.
	for round := 0; round < 20 || acked <= 1000 && round < 60; round++ {
		killChildAfter(t, "SEGLOG_CRASH_DIR="+dir, time.Duration(30+rng.IntN(150))*time.Millisecond, func(f []string) {
			last, err := strconv.ParseInt(f[2], 10, 64)
			require.NoError(t, err)
			acked = max(acked, last)
		})

		// Reopen (recovery) and check everything acknowledged.
		l, err := Open(dir, crashOpts())
		require.NoError(t, err, "round %d", round)
		require.GreaterOrEqual(t, l.EndOffset(), acked+1, "round %d: acknowledged offsets lost", round)
		r := l.NewReader(0)
		want := int64(0)
		for r.Next() {
			rec := r.Record()
			require.Equal(t, want, rec.Offset)
			require.Equal(t, crashValue(want), rec.Value, "round %d offset %d", round, want)
			require.Equal(t, strconv.FormatInt(want, 10), string(rec.Key))
			want++
		}
		require.NoError(t, r.Err())
		require.Equal(t, l.EndOffset(), want)
		if round%5 == 4 {
			t.Logf("round %d: %d records, %d acknowledged, open stats %+v", round, want, acked+1, l.OpenStats())
		}
		// Half the rounds reopen without a clean close in between.
		if round%2 == 0 {
			require.NoError(t, l.Close())
		} else {
			l.closeSegments() // as a crash would: no marker, no checkpoint
			l.lock.unlock()
		}
	}
	assert.Greater(t, acked, int64(1000), "the child made progress in 60 rounds")
}

// killChildAfter runs this test binary as a child with the environment
// variables env (which TestMain dispatches on), kills it with SIGKILL after
// d, and calls onAck with the fields of every "ACK ..." line it printed,
// including those still in the pipe when it died.
func killChildAfter(t *testing.T, env string, d time.Duration, onAck func([]string), moreEnv ...string) {
	crashchild.Run(t, append([]string{env}, moreEnv...), d, func(line string) bool {
		f := strings.Fields(line)
		require.Equal(t, "ACK", f[0], "child said: %s", line)
		onAck(f)
		return true
	})
}
