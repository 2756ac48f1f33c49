package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOpenAfterCrash opens a log whose clean-shutdown marker is gone
// (a crash) with its recovery point at the end: the open rescans the last
// segment and checks that the sealed segments below it follow on.
func BenchmarkOpenAfterCrash(b *testing.B) {
	const size = 64 << 20
	batch := encodedBatch(b, 100, 1024)
	for _, segs := range []int{1, 100} { // segments of the data: 1, 50
		dir := b.TempDir()
		opts := Options{SegmentBytes: 2 * size / int64(segs)} // the data fills half of them
		fillLog(b, dir, batch, size, opts)
		b.Run(fmt.Sprintf("recovery-point-at-end/segments=%d", segs), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				_ = os.Remove(filepath.Join(dir, cleanShutdownFile))
				b.StartTimer()
				l, err := Open(dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if l.OpenStats().Clean {
					b.Fatal("the open took the log as clean")
				}
				_ = l.Close()
				b.StartTimer()
			}
		})
	}
}
