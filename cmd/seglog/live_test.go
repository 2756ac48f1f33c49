package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// snapshotTree records every entry under dir: name, type and mode, size,
// modification time (ns) and a hash of the contents; for a directory its
// mode and mtime (which moves when an entry is created, renamed or
// removed). Any change to a byte, a name or a file shows.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%s %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(sum[:])
		}
		out[rel] = desc
		return nil
	})
	require.NoError(t, err)
	return out
}

// listingCommands are the commands that must change no byte of a data
// directory, also beside a writer.
func listingCommands(data string) [][]string {
	p0 := filepath.Join(data, "orders-0")
	return [][]string{
		{"topics", "--dir", data},
		{"topics", "list", "--dir", data, "--json"},
		{"describe", "--dir", data, "--topic", "orders"},
		{"describe", "--dir", data, "--topic", "empty", "--json"},
		{"offsets", "--dir", data},
		{"offsets", "--dir", data, "--max-lag", "1"},
		{"offsets", "--dir", data, "--group", "g1", "--json"},
		{"offsets", "reset", "--dir", data, "--group", "g1", "--all-topics", "--to-earliest"},
		{"dump", "--dir", data, "--topic", "orders", "--verify-index", "--records"},
		{"dump", "--dir", p0, "--json"},
		{"dump", filepath.Join(p0, segment.FileName(0, segment.IndexSuffix)), filepath.Join(p0, segment.FileName(0, segment.TimeIndexSuffix))},
		{"verify", data},
		{"verify", "--deep", "--dir", p0},
		{"retention", "--dir", data, "--dry-run", "--max-bytes", "1", "--consumed"},
		{"consume", "--dir", data, "--topic", "orders", "--from", "-5"},
		{"consume", "--dir", data, "--topic", "empty"},
	}
}

// TestListingCommandsChangeNothing: topics, describe, offsets (and its
// dry-run reset), dump, verify, retention --dry-run and consume without a
// group change no byte, name or mtime under the data directory: after a
// clean shutdown (where a writable open would remove the clean-shutdown
// markers and manifests), and while a writer holds the directory and the
// offset store (a producer's Store with open partitions, a consumer's
// offsets.Store).
func TestListingCommandsChangeNothing(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	makeLog(t, data, "orders", 2, 20, 10, 1024)
	r := seglog(t, "", "topics", "create", "--dir", data, "--topic", "empty", "--partitions", "2", "--retention-age", "7d")
	require.Equal(t, 0, r.code, r.stderr)
	st, err := offsets.Open(offsets.Dir(data), offsets.Options{})
	require.NoError(t, err)
	require.NoError(t, st.Commit("g1", "orders", 0, 100, ""))
	require.NoError(t, st.Close())

	check := func(t *testing.T) {
		for _, args := range listingCommands(data) {
			before := snapshotTree(t, data)
			r := seglog(t, "", args...)
			assert.Contains(t, []int{0, 1}, r.code, "%v: %s", args, r.stderr)
			after := snapshotTree(t, data)
			if !assert.Equal(t, before, after, "%v changed the data directory", args) {
				return
			}
		}
	}
	t.Run("after a clean shutdown", check)
	t.Run("beside a writer", func(t *testing.T) {
		store, err := storage.OpenStore(data, storage.StoreOptions{})
		require.NoError(t, err)
		defer store.Close()
		l, err := store.Log("orders", 1)
		require.NoError(t, err)
		_, err = l.Append(storage.Record{Value: []byte("appended by the writer")})
		require.NoError(t, err)
		_, err = store.Log("empty", 0) // opened: its first segment exists
		require.NoError(t, err)
		ost, err := offsets.Open(offsets.Dir(data), offsets.Options{})
		require.NoError(t, err)
		defer ost.Close()
		require.NoError(t, ost.Commit("g2", "orders", 1, 3, ""))
		check(t)
		// And the writer is undisturbed.
		_, err = l.Append(storage.Record{Value: []byte("after")})
		require.NoError(t, err)
		require.NoError(t, ost.Commit("g2", "orders", 1, 4, ""))
	})
}

// liveCommand runs a command in-process until it returns or ctx is
// cancelled; its stdout and stderr are readable while it runs.
type liveCommand struct {
	stdout, stderr *lockedBuffer
	done           chan int
}

func startCommand(ctx context.Context, stdin io.Reader, args ...string) *liveCommand {
	c := &liveCommand{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan int, 1)}
	go func() {
		c.done <- runEnv(&env{ctx: ctx, stdin: stdin, stdout: c.stdout, stderr: c.stderr, fs: vfs.Default}, args)
	}()
	return c
}

// wait returns the exit code (the deadline is a safety net against a
// hang, not a measure of speed).
func (c *liveCommand) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-c.done:
		return code
	case <-time.After(2 * time.Minute):
		t.Fatalf("command did not exit; stderr: %s", c.stderr.String())
	}
	return -1
}

// delivered parses a consumer's "%p %o %v" lines into how many times each
// value was printed.
func delivered(out string) map[string]int {
	seen := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 {
			seen[f[2]]++
		}
	}
	return seen
}

// TestEndToEndBesideLiveProcesses runs on one data directory at once: a
// producer fed through a pipe, two consumer groups following the topic,
// and describe, offsets --max-lag and retention (a dry run, which works
// beside the producer; a real run refuses beside it and is run between
// two producer runs, while the consumers keep following), and checks
// that every record reaches each group exactly once.
func TestEndToEndBesideLiveProcesses(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	r := seglog(t, "", "topics", "create", "--dir", data, "--topic", "ev", "--partitions", "3", "--segment-bytes", "4KiB", "--retention-consumed")
	require.Equal(t, 0, r.code, r.stderr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const perRun, runs = 1500, 2
	total := perRun * runs
	format := `%p %o %v\n`
	groupA := startCommand(ctx, strings.NewReader(""), "consume", "--dir", data, "--topic", "ev", "--group", "a", "--follow", "--format", format)
	groupB := startCommand(ctx, strings.NewReader(""), "consume", "--dir", data, "--topic", "ev", "--group", "b", "--follow", "--format", format)

	// Listing commands in a loop until the consumers are done.
	listCtx, stopListing := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var listing []string
	var listMu sync.Mutex
	for _, args := range [][]string{
		{"describe", "--dir", data, "--topic", "ev"},
		{"offsets", "--dir", data, "--max-lag", "1000000"},
		{"retention", "--dir", data, "--dry-run"},
		{"verify", data},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; listCtx.Err() == nil; n++ {
				r := seglog(t, "", args...)
				if r.code != 0 {
					listMu.Lock()
					listing = append(listing, fmt.Sprintf("%v (run %d): exit %d: %s", args, n, r.code, r.stderr))
					listMu.Unlock()
				}
				time.Sleep(10 * time.Millisecond) // pacing only: two cores
			}
		}()
	}

	for run := range runs {
		pr, pw := io.Pipe()
		producer := startCommand(ctx, pr, "produce", "--dir", data, "--topic", "ev", "--key-separator", ":", "--batch", "50")
		// Feed in chunks, so that the consumers and the listings run
		// while records arrive.
		for i := run * perRun; i < (run+1)*perRun; i++ {
			_, err := fmt.Fprintf(pw, "key-%d:r-%d\n", i%17, i)
			require.NoError(t, err)
			if i%100 == 99 {
				time.Sleep(5 * time.Millisecond) // pacing only
			}
		}
		// A real retention run refuses while the producer holds the data
		// directory, and says why.
		r := seglog(t, "", "retention", "--dir", data)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "is in use by another process")
		require.NoError(t, pw.Close())
		require.Equal(t, 0, producer.wait(t), producer.stderr.String())
		assert.Equal(t, perRun, strings.Count(producer.stdout.String(), "\n"))
		if run == 0 {
			// Between the producer runs, with the consumers following:
			// the consumed segments go (the topic's own
			// --retention-consumed), as far as both groups have read.
			require.Eventually(t, func() bool {
				return len(delivered(groupA.stdout.String())) >= perRun/2 && len(delivered(groupB.stdout.String())) >= perRun/2
			}, time.Minute, 10*time.Millisecond, "the consumers read half the first run")
			r := seglog(t, "", "retention", "--dir", data)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stdout, "deleted")
		}
	}
	for _, g := range []*liveCommand{groupA, groupB} {
		require.Eventually(t, func() bool { return len(delivered(g.stdout.String())) >= total }, 2*time.Minute, 20*time.Millisecond,
			"a consumer group stopped short; stderr: %s", g.stderr.String())
	}
	stopListing()
	wg.Wait()
	cancel()
	for name, g := range map[string]*liveCommand{"a": groupA, "b": groupB} {
		assert.Equal(t, 0, g.wait(t), "group %s: %s", name, g.stderr.String())
		seen := delivered(g.stdout.String())
		assert.Len(t, seen, total, "group %s", name)
		for i := range total {
			assert.Equal(t, 1, seen[fmt.Sprintf("r-%d", i)], "group %s: record r-%d", name, i)
		}
	}
	listMu.Lock()
	assert.Empty(t, listing, "the listing commands beside the live processes")
	listMu.Unlock()
	// Both groups committed everything.
	r = seglog(t, "", "offsets", "--dir", data, "--max-lag", "0")
	assert.Equal(t, 0, r.code, r.stdout+r.stderr)
	r = seglog(t, "", "verify", data)
	assert.Equal(t, 0, r.code, r.stderr)
}
