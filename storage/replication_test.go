package storage

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

	"github.com/seglog/seglog/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// producerBatch encodes batch i of producer pid: n records whose values
// name the batch, sequences starting at seq.
func producerBatchBytes(t testing.TB, pid int64, epoch int16, seq int32, n int, tag string) []byte {
	recs := make([]Record, n)
	for j := range recs {
		recs[j] = Record{Timestamp: 1_700_000_000_000, Value: []byte(fmt.Sprintf("%s-r%d", tag, j))}
	}
	b, err := segment.AppendBatch(nil, recs, segment.EncodeOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq})
	require.NoError(t, err)
	return b
}

func TestIdempotentDuplicates(t *testing.T) {
	dir := t.TempDir()
	opts := small()
	l := openLog(t, dir, opts)
	var results []AppendResult
	for i := 0; i < 40; i++ {
		res, err := l.AppendBatch(producerBatchBytes(t, 7, 0, int32(i*3), 3, fmt.Sprint("b", i)+strings.Repeat("x", 100)))
		require.NoError(t, err)
		assert.False(t, res.Duplicate)
		results = append(results, res)
		fill(t, l, 5, 5) // interleave other writers' records
	}
	segs, _ := l.Segments()
	require.Greater(t, len(segs), 2, "rolled")
	end := l.EndOffset()
	check := func(l *Log) {
		for i := 35; i < 40; i++ { // the last five batches are remembered
			res, err := l.AppendBatch(producerBatchBytes(t, 7, 0, int32(i*3), 3, fmt.Sprint("b", i)+strings.Repeat("x", 100)))
			require.NoError(t, err)
			assert.True(t, res.Duplicate, "batch %d", i)
			assert.Equal(t, results[i].FirstOffset, res.FirstOffset)
			assert.Equal(t, results[i].LastOffset, res.LastOffset)
		}
		assert.Equal(t, end, l.EndOffset(), "a duplicate writes nothing")
		_, err := l.AppendBatch(producerBatchBytes(t, 7, 0, 3*30, 3, "old"))
		assert.ErrorIs(t, err, ErrOutOfOrderSequence, "older than the last five: not a known duplicate")
	}
	check(l)
	require.NoError(t, l.Close())
	l = openLog(t, dir, opts) // clean reopen: from the snapshot
	check(l)
	crashed := filepath.Join(t.TempDir(), "crashed")
	copyDir(t, dir, crashed) // while open: the state a crash leaves
	require.NoError(t, l.Close())
	// A damaged newest snapshot is ignored and the state rebuilt from the log.
	offs, err := snapshotOffsets(l.opts.FS, crashed)
	require.NoError(t, err)
	require.NotEmpty(t, offs)
	newest := filepath.Join(crashed, segment.FileName(offs[len(offs)-1], snapshotSuffix))
	b, err := os.ReadFile(newest)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(newest, b, 0o640))
	l = openLog(t, crashed, opts)
	assert.False(t, l.OpenStats().Clean)
	check(l)
}

func TestIdempotentSequenceAndFencing(t *testing.T) {
	l := openLog(t, t.TempDir(), small())
	_, err := l.AppendBatch(producerBatchBytes(t, 1, 2, 0, 2, "a")) // seq 0-1, epoch 2
	require.NoError(t, err)
	cases := []struct {
		name  string
		epoch int16
		seq   int32
		want  error
	}{
		{"gap", 2, 5, ErrOutOfOrderSequence},
		{"overlap not equal", 2, 1, ErrOutOfOrderSequence},
		{"fenced", 1, 2, ErrProducerFenced},
		{"new epoch not at 0", 3, 4, ErrOutOfOrderSequence},
		{"next", 2, 2, nil},
		{"new epoch at 0", 3, 0, nil},
		{"old epoch after bump", 2, 4, ErrProducerFenced},
	}
	for _, tc := range cases {
		_, err := l.AppendBatch(producerBatchBytes(t, 1, tc.epoch, tc.seq, 2, tc.name))
		if tc.want == nil {
			assert.NoError(t, err, tc.name)
		} else {
			assert.ErrorIs(t, err, tc.want, tc.name)
		}
	}
	// Another producer and producer-less batches are independent.
	_, err = l.AppendBatch(producerBatchBytes(t, 2, 0, 100, 1, "other"))
	assert.NoError(t, err, "an unknown producer may start at any sequence")
	fill(t, l, 3, 1)
	assert.Equal(t, int64(2+2+2+1+3), l.EndOffset())
}

func TestProducerStateAfterTruncateAndDelete(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	opts := small()
	opts.Now = func() time.Time { return now }
	opts.ProducerExpiry = time.Hour
	l := openLog(t, t.TempDir(), opts)
	var res []AppendResult
	for i := 0; i < 4; i++ {
		r, err := l.AppendBatch(producerBatchBytes(t, 9, 0, int32(i), 1, fmt.Sprint(i)))
		require.NoError(t, err)
		res = append(res, r)
	}
	// Truncation drops the newer sequences: batch 3 is new again.
	require.NoError(t, l.Truncate(res[3].FirstOffset))
	r, err := l.AppendBatch(producerBatchBytes(t, 9, 0, 3, 1, "3"))
	require.NoError(t, err)
	assert.False(t, r.Duplicate)
	assert.Equal(t, res[3].FirstOffset, r.FirstOffset)
	r, err = l.AppendBatch(producerBatchBytes(t, 9, 0, 2, 1, "2"))
	require.NoError(t, err)
	assert.True(t, r.Duplicate, "batch 2 survived the truncation")

	// Producer 9's batches all deleted: kept until the expiry passes.
	fill(t, l, 600, 10)
	del := func() {
		require.NoError(t, l.Roll())
		_, err := l.DeleteSegmentsBefore(l.EndOffset())
		require.NoError(t, err)
	}
	del()
	require.Greater(t, l.StartOffset(), res[3].LastOffset)
	_, err = l.AppendBatch(producerBatchBytes(t, 9, 0, 10, 1, "gap"))
	assert.ErrorIs(t, err, ErrOutOfOrderSequence, "state kept before the expiry")
	now = now.Add(2 * time.Hour)
	del()
	_, err = l.AppendBatch(producerBatchBytes(t, 9, 0, 10, 1, "gap"))
	assert.NoError(t, err, "expired: an unknown producer again")
}

// TestIdempotentCrashRetries kills a child that appends producer batches
// with SyncAlways; after each restart it retries every batch the parent
// did not see acknowledged. The log must end with every batch exactly
// once, in order.
func TestIdempotentCrashRetries(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	next := 0 // first batch not acknowledged
	for round := 0; round < 12; round++ {
		killChildAfter(t, "SEGLOG_IDEMPOTENT_DIR="+dir, time.Duration(30+rng.IntN(120))*time.Millisecond, func(f []string) {
			i, _ := strconv.Atoi(f[1])
			require.Equal(t, next, i, "acknowledged in order")
			next++
		}, "SEGLOG_IDEMPOTENT_FROM="+strconv.Itoa(next))
	}
	l := openLog(t, dir, crashOpts())
	// Finish: retry from the first unacknowledged batch once more.
	for i := next; i < next+3; i++ {
		_, err := l.AppendBatch(idemBatch(i))
		require.NoError(t, err)
	}
	r := l.NewReader(0)
	want := 0
	for r.Next() {
		b, j := 0, 0
		_, err := fmt.Sscanf(string(r.Record().Value), "batch-%d-r%d", &b, &j)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("batch-%d-r%d", want/4, want%4), string(r.Record().Value), "every batch exactly once, in order")
		want++
	}
	require.NoError(t, r.Err())
	assert.Equal(t, (next+3)*4, want)
	assert.Greater(t, next, 50, "the child made progress")
}

func idemBatch(i int) []byte {
	recs := make([]Record, 4)
	for j := range recs {
		recs[j] = Record{Timestamp: 1_700_000_000_000, Value: []byte(fmt.Sprintf("batch-%d-r%d", i, j))}
	}
	b, _ := segment.AppendBatch(nil, recs, segment.EncodeOptions{ProducerID: 42, BaseSequence: int32(i * 4)})
	return b
}

// idempotentChild appends batches from SEGLOG_IDEMPOTENT_FROM on, printing
// "ACK i" after each acknowledged (fsynced) one, until killed.
func idempotentChild(dir string) {
	from, _ := strconv.Atoi(os.Getenv("SEGLOG_IDEMPOTENT_FROM"))
	l, err := Open(dir, crashOpts())
	if err != nil {
		fmt.Println("OPEN-ERROR", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := from; ; i++ {
		if _, err := l.AppendBatch(idemBatch(i)); err != nil {
			fmt.Fprintln(out, "APPEND-ERROR", err)
			out.Flush()
			os.Exit(4)
		}
		fmt.Fprintln(out, "ACK", i)
		out.Flush()
	}
}

// replicate copies the leader's batches from offset on into the follower,
// as a broker's fetch does, keeping the leader's epoch stamps.
func replicate(t *testing.T, leader, follower *Log) {
	for follower.EndOffset() < leader.EndOffset() {
		data, err := leader.Read(follower.EndOffset(), 4096)
		require.NoError(t, err)
		for p := 0; p < len(data); {
			h := mustHeader(t, data[p:])
			res, err := follower.AppendBatch(append([]byte(nil), data[p:p+h.Size()]...))
			require.NoError(t, err)
			require.Equal(t, h.BaseOffset, res.FirstOffset, "the follower assigns the leader's offsets")
			p += h.Size()
		}
	}
}

func TestLeaderChange(t *testing.T) {
	a := openLog(t, t.TempDir(), small())
	b := openLog(t, t.TempDir(), small())

	// Epoch 1: A leads, B follows and catches up.
	require.NoError(t, a.SetLeaderEpoch(1))
	fill(t, a, 50, 5)
	replicate(t, a, b)
	require.NoError(t, a.SetHighWatermark(a.EndOffset()))
	// A appends more that B never gets, then A fails.
	fill(t, a, 13, 1)
	// Epoch 2: B leads and appends its own records.
	require.NoError(t, b.SetLeaderEpoch(2))
	for i := 0; i < 7; i++ {
		_, err := b.Append(Record{Timestamp: 5, Value: []byte(fmt.Sprint("from-b-", i))})
		require.NoError(t, err)
	}
	assert.Equal(t, []EpochEntry{{1, 0}, {2, 50}}, b.LeaderEpochs())

	// A comes back as a follower: it asks B for the end of its latest epoch.
	a.SetFollower()
	latest := a.LeaderEpochs()
	require.Equal(t, int32(1), latest[len(latest)-1].Epoch)
	ep, end, err := b.EndOffsetForEpoch(1)
	require.NoError(t, err)
	assert.Equal(t, int32(1), ep)
	assert.Equal(t, int64(50), end, "epoch 1 ends where epoch 2 starts on the leader")
	require.NoError(t, a.Truncate(end))
	assert.Equal(t, int64(50), a.EndOffset(), "exactly the divergent suffix goes, no more")
	assert.Equal(t, []EpochEntry{{1, 0}}, a.LeaderEpochs())
	replicate(t, b, a)
	assert.Equal(t, b.LeaderEpochs(), a.LeaderEpochs())

	// Both logs now hold the same batches, byte for byte.
	da, err := a.Read(0, 1<<20)
	require.NoError(t, err)
	db, err := b.Read(0, 1<<20)
	require.NoError(t, err)
	for off := int64(0); off < a.EndOffset(); off += 10 {
		x, err := a.Read(off, 1)
		require.NoError(t, err)
		y, err := b.Read(off, 1)
		require.NoError(t, err)
		require.Equal(t, x, y, "batch at %d", off)
	}
	assert.Equal(t, da[:min(len(da), len(db))], db[:min(len(da), len(db))])
	// An epoch below everything, and one above the latest.
	ep, end, err = b.EndOffsetForEpoch(0)
	require.NoError(t, err)
	assert.Equal(t, int32(-1), ep)
	assert.Equal(t, int64(-1), end)
	ep, end, err = b.EndOffsetForEpoch(9)
	require.NoError(t, err)
	assert.Equal(t, int32(2), ep)
	assert.Equal(t, b.EndOffset(), end)
	assert.ErrorIs(t, b.SetLeaderEpoch(1), ErrStaleEpoch)
}

func TestLeaderEpochsSurviveReopenAndTruncate(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, small())
	for e := int32(3); e <= 6; e++ {
		require.NoError(t, l.SetLeaderEpoch(e))
		fill(t, l, 10, 2)
	}
	want := []EpochEntry{{3, 0}, {4, 10}, {5, 20}, {6, 30}}
	assert.Equal(t, want, l.LeaderEpochs())
	require.NoError(t, l.Close())
	l = openLog(t, dir, small())
	assert.Equal(t, want, l.LeaderEpochs())
	require.NoError(t, l.Truncate(15))
	assert.Equal(t, want[:2], l.LeaderEpochs())
	require.NoError(t, l.Close())
	// A lost checkpoint is rebuilt from the batches.
	require.NoError(t, os.Remove(filepath.Join(dir, leaderEpochFile)))
	l = openLog(t, dir, small())
	assert.Equal(t, want[:2], l.LeaderEpochs())
}

func TestHighWatermark(t *testing.T) {
	dir := t.TempDir()
	l := openFilled(t, dir, small(), 100, 10)
	assert.Zero(t, l.HighWatermark())
	require.NoError(t, l.SetHighWatermark(60))
	assert.ErrorIs(t, l.SetHighWatermark(101), ErrOffsetOutOfRange, "never above the end")

	r := l.NewCommittedReader(0)
	n := 0
	for r.Next() {
		require.Less(t, r.Record().Offset, int64(60))
		n++
	}
	require.NoError(t, r.Err())
	assert.Equal(t, 60, n, "a committed reader stops at the high watermark")
	b, err := l.ReadCommitted(nil, 60, 1<<20)
	require.NoError(t, err)
	assert.Empty(t, b, "between the high watermark and the end: nothing, no error")

	done := make(chan error, 1)
	go func() { done <- l.WaitCommitted(context.Background(), 60) }()
	waitForWaiters(t, l, 1)
	requireBlocked(t, done, "WaitCommitted returned below the high watermark")
	require.NoError(t, l.SetHighWatermark(70))
	require.NoError(t, <-done, "raising the high watermark wakes committed waiters")
	assert.True(t, r.Next(), "the reader continues once it rises")

	require.NoError(t, l.Close())
	l = openLog(t, dir, small())
	assert.Equal(t, int64(70), l.HighWatermark(), "checkpointed at close")
	require.NoError(t, l.Truncate(40))
	assert.Equal(t, int64(40), l.HighWatermark(), "truncation below it lowers it")
	require.NoError(t, l.Close())
	l = openLog(t, dir, small())
	assert.Equal(t, int64(40), l.HighWatermark())
}
