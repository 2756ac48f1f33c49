package index

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestConcurrentAppendLookup runs readers beside one writer (run it with
// -race): every entry a reader sees is complete and where it belongs.
func TestConcurrentAppendLookup(t *testing.T) {
	const n = 20000
	ox := openOffset(t, tempPath(t, "00.index"), Options{Writable: true})
	tx := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true})
	var done atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Int64
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := r; !done.Load(); k += 7 {
				l := ox.Len()
				if l > 0 && ox.Entry(l-1) != offsetEntry(l-1) {
					bad.Add(1)
				}
				i := k % n
				target := offsetEntry(i).Offset + 3
				got := ox.Lookup(target)
				if l2 := ox.Len(); got.Position != 0 {
					j := int(got.Position/4096) - 1
					if got != offsetEntry(j) || j > i || j >= l2 {
						bad.Add(1)
					}
				}
				if e, ok := ox.Last(); ok && e != offsetEntry(int(e.Position/4096)-1) {
					bad.Add(1)
				}
				if e, ok := tx.Lookup(timeEntry(i).Timestamp); ok && e != timeEntry(int(e.Offset-testBase)/10-1) {
					bad.Add(1)
				}
			}
		}()
	}
	for i := range n {
		oe, te := offsetEntry(i), timeEntry(i)
		if !assert.NoError(t, ox.Append(oe.Offset, oe.Position)) || !assert.NoError(t, tx.Append(te.Timestamp, te.Offset)) {
			break
		}
	}
	done.Store(true)
	wg.Wait()
	assert.Zero(t, bad.Load())
	assert.Equal(t, n, ox.Len())
	assert.Equal(t, n, tx.Len())
}
