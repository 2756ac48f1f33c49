package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seglog/seglog/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A follower sees the writer's truncation: records it removed are gone,
// and the new leader's records at the same offsets are what it reads.
func TestReadOnlyFollowsTruncate(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 1 << 20, IndexIntervalBytes: 256}
	w := openFilled(t, dir, opts, 100, 1)
	r := openReadOnly(t, dir, opts)
	require.Equal(t, int64(100), r.EndOffset())
	require.NoError(t, w.Truncate(50))
	for i := 0; i < 60; i++ {
		_, err := w.Append(Record{Timestamp: 1, Value: []byte("new-leader")})
		require.NoError(t, err)
	}
	_, err := r.Refresh()
	require.NoError(t, err)
	assert.Equal(t, w.EndOffset(), r.EndOffset())
	rd := r.NewReader(50)
	require.True(t, rd.Next(), "%v", rd.Err())
	assert.Equal(t, "new-leader", string(rd.Record().Value))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	assert.NoError(t, r.Wait(ctx, 100))
}

// A follower sees the writer's deletions: its start offset moves, and a
// read below it is ErrOffsetOutOfRange, not a missing file.
func TestReadOnlyFollowsDeletion(t *testing.T) {
	dir := t.TempDir()
	w := openFilled(t, dir, small(), 400, 4)
	r := openReadOnly(t, dir, small())
	_, err := w.DeleteSegmentsBefore(300)
	require.NoError(t, err)
	_, err = r.Refresh()
	require.NoError(t, err)
	assert.Equal(t, w.StartOffset(), r.StartOffset())
	_, err = r.Read(0, 1000)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
	assert.Equal(t, int64(400), readAll(t, r, r.StartOffset()))
}

// The writer truncating and trimming the tail's index under a follower
// never faults the follower (its copy of a live index is its own).
func TestReadOnlyLiveIndexSurvivesWriterTrim(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 64 << 20, IndexIntervalBytes: 1, MaxIndexBytes: 1 << 20}
	w := openFilled(t, dir, opts, 4000, 1)
	r := openReadOnly(t, dir, opts)
	require.NoError(t, w.Truncate(5))
	require.NoError(t, w.Close())
	_, err := r.Refresh()
	require.NoError(t, err)
	b, err := r.Read(3, 100)
	require.NoError(t, err)
	assert.NotEmpty(t, b)
	assert.Equal(t, int64(5), r.EndOffset())
}

// A follower sees the writer's high watermark move.
func TestReadOnlyFollowsHighWatermark(t *testing.T) {
	dir := t.TempDir()
	w := openFilled(t, dir, small(), 10, 1)
	require.NoError(t, w.SetHighWatermark(5))
	require.NoError(t, w.Sync())
	r := openReadOnly(t, dir, small())
	assert.Equal(t, int64(5), r.HighWatermark())
	require.NoError(t, w.SetHighWatermark(10))
	require.NoError(t, w.Sync())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.WaitCommitted(ctx, 7))
	assert.Equal(t, int64(10), r.HighWatermark())
}

// ReadCommitted returns only whole batches below the high watermark.
func TestReadCommittedExcludesStraddlingBatch(t *testing.T) {
	w := openFilled(t, t.TempDir(), small(), 20, 10) // batches 0..9 and 10..19
	require.NoError(t, w.SetHighWatermark(15))
	b, err := w.ReadCommitted(nil, 0, 1<<20)
	require.NoError(t, err)
	h := mustHeader(t, b)
	assert.Equal(t, h.Size(), len(b), "only the first batch")
	assert.Equal(t, int64(9), h.LastOffset())
	b, err = w.ReadCommitted(nil, 10, 1<<20)
	require.NoError(t, err)
	assert.Empty(t, b, "the straddling batch waits for the mark")
}

// A clean-shutdown marker beside a manifest that a later clean shutdown
// did not rewrite (another build, a tool) is not trusted blindly: a
// segment past the manifest's last one sends the open back to listing.
func TestStaleManifestDetected(t *testing.T) {
	dir := t.TempDir()
	l := openFilled(t, dir, small(), 100, 5)
	require.NoError(t, l.Close())
	stale, err := os.ReadFile(filepath.Join(dir, manifestFile))
	require.NoError(t, err)
	l = openFilled(t, dir, small(), 300, 5) // rolls past the manifest's segments
	require.NoError(t, l.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, manifestFile), stale, 0o640))
	l = openLog(t, dir, small())
	assert.False(t, l.OpenStats().FromManifest)
	assertRecords(t, l, int64(400))
	fill(t, l, 5, 5)
}

// A truncation between ReadRegion and WriteTo is an error, never another
// leader's bytes.
func TestRegionAfterTruncate(t *testing.T) {
	l := openFilled(t, t.TempDir(), small(), 100, 5)
	reg, err := l.ReadRegion(50, 1000)
	require.NoError(t, err)
	require.NoError(t, l.Truncate(40))
	fill(t, l, 100, 5)
	var sink countWriter
	_, err = reg.WriteTo(&sink)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
}

// A truncation that deletes the follower's tail segment is followed too.
func TestReadOnlyFollowsTruncateAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	w := openFilled(t, dir, small(), 600, 5)
	r := openReadOnly(t, dir, small())
	require.NoError(t, w.Truncate(100))
	fill(t, w, 50, 5)
	_, err := r.Refresh()
	require.NoError(t, err)
	assertRecords(t, r, int64(150))
}

// A reader that opens between the writer's advance of the start offset and
// its removal of the files does not list the segments being deleted.
func TestReadOnlyOpenDuringDeletion(t *testing.T) {
	dir := t.TempDir()
	w := openFilled(t, dir, small(), 600, 5)
	segs, err := w.Segments()
	require.NoError(t, err)
	require.Greater(t, len(segs), 3)
	require.NoError(t, w.Close())
	// As a deletion that has written the start and removed no file yet.
	require.NoError(t, writeCheckpoint(vfs.Default, dir, logStartOffsetFile, segs[2].BaseOffset, 0o640))

	r := openReadOnly(t, dir, small())
	assert.Equal(t, segs[2].BaseOffset, r.StartOffset())
	got, err := r.Segments()
	require.NoError(t, err)
	assert.Equal(t, segs[2].BaseOffset, got[0].BaseOffset)
	for _, s := range segs[:2] {
		removeSegmentFiles(t, dir, s.BaseOffset)
	}
	got, err = r.Segments()
	require.NoError(t, err, "the removed files were not in the reader's list")
	assert.Len(t, got, len(segs)-2)
	assert.Equal(t, int64(600), readAll(t, r, r.StartOffset()))
}

// A read-only store's partitions are followers: Store.Log and every write
// refuse with ErrReadOnly, Store.Follower reads what the writer wrote and
// follows what it appends after; a writable store has no followers.
func TestReadOnlyStoreHasFollowers(t *testing.T) {
	root := t.TempDir()
	w := openStore(t, root, StoreOptions{Log: small()})
	require.NoError(t, w.CreateTopic("orders", 1, TopicConfig{}))
	fill(t, partitionLog(t, w, "orders", 0), 30, 3)
	_, err := w.Follower("orders", 0)
	assert.ErrorIs(t, err, ErrInvalidOptions, "a writable store is read through Log")

	ro := small()
	ro.ReadOnly = true
	r := openStore(t, root, StoreOptions{Log: ro})
	_, err = r.Log("orders", 0)
	assert.ErrorIs(t, err, ErrReadOnly)
	_, err = r.Produce("orders", Record{Value: []byte("x")})
	assert.ErrorIs(t, err, ErrReadOnly)
	assert.ErrorIs(t, r.Sync(), ErrReadOnly)
	f, err := r.Follower("orders", 0)
	require.NoError(t, err)
	assertRecords(t, f, 30)

	fill(t, partitionLog(t, w, "orders", 0), 30, 3)
	moved, err := f.Refresh()
	require.NoError(t, err)
	assert.True(t, moved)
	assertRecords(t, f, 60)
	parts := r.OpenPartitions()
	require.Len(t, parts, 1)
	assert.Same(t, f, parts[0].Follower)
	assert.Nil(t, parts[0].Log)
	st, err := parts[0].Stats()
	require.NoError(t, err)
	assert.Equal(t, int64(60), st.EndOffset)
}
