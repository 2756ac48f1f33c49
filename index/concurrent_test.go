package index

import (
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
	var bad atomic.Int64
	runReaders(4, func(r int, stopped func() bool) {
		for k := r; !stopped(); k += 7 {
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
	}, func() {
		for i := range n {
			oe, te := offsetEntry(i), timeEntry(i)
			if !assert.NoError(t, ox.Append(oe.Offset, oe.Position)) || !assert.NoError(t, tx.Append(te.Timestamp, te.Offset)) {
				break
			}
		}
	})
	assert.Zero(t, bad.Load())
	assert.Equal(t, n, ox.Len())
	assert.Equal(t, n, tx.Len())
}
