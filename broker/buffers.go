package broker

import (
	"math/bits"
	"sync"
)

// The buffers that requests are read into. A produce request's records
// go to Log.AppendBatch straight from the buffer its body was read into
// (kmsg's decoder slices the records out of it, it does not copy them),
// and nothing of a produce request outlives its answer, so the buffer
// comes back here once the request is answered and the next request of
// about the same size is read into it: no allocation, no zeroing, no
// garbage for the collector per request.
//
// Buffers come in power-of-two size classes from minPooled to maxPooled,
// so that a buffer fits every request of its class (clients' batches
// differ by a few bytes from one to the next). What is kept is bounded by
// bytes, and does not depend on the garbage collector: a sync.Pool is
// emptied by every other collection, which a client in the same process
// (or any garbage of the server's) causes every few requests. Requests
// below minPooled are allocated as they come (they are small, and other
// handlers keep slices of theirs); above maxPooled too.

const (
	minPooled = 64 << 10
	maxPooled = 16 << 20
	// pooledBytes bounds the bytes that free buffers hold: an idle
	// server keeps at most this much of what its busiest moment needed.
	pooledBytes = 32 << 20
	numClasses  = 9 // minPooled << 8 == maxPooled
)

// bufferPool is the server's free request buffers.
type bufferPool struct {
	mu   sync.Mutex // guards free and held
	free [numClasses][][]byte
	held int // bytes of the buffers in free
}

// sizeClass is the class whose buffers hold n bytes, for minPooled <= n
// <= maxPooled.
func sizeClass(n int) int {
	return bits.Len(uint((n - 1) / minPooled))
}

// get returns a buffer of n bytes, reused if one is free. Its contents
// are whatever the last request left: the caller overwrites them.
func (p *bufferPool) get(n int) []byte {
	if n < minPooled || n > maxPooled {
		return make([]byte, n)
	}
	c := sizeClass(n)
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		b := p.free[c][k-1]
		p.free[c][k-1] = nil
		p.free[c] = p.free[c][:k-1]
		p.held -= cap(b)
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return make([]byte, n, minPooled<<c)
}

// put gives a buffer from get back once nothing refers to it. A buffer
// not of a size class, or one over the bound, is left to the collector.
func (p *bufferPool) put(b []byte) {
	n := cap(b)
	if n < minPooled || n > maxPooled || n&(n-1) != 0 {
		return
	}
	c := sizeClass(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held+n > pooledBytes {
		return
	}
	p.free[c] = append(p.free[c], b[:0])
	p.held += n
}
