package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// heldLog opens a store in a new data directory, held by this process
// until the test ends, and returns partition 0 of its topic "orders".
func heldLog(t *testing.T, opts storage.Options) (*storage.Log, string) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	store, err := storage.OpenStore(data, storage.StoreOptions{Log: opts})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.CreateTopic("orders", 1, storage.TopicConfig{}))
	l, err := store.Log("orders", 0)
	require.NoError(t, err)
	return l, data
}

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
	l, _ := heldLog(t, storage.Options{})
	for i := range 3 {
		_, err := l.Append(storage.Record{Timestamp: fixedTS, Value: bytes.Repeat([]byte{byte('a' + i)}, 20000)})
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

// copySegment copies the .log at logPath and its two indexes into dir.
func copySegment(t *testing.T, logPath, dir string) {
	t.Helper()
	for _, suf := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		src := siblingPath(logPath, suf)
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o640))
	}
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

// dumpWalk dumps the first size bytes of the .log at logPath (segment
// 0), as if a writer were appending to it when live, through the reader
// that reader makes of the file (nil: the file); with --verify-index it
// checks the indexes as d.file does. It returns the problems, stdout and
// stderr.
func dumpWalk(t *testing.T, logPath string, size int64, live bool, o dumpOptions, reader func(*os.File) io.ReaderAt) (int, string, string) {
	t.Helper()
	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	var r io.ReaderAt = f
	if reader != nil {
		r = reader(f)
	}
	var lf *os.File
	if live {
		lf = f
	}
	var chk *index.Checker
	if o.verifyIndex && !live {
		chk = loadIndexChecker(logPath, 0, size)
	}
	d, out, errOut := testDumper(o, func() {})
	end := d.log(d.newLogWalk(r, size, logPath, lf), 0, true, chk)
	if chk != nil {
		d.indexCheckResult(chk, logPath, chk.Finish(end))
	}
	if o.verifyIndex && live {
		d.liveIndexCheck(f, logPath, 0, end, true, liveIndexChecks)
	}
	require.NoError(t, d.w.Flush())
	return d.problems, out.String(), errOut.String()
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
		wantStderr []string
	}{
		{name: "past the end, completes", completes: true, batches: 4, wantStderr: []string{"a writer was appending"}},
		{name: "into zeros, completes", prealloc: true, completes: true, batches: 4, wantStderr: []string{"a writer was appending"}},
		{name: "past the end, stays torn", problems: true, batches: 3, wantStderr: []string{"runs past the end of the file (70252) (a writer holds the partition: dump read the end of the file again 3 times, 20ms apart;"}},
		{name: "into zeros, stays torn", prealloc: true, problems: true, batches: 4, wantStderr: []string{"checksum mismatch", "(a writer holds the partition: dump read the end of the file again 3 times, 20ms apart;"}},
		{name: "garbage past the batch in flight", prealloc: true, completes: true, garbageAt: 1000, problems: true, batches: 4, wantStderr: []string{"unknown version", "a writer holds the partition"}},
		{name: "nobody holds it", completes: true, unheld: true, problems: true, batches: 3, wantStderr: []string{"runs past the end of the file (70252)\n"}},
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
			for _, want := range tc.wantStderr {
				assert.Contains(t, errOut.String(), want)
			}
			if !tc.completes {
				assert.NotContains(t, errOut.String(), "a writer was appending", "no note where nothing became whole")
			}
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
		pauses     int
	}{
		{name: "relative", path: base, chdir: p.dir, pauses: 1},
		{name: "dot-dot", path: filepath.Join("..", filepath.Base(p.dir), base), chdir: p.dir, pauses: 1},
		{name: "symlink", path: filepath.Join(link, base), pauses: 1},
		{name: "dot-dot from a linked working directory", path: "../" + filepath.Base(p.dir) + "/" + base, chdir: link, pauses: 1},
		{name: "index file", path: filepath.Join(link, strings.TrimSuffix(base, segment.LogSuffix)+segment.IndexSuffix), pauses: 1},
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
			assert.Equal(t, tc.pauses, pauses)
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
		n, _, stderr := dumpWalk(t, logPath, read, live, dumpOptions{verifyIndex: true}, nil)
		return n, stderr
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

	// An entry of the batch appended later that points into it, not at
	// its start, is damage: the batch is in the file when dump checks.
	b = encodeIndex(t, []index.OffsetPosition{{Offset: 1, Position: 0}, {Offset: 2, Position: 0}, {Offset: 3, Position: read + 5}}, segs[0].Path)
	require.NoError(t, os.WriteFile(idxPath, b, 0o640))
	n, stderr = check(true)
	assert.Equal(t, 1, n, stderr)
	assert.Contains(t, stderr, "entry 2 {offset 3, position")
}

// encodeIndex returns the offset index of the segment whose .log is
// logPath (base offset 0) with the entries given; an entry at position 0
// takes the position of its offset's batch.
func encodeIndex(t *testing.T, entries []index.OffsetPosition, logPath string) []byte {
	t.Helper()
	data, err := os.ReadFile(logPath)
	require.NoError(t, err)
	at := map[int64]int64{}
	sc := segment.ScanBuffer(data, segment.ScanOptions{})
	for sc.Next() {
		at[sc.Header().BaseOffset] = sc.Pos()
	}
	b := make([]byte, len(entries)*index.OffsetEntrySize)
	for i, e := range entries {
		pos := e.Position
		if pos == 0 {
			pos = at[e.Offset]
		}
		binary.BigEndian.PutUint32(b[i*index.OffsetEntrySize:], uint32(e.Offset))
		binary.BigEndian.PutUint32(b[i*index.OffsetEntrySize+4:], uint32(pos))
	}
	return b
}

// A time-index entry the writer is storing while dump reads the index
// (two stores that a page fault can part: the timestamp is there, the
// offset not yet) is no damage: the check is done again after a pause,
// and reported only if it stays.
func TestDumpBesideWriterTornTimeEntry(t *testing.T) {
	for _, stays := range []bool{false, true} {
		t.Run(fmt.Sprintf("stays=%v", stays), func(t *testing.T) {
			l, _ := heldLog(t, storage.Options{IndexIntervalBytes: 1})
			for i := range 3 {
				_, err := l.Append(storage.Record{Timestamp: fixedTS + int64(i), Value: []byte("v")})
				require.NoError(t, err)
			}
			segs, err := l.Segments()
			require.NoError(t, err)
			logPath := segs[0].Path
			tidx := siblingPath(logPath, segment.TimeIndexSuffix)
			at := firstZeroEntry(t, tidx, index.TimeEntrySize)
			require.Greater(t, at, int64(index.TimeEntrySize), "the segment has time entries")
			whole, err := os.ReadFile(tidx)
			require.NoError(t, err)
			last := slices.Clone(whole[at-index.TimeEntrySize : at])
			clear(whole[at-index.TimeEntrySize+8 : at]) // the last entry's offset not stored yet
			require.NoError(t, os.WriteFile(tidx, whole, 0o640))
			pauses := 0
			d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {
				if pauses++; pauses == 1 && !stays {
					writeAt(t, tidx, last, at-index.TimeEntrySize)
				}
			})
			d.file(logPath)
			require.NoError(t, d.w.Flush())
			if stays {
				assert.Equal(t, liveIndexChecks-1, pauses)
				assert.NotZero(t, d.problems, "damage that stays")
				return
			}
			assert.Equal(t, 1, pauses)
			assert.Zero(t, d.problems, errOut.String())
		})
	}
}

// Dumps of the newest segment of a partition while a producer appends
// batches of 20 KB records to it (rolling segments of 4 MiB): none reports
// damage.
func TestDumpBesideProducer(t *testing.T) {
	l, data := heldLog(t, storage.Options{SegmentBytes: 4 << 20})
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

// firstZeroEntry returns the byte position of the first all-zero entry of
// an index file (entries of size n).
func firstZeroEntry(t *testing.T, path string, n int) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for i := 0; i+n <= len(b); i += n {
		if bytes.Equal(b[i:i+n], make([]byte, n)) {
			return int64(i)
		}
	}
	t.Fatalf("%s: no zero entry", path)
	return 0
}

// Beside a writer, an index entry past the data of the newest segment is
// damage when no writer can have left it: the walk read zeros after the
// data (the writer had not written there when dump read the index), or the
// entry is past the end of the file. The same files where nobody holds
// them are the control.
func TestDumpBesideWriterBogusIndexEntry(t *testing.T) {
	for _, kind := range []string{"offset index", "time index", "offset index, no zero tail", "time index, no zero tail"} {
		t.Run(kind, func(t *testing.T) {
			p := newHeldPartition(t)
			if !strings.Contains(kind, "no zero tail") {
				// The writer's preallocated tail (as TestDumpBesideWriter makes it).
				writeAt(t, p.logPath, make([]byte, 256<<10), p.size)
			}
			if strings.HasPrefix(kind, "offset") {
				idx := siblingPath(p.logPath, segment.IndexSuffix)
				at := firstZeroEntry(t, idx, index.OffsetEntrySize)
				e := make([]byte, index.OffsetEntrySize)
				pos := uint32(p.size + 1000) // inside the zeros
				if strings.Contains(kind, "no zero tail") {
					pos = uint32(p.size + 10<<20) // 10 MB past the end of the file
				}
				binary.BigEndian.PutUint32(e[0:], 9) // offset 9; the data ends at 3
				binary.BigEndian.PutUint32(e[4:], pos)
				writeAt(t, idx, e, at)
			} else {
				tidx := siblingPath(p.logPath, segment.TimeIndexSuffix)
				at := firstZeroEntry(t, tidx, index.TimeEntrySize)
				e := make([]byte, index.TimeEntrySize)
				binary.BigEndian.PutUint64(e[0:], fixedTS+99)
				binary.BigEndian.PutUint32(e[8:], 9)
				writeAt(t, tidx, e, at)
			}
			// Control: the same files where nobody holds them.
			cp := filepath.Join(t.TempDir(), "orders-0")
			require.NoError(t, os.MkdirAll(cp, 0o750))
			copySegment(t, p.logPath, cp)
			r := seglog(t, "", "dump", "--verify-index", filepath.Join(cp, filepath.Base(p.logPath)))
			require.Equal(t, 1, r.code, "unheld copy: %s", r.stderr)

			r = seglog(t, "", "dump", "--verify-index", p.logPath)
			assert.Equal(t, 1, r.code, "held: the bogus entry must be reported; stderr: %q", r.stderr)
		})
	}
}

// A directory in a held data root that is not one of its partitions (an
// operator's copy, orders-0.bak) is not held: nothing there is set aside.
func TestDumpCopyInHeldRootIsNotLive(t *testing.T) {
	p := newHeldPartition(t)
	root := filepath.Dir(p.dir)
	cp := filepath.Join(root, "orders-0.bak")
	require.NoError(t, os.MkdirAll(cp, 0o750))
	copySegment(t, p.logPath, cp)
	idx := filepath.Join(cp, filepath.Base(siblingPath(p.logPath, segment.IndexSuffix)))
	at := firstZeroEntry(t, idx, index.OffsetEntrySize)
	e := make([]byte, index.OffsetEntrySize)
	binary.BigEndian.PutUint32(e[0:], 9)
	binary.BigEndian.PutUint32(e[4:], uint32(p.size+10<<20))
	writeAt(t, idx, e, at)
	d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {})
	cpLog := filepath.Join(cp, filepath.Base(p.logPath))
	d.file(cpLog)
	require.NoError(t, d.w.Flush())
	held, appending := d.liveness(cpLog, 0, true)
	assert.False(t, held, "nobody holds %s", cp)
	assert.False(t, appending)
	assert.Equal(t, 1, d.problems, "stderr: %q", errOut)
}

// faultyAt fails one read: the one at off (a bad sector under the last
// batch of the newest segment).
type faultyAt struct {
	f   *os.File
	off int64
}

func (r faultyAt) ReadAt(p []byte, off int64) (int, error) {
	if off == r.off {
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: syscall.EIO}
	}
	return r.f.ReadAt(p, off)
}

// An I/O error reading the body of the last batch of the newest segment
// (its header came from the scanner's read-ahead window) is read again
// from that batch's start, not from past it: the batch is printed once it
// reads, or reported.
func TestDumpBesideWriterReadErrorInBatch(t *testing.T) {
	l, _ := heldLog(t, storage.Options{})
	// Batches of ~20 KB until one straddles the 256 KiB read-ahead window.
	var last int64
	for {
		segs, err := l.Segments()
		require.NoError(t, err)
		size := segs[len(segs)-1].Size
		if size > 256<<10 {
			break
		}
		last = size
		_, err = l.Append(storage.Record{Timestamp: fixedTS, Value: bytes.Repeat([]byte{'v'}, 20000)})
		require.NoError(t, err)
	}
	require.Less(t, last+segment.HeaderSize, int64(256<<10), "the last batch's header is in the first window")
	segs, err := l.Segments()
	require.NoError(t, err)
	logPath, size := segs[len(segs)-1].Path, segs[len(segs)-1].Size

	run := func(live bool) (int, string, string) {
		return dumpWalk(t, logPath, size, live, dumpOptions{}, func(f *os.File) io.ReaderAt { return faultyAt{f: f, off: last} })
	}
	n, _, stderr := run(false)
	require.Equal(t, 1, n, "nobody appending: the read error is reported: %s", stderr)
	require.Contains(t, stderr, "input/output error")

	n, out, stderr := run(true)
	printed := strings.Count(out, "baseOffset:")
	t.Logf("live: %d problems, %d batches printed of %d, stderr %q", n, printed, l.EndOffset(), stderr)
	assert.True(t, n > 0 || printed == int(l.EndOffset()), "live: the batch at %d that could not be read is neither printed nor reported", last)
}

// A checksum mismatch in the middle of the newest .log of a held
// partition, followed by whole batches (so it is not in flight), is read
// again once, without a pause: a run of damaged batches does not make
// dump sleep 0.5 s for each.
func TestDumpBesideWriterDamagedBatchesReadAgainOnce(t *testing.T) {
	l, _ := heldLog(t, storage.Options{})
	const n = 40
	for range n + 1 {
		_, err := l.Append(storage.Record{Timestamp: fixedTS, Value: bytes.Repeat([]byte{'v'}, 100)})
		require.NoError(t, err)
	}
	segs, err := l.Segments()
	require.NoError(t, err)
	logPath := segs[len(segs)-1].Path
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	// Flip the last byte of each of the first n batches.
	sc := segment.ScanBuffer(b, segment.ScanOptions{})
	i := 0
	for sc.Next() && i < n {
		b[sc.End()-1] ^= 0xff
		i++
	}
	writeAt(t, logPath, b, 0)

	pauses := 0
	d, _, errOut := testDumper(dumpOptions{}, func() { pauses++ })
	d.liveTries = 0 // the default, liveRereads
	d.file(logPath)
	require.NoError(t, d.w.Flush())
	require.Equal(t, n, d.problems, errOut.String())
	assert.NotContains(t, errOut.String(), "a writer holds", "damage that whole batches follow is damage")
	assert.NotContains(t, errOut.String(), "a writer was appending", "nothing became whole")
	t.Logf("%d pauses of %v: %v of sleep for %d damaged batches", pauses, liveRereadGap, liveRereadGap*time.Duration(pauses), n)
	assert.LessOrEqual(t, pauses, 2*liveRereads, "rereads of damage that whole batches follow")
}

// rollingFS runs hook once, at the first ReadDir of dir: the writer rolls
// between dump's stat of the .log and its listing of the directory.
type rollingFS struct {
	vfs.FS
	dir  string
	hook func()
}

func (r *rollingFS) ReadDir(name string) ([]os.DirEntry, error) {
	if r.hook != nil && filepath.Clean(name) == r.dir {
		h := r.hook
		r.hook = nil
		h()
	}
	return r.FS.ReadDir(name)
}

// dump asks whether a writer may be appending to a .log (appending:
// ListPartition) before it reads its size: a writer that appends a batch
// and rolls in between leaves a segment whose index entry of that batch
// is past the size dump read, and that is no damage.
func TestDumpBesideWriterRollBeforeSize(t *testing.T) {
	l, _ := heldLog(t, storage.Options{})
	for i := range 3 {
		_, err := l.Append(storage.Record{Timestamp: fixedTS, Value: bytes.Repeat([]byte{byte('a' + i)}, 20000)})
		require.NoError(t, err)
	}
	segs, err := l.Segments()
	require.NoError(t, err)
	logPath := segs[len(segs)-1].Path
	dir, _ := vfs.RealPath(filepath.Dir(logPath))

	old := vfs.Default
	t.Cleanup(func() { vfs.Default = old })
	vfs.Default = &rollingFS{FS: old, dir: dir, hook: func() {
		_, err := l.Append(storage.Record{Timestamp: fixedTS, Value: bytes.Repeat([]byte{'d'}, 20000)})
		require.NoError(t, err)
		require.NoError(t, l.Roll())
	}}
	d, _, errOut := testDumper(dumpOptions{verifyIndex: true}, func() {})
	d.file(logPath)
	require.NoError(t, d.w.Flush())
	assert.Zero(t, d.problems, "a writer appended and rolled while dump read: %s", errOut)
}

// "." inside a partition reached through a symbolic link (a shell's cd
// keeps $PWD, which os.Getwd and so filepath.Abs return) is the partition,
// named by the directory's name, not the link's.
func TestDotThroughSymlinkIsThePartition(t *testing.T) {
	p := newHeldPartition(t)
	link := filepath.Join(t.TempDir(), "current")
	require.NoError(t, os.Symlink(p.dir, link))
	t.Chdir(link) // sets PWD=link, as `cd current` does
	r := seglog(t, "", "dump", "--dir", ".")
	assert.Equal(t, 0, r.code, r.stderr)
	r = seglog(t, "", "verify", ".")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "orders-0: 1 segment, 3 batches", r.stdout)
}
