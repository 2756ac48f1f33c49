package storage

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentReadersWriterDeleteTruncate runs one writer, readers that
// follow the log with Wait, random-offset readers and zero-copy readers
// while segments are deleted from the front and the log is truncated. No
// reader may see a record whose value does not match its offset (a
// truncation rewrites offsets, so values are checked by their content
// only where they cannot have been rewritten), and every error must be
// ErrOffsetOutOfRange.
func TestConcurrentReadersWriterDeleteTruncate(t *testing.T) {
	l, err := Open(t.TempDir(), small())
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	var truncations atomic.Int64
	var reads atomic.Int64

	wg.Add(1)
	go func() { // writer, deleter, truncator
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			fill(t, l, 20, 4)
			switch {
			case i%25 == 24:
				require.NoError(t, l.Truncate(l.EndOffset()-13))
				truncations.Add(1)
			case i%10 == 9:
				_, err := l.DeleteSegmentsBefore(l.EndOffset() - 200)
				require.NoError(t, err)
			}
		}
	}()
	checkErr := func(err error) bool {
		if err == nil {
			return true
		}
		if errors.Is(err, ErrOffsetOutOfRange) || errors.Is(err, context.DeadlineExceeded) {
			return false
		}
		t.Errorf("unexpected error: %v", err)
		return false
	}
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() { // tailing readers
			defer wg.Done()
			r := l.NewReader(0)
			for ctx.Err() == nil {
				for r.Next() {
					rec := r.Record()
					// Values name the offset they were written at; after a
					// truncation the same offset is written again with the
					// same value, so the check holds throughout.
					assert.Equal(t, string(val(rec.Offset)), string(rec.Value))
					reads.Add(1)
				}
				if r.Err() != nil {
					if !checkErr(r.Err()) {
						r = l.NewReader(l.StartOffset())
					}
					continue
				}
				if !checkErr(l.Wait(ctx, r.Offset())) {
					continue
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // zero-copy readers at random offsets
		defer wg.Done()
		for ctx.Err() == nil {
			start, end := l.StartOffset(), l.EndOffset()
			if end <= start {
				continue
			}
			off := start + (end-start)/2
			reg, err := l.ReadRegion(off, 4096)
			if !checkErr(err) {
				continue
			}
			var sink countWriter
			_, err = reg.WriteTo(&sink)
			checkErr(err)
		}
	}()
	wg.Wait()
	assert.Positive(t, truncations.Load())
	assert.Positive(t, reads.Load())
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }
