package retention

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/stretchr/testify/require"
)

const (
	benchPartitions = 1000
	benchSegments   = 20
)

// benchTemplate builds one closed partition directory of benchSegments
// segments of one small record each ([0,1) ... [19,20), the last active).
func benchTemplate(b *testing.B) string {
	dir := filepath.Join(b.TempDir(), "template")
	l, err := storage.Open(dir, smallLog())
	require.NoError(b, err)
	fillSegments(b, l, benchSegments-1, 1, at(t0))
	_, err = l.Append(storage.Record{Timestamp: t0.UnixMilli(), Value: val(benchSegments - 1)})
	require.NoError(b, err)
	require.NoError(b, l.Close())
	return dir
}

// benchStore lays out benchPartitions copies of the template as topic
// "bench": sealed segment files are hard links (the cleaner only reads and
// unlinks them), the active segment and the checkpoints are copied.
func benchStore(b *testing.B, template string) string {
	root := b.TempDir()
	ents, err := os.ReadDir(template)
	require.NoError(b, err)
	active := int64(-1)
	for _, e := range ents {
		if base, suffix, ok := segmentFile(e.Name()); ok && suffix == segment.LogSuffix {
			active = max(active, base)
		}
	}
	for p := range benchPartitions {
		dir := filepath.Join(root, storage.PartitionDir("bench", int32(p)))
		require.NoError(b, os.Mkdir(dir, 0o750))
		for _, e := range ents {
			src, dst := filepath.Join(template, e.Name()), filepath.Join(dir, e.Name())
			if base, _, ok := segmentFile(e.Name()); ok && base != active && os.Link(src, dst) == nil {
				continue
			}
			copyFile(b, src, dst)
		}
	}
	return root
}

func copyFile(b *testing.B, src, dst string) {
	in, err := os.Open(src)
	require.NoError(b, err)
	defer in.Close()
	out, err := os.Create(dst)
	require.NoError(b, err)
	_, err = io.Copy(out, in)
	require.NoError(b, err)
	require.NoError(b, out.Close())
}

// BenchmarkRunOnce1000x20 is one RunOnce over 1,000 partitions of 20
// segments each that deletes half of them (every group has consumed the
// first 10 offsets, one per segment). Variants:
//
//   - warm: every log is open and has been listed once (by a dry run), as
//     in a broker whose cleaner has run before: the time is the deletions.
//   - cold: a store just opened: the run also opens the 1,000 logs and
//     every sealed segment (Log.Segments reads each one's time index for
//     MaxTimestamp).
//   - dry-warm: the dry run alone: listing and planning, no deletion.
//
// The time is RunOnce's: the start offsets are durable and the segments
// out of the logs when it returns; the store removes their files in the
// background. ms-until-freed is how long from the start of RunOnce until
// the last of them is gone (Store.WaitDeleted).
//
// b.TempDir follows TMPDIR, so TMPDIR=/dev/shm separates the cleaner's
// cost from the disk's.
func BenchmarkRunOnce1000x20(b *testing.B) {
	template := benchTemplate(b)
	cons := newFakeConsumed()
	for p := range benchPartitions {
		cons.set("bench", int32(p), benchSegments/2)
	}
	for _, v := range []struct {
		name      string
		warm, dry bool
	}{{"warm", true, false}, {"cold", false, false}, {"dry-warm", true, true}} {
		b.Run(v.name, func(b *testing.B) {
			var freed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s, err := storage.OpenStore(benchStore(b, template), storage.StoreOptions{Log: smallLog()})
				require.NoError(b, err)
				if v.warm {
					d, err := New(s, cons, Options{Default: Policy{Consumed: true}, DryRun: true})
					require.NoError(b, err)
					_, err = d.RunOnce(context.Background())
					require.NoError(b, err)
					require.NoError(b, d.Close())
				}
				c, err := New(s, cons, Options{Default: Policy{Consumed: true}, DryRun: v.dry})
				require.NoError(b, err)
				b.StartTimer()
				began := time.Now()

				rep, err := c.RunOnce(context.Background())

				b.StopTimer()
				require.NoError(b, s.WaitDeleted(context.Background()))
				freed += time.Since(began)
				require.NoError(b, err)
				require.Empty(b, rep.Failures)
				require.Equal(b, benchPartitions, rep.Partitions)
				require.Len(b, rep.Deletions, benchPartitions*benchSegments/2)
				b.ReportMetric(float64(len(rep.Deletions)), "segments/op")
				require.NoError(b, c.Close())
				require.NoError(b, s.Close())
				b.StartTimer()
			}
			if !v.dry {
				b.ReportMetric(float64(freed.Milliseconds())/float64(b.N), "ms-until-freed")
			}
		})
	}
}
