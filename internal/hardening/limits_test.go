package hardening

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs/faultfs"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// The test aims at 10,000 partitions. On the development machine (slow
// metadata operations, -race) creating and writing 10,000 took 11 s when
// idle but nearly 2 minutes while other test suites ran, and closing the
// store costs about as much again. So the test creates partitions in steps
// until it has maxPartitions or creating them has taken createBudget, and
// needs at least minPartitions (far more than the budget's 85 segments).
const (
	maxPartitions = 10000
	minPartitions = 1000
	createBudget  = 12 * time.Second
)

// TestOpenFileBudget: a Store with MaxOpenFiles = 256 over many partitions,
// with reads spread over all of them, never holds more descriptors than
// the budget plus a small constant (the store's lock, a checkpoint being
// written, the runtime's own).
func TestOpenFileBudget(t *testing.T) {
	const budget = 256
	const slack = 16
	root := filepath.Join(t.TempDir(), "root")
	// Durability is not under test: skip fsyncs, which dominate on this
	// filesystem.
	ffs := faultfs.New(nil)
	ffs.Add(faultfs.Rule{Ops: faultfs.OpSync | faultfs.OpSyncDir, Every: true, Noop: true})
	opts := storage.StoreOptions{MaxOpenFiles: budget, Log: storage.Options{FS: ffs, MaxIndexBytes: 4096}}
	baseline := openFDs(t)

	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if n, err := os.ReadDir("/proc/self/fd"); err == nil && int64(len(n)) > peak.Load() {
				peak.Store(int64(len(n)))
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()

	begin := time.Now()
	s, err := storage.OpenStore(root, opts)
	require.NoError(t, err)
	n := 0
	for n < maxPartitions && (n < minPartitions || time.Since(begin) < createBudget) {
		next := min(n+500, maxPartitions)
		require.NoError(t, s.CreateTopic("t", next, storage.TopicConfig{}))
		for p := n; p < next; p++ {
			l, err := s.Log("t", int32(p))
			require.NoError(t, err)
			_, err = l.Append(storage.Record{Value: []byte(value("p", p))})
			require.NoError(t, err)
		}
		n = next
	}
	t.Logf("%d partitions created and written in %v", n, time.Since(begin))
	assert.LessOrEqual(t, s.OpenFiles(), budget)

	begin = time.Now()
	var rwg sync.WaitGroup
	for w := range 4 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range n / 2 {
				p := rng.IntN(n)
				l, err := s.Log("t", int32(p))
				if !assert.NoError(t, err) {
					return
				}
				b, err := l.Read(0, 1<<16)
				if !assert.NoError(t, err) || !assert.NotEmpty(t, b) {
					return
				}
			}
		}()
	}
	rwg.Wait()
	t.Logf("%d random reads in %v", 2*n, time.Since(begin))
	require.NoError(t, s.Close())
	close(stop)
	wg.Wait()
	assert.LessOrEqual(t, int(peak.Load())-baseline, budget+slack,
		"open descriptors peaked at %d over the %d before the store opened", int(peak.Load())-baseline, baseline)
}

// TestFilePermissions: what storage, offsets and the seglog command create
// is not accessible to other users: files have no "other" bits, and
// directories are 0750. The umask is 0 during the test, so the modes are
// the ones the code asks for.
func TestFilePermissions(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := filepath.Join(t.TempDir(), "data")

	s, err := storage.OpenStore(root, storage.StoreOptions{Log: storage.Options{SegmentBytes: 1024, MaxIndexBytes: 1024}})
	require.NoError(t, err)
	require.NoError(t, s.CreateTopic("orders", 2, storage.TopicConfig{}))
	for i := range 30 {
		_, err := s.Produce("orders", storage.Record{Key: []byte{byte(i)}, Value: []byte(value("v", i))})
		require.NoError(t, err)
	}
	require.NoError(t, s.Sync())
	l, err := s.Log("orders", 0)
	require.NoError(t, err)
	_, err = l.DeleteSegmentsBefore(3)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	o, err := offsets.Open(filepath.Join(root, "offsets"), offsets.Options{})
	require.NoError(t, err)
	require.NoError(t, o.Commit("g", "orders", 0, 5, ""))
	require.NoError(t, o.Compact())
	require.NoError(t, o.Close())

	// The command creates a topic of its own (umask 0 is inherited).
	cmd := exec.Command(cliBin, "produce", "--dir", root, "--topic", "cli")
	cmd.Stdin = strings.NewReader("a\nb\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	n := 0
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := d.Info()
		require.NoError(t, err)
		n++
		if d.IsDir() {
			assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm(), "directory %s", p)
		} else {
			assert.Zero(t, fi.Mode().Perm()&0o007, "file %s is %v", p, fi.Mode().Perm())
		}
		return nil
	}))
	assert.Greater(t, n, 15)
}
