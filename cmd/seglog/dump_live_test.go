package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// heldPartition is a partition of a store this process holds open, with
// three batches of one 20 KB record each, synced, and the bytes of a
// fourth batch that has not been appended.
type heldPartition struct {
	dir, logPath string
	size         int64  // of the data
	batch        []byte // the next batch, offset 3
}

func newHeldPartition(t *testing.T) heldPartition {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	store, err := storage.OpenStore(data, storage.StoreOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.CreateTopic("orders", 1, storage.TopicConfig{}))
	l, err := store.Log("orders", 0)
	require.NoError(t, err)
	for i := range 3 {
		_, err = l.Append(storage.Record{Timestamp: fixedTS, Value: bytes.Repeat([]byte{byte('a' + i)}, 20000)})
		require.NoError(t, err)
	}
	require.NoError(t, l.Sync())
	segs, err := l.Segments()
	require.NoError(t, err)
	active := segs[len(segs)-1]
	batch, err := segment.AppendBatch(nil, []segment.Record{{Timestamp: fixedTS, Value: bytes.Repeat([]byte{'d'}, 20000)}}, segment.EncodeOptions{})
	require.NoError(t, err)
	segment.SetBaseOffset(batch, 3)
	p := heldPartition{dir: filepath.Dir(active.Path), logPath: active.Path, size: active.Size, batch: batch}
	fi, err := os.Stat(p.logPath)
	require.NoError(t, err)
	require.Equal(t, p.size, fi.Size(), "no preallocated tail yet")
	return p
}

// writeAt writes b at pos of path, as the writer would.
func writeAt(t *testing.T, path string, b []byte, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt(b, pos)
	require.NoError(t, err)
}

// testDumper dumps to buffers; each pause before a reread calls pause.
func testDumper(o dumpOptions, pause func()) (*dumper, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	d := &dumper{w: bufio.NewWriter(&out), stderr: &errOut, o: o, name: "seglog dump", liveTries: 3, livePause: pause}
	return d, &out, &errOut
}

// Beside a writer, damage in the newest .log that the writer was
// appending when dump read it is read again, and goes once it is whole
// batches; damage that stays, garbage past the batch in flight, and the
// same bytes where no writer holds the partition are reported.
func TestDumpBesideWriter(t *testing.T) {
	const zeros = 256 << 10
	cases := []struct {
		name       string
		prealloc   bool // the batch goes into a zero tail, not past the end
		garbageAt  int  // >0: a byte of garbage this far past the batch in flight
		completes  bool // the writer finishes the batch during the first pause
		unheld     bool // a copy of the partition that nobody holds
		problems   bool
		batches    int // batch lines printed
		wantStderr string
	}{
		{name: "past the end, completes", completes: true, batches: 4, wantStderr: "a writer was appending"},
		{name: "into zeros, completes", prealloc: true, completes: true, batches: 4, wantStderr: "a writer was appending"},
		{name: "past the end, stays torn", problems: true, batches: 3, wantStderr: "runs past the end"},
		{name: "into zeros, stays torn", prealloc: true, problems: true, batches: 4, wantStderr: "checksum"},
		{name: "garbage past the batch in flight", prealloc: true, completes: true, garbageAt: 1000, problems: true, batches: 4, wantStderr: "unknown version"},
		{name: "nobody holds it", completes: true, unheld: true, problems: true, batches: 3, wantStderr: "runs past the end"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newHeldPartition(t)
			path := p.logPath
			if tc.unheld {
				cp := filepath.Join(t.TempDir(), "orders-0")
				require.NoError(t, os.MkdirAll(cp, 0o750))
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				path = filepath.Join(cp, filepath.Base(path))
				require.NoError(t, os.WriteFile(path, b, 0o640))
			}
			if tc.prealloc {
				writeAt(t, path, make([]byte, zeros), p.size)
			}
			half := len(p.batch) / 2
			writeAt(t, path, p.batch[:half], p.size)
			if tc.garbageAt > 0 {
				writeAt(t, path, []byte{0xee}, p.size+int64(len(p.batch)+tc.garbageAt))
			}
			pauses := 0
			d, out, errOut := testDumper(dumpOptions{}, func() {
				if pauses++; pauses == 1 && tc.completes {
					writeAt(t, path, p.batch[half:], p.size+int64(half))
				}
			})
			d.file(path)
			require.NoError(t, d.w.Flush())
			assert.Equal(t, tc.problems, d.problems > 0, "problems: %s", errOut)
			assert.Equal(t, tc.batches, strings.Count(out.String(), "baseOffset:"), out.String())
			assert.Contains(t, errOut.String(), tc.wantStderr)
			if tc.unheld {
				assert.Zero(t, pauses, "nothing is read again where no writer is")
			}
		})
	}
}

// The writer's partition named another way: a relative FILE, one reached
// through a symbolic link, and an .index FILE with --verify-index.
func TestDumpBesideWriterPaths(t *testing.T) {
	p := newHeldPartition(t)
	link := filepath.Join(t.TempDir(), "link-0")
	require.NoError(t, os.Symlink(p.dir, link))
	base := filepath.Base(p.logPath)
	cases := []struct {
		name, path string
		chdir      string
	}{
		{name: "relative", path: base, chdir: p.dir},
		{name: "dot-dot", path: filepath.Join("..", filepath.Base(p.dir), base), chdir: p.dir},
		{name: "symlink", path: filepath.Join(link, base)},
		{name: "index file", path: filepath.Join(link, strings.TrimSuffix(base, segment.LogSuffix)+segment.IndexSuffix)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.chdir != "" {
				t.Chdir(tc.chdir)
			}
			require.NoError(t, os.Truncate(p.logPath, p.size))
			half := len(p.batch) / 2
			writeAt(t, p.logPath, p.batch[:half], p.size)
			pauses := 0
			d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {
				if pauses++; pauses == 1 {
					writeAt(t, p.logPath, p.batch[half:], p.size+int64(half))
				}
			})
			d.file(tc.path)
			require.NoError(t, d.w.Flush())
			assert.Zero(t, d.problems, errOut.String())
			assert.Equal(t, 1, pauses, "read again once")
		})
	}
}

// --verify-index beside a writer: entries of batches appended after dump
// read the size of the .log are not damage; an entry past the data for an
// offset dump read is.
func TestDumpVerifyIndexBesideWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orders-0")
	l, err := storage.Open(dir, storage.Options{IndexIntervalBytes: 1})
	require.NoError(t, err)
	defer l.Close()
	for range 3 {
		_, err = l.Append(storage.Record{Timestamp: fixedTS, Value: bytes.Repeat([]byte{'x'}, 1000)})
		require.NoError(t, err)
	}
	segs, err := l.Segments()
	require.NoError(t, err)
	first := segs[0]
	logPath, read := first.Path, first.Size // the size dump read
	_, err = l.Append(storage.Record{Timestamp: fixedTS, Value: bytes.Repeat([]byte{'y'}, 1000)})
	require.NoError(t, err)

	check := func(live bool) (int, string) {
		f, err := os.Open(logPath)
		require.NoError(t, err)
		defer f.Close()
		var lf *os.File
		if live {
			lf = f
		}
		d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {})
		d.log(d.newLogWalk(f, read, logPath, lf), 0, true, loadIndexChecker(logPath, 0, read))
		require.NoError(t, d.w.Flush())
		return d.problems, errOut.String()
	}
	n, stderr := check(true)
	assert.Zero(t, n, stderr)
	n, stderr = check(false)
	assert.Equal(t, 1, n, "nobody appending: the entry is past the data")
	assert.Contains(t, stderr, "past the end of the valid log data")

	// An entry for offset 2, which dump read, at the position past the
	// data (where offset 3's batch is) is damage beside a writer too.
	idxPath := siblingPath(logPath, segment.IndexSuffix)
	require.NoError(t, l.Close())
	b, err := os.ReadFile(idxPath)
	require.NoError(t, err)
	// Entries for offsets 1, 2 and 3 (the first batch, at 0, needs none).
	require.GreaterOrEqual(t, len(b), 3*index.OffsetEntrySize)
	binary.BigEndian.PutUint32(b[index.OffsetEntrySize+4:], uint32(read))
	clear(b[2*index.OffsetEntrySize:])
	require.NoError(t, os.WriteFile(idxPath, b, 0o640))
	n, stderr = check(true)
	assert.Equal(t, 1, n, stderr)
	assert.Contains(t, stderr, "entry 1 {offset 2, position")
}

// Dumps of the newest segment of a partition while a producer appends
// batches of 20 KB records to it (rolling segments of 4 MiB): none reports
// damage.
func TestDumpBesideProducer(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	store, err := storage.OpenStore(data, storage.StoreOptions{Log: storage.Options{SegmentBytes: 4 << 20}})
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.CreateTopic("orders", 1, storage.TopicConfig{}))
	l, err := store.Log("orders", 0)
	require.NoError(t, err)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		v := bytes.Repeat([]byte("0123456789"), 2000)
		recs := make([]storage.Record, 16)
		for i := range recs {
			recs[i] = storage.Record{Value: v}
		}
		for !stop.Load() {
			if _, err := l.Append(recs...); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	part := filepath.Join(data, "orders-0")
	for i := range 40 {
		pl, err := storage.ListPartition(part)
		require.NoError(t, err)
		require.NotEmpty(t, pl.Segments)
		newest := filepath.Join(part, segment.FileName(pl.Segments[len(pl.Segments)-1], segment.LogSuffix))
		r := seglog(t, "", "dump", "--verify-index", newest)
		require.Equal(t, 0, r.code, "dump %d: %s", i, r.stderr)
	}
}

// "." inside a partition directory is that partition, for dump --dir and
// verify, also while a writer holds it.
func TestDotIsThePartition(t *testing.T) {
	p := newHeldPartition(t)
	t.Chdir(p.dir)
	r := seglog(t, "", "dump", "--dir", ".")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 3, strings.Count(r.stdout, "baseOffset:"))
	r = seglog(t, "", "verify", ".")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "orders-0: 1 segment, 3 batches")
	assert.Contains(t, r.stdout, "1 partition of 1 topic")
}
