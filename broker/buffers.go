package broker

import (
	"io"
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

// capacity is the capacity of a buffer of n bytes: its size class's, or
// n outside the classes.
func capacity(n int) int {
	if n < minPooled || n > maxPooled {
		return n
	}
	return minPooled << sizeClass(n)
}

// reuse returns a free buffer of n bytes, or nil. Its contents are
// whatever the last request left: the caller overwrites them.
func (p *bufferPool) reuse(n int) []byte {
	if n < minPooled || n > maxPooled {
		return nil
	}
	c := sizeClass(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	k := len(p.free[c])
	if k == 0 {
		return nil
	}
	b := p.free[c][k-1]
	p.free[c][k-1] = nil
	p.free[c] = p.free[c][:k-1]
	p.held -= cap(b)
	return b[:n]
}

// read reads a request body of n bytes from r into a buffer: a free one
// of its class when there is one (memory already held), else a new one
// that grows as the bytes arrive, from minPooled, doubling up to its
// class's capacity. What a connection allocates thus follows what its
// client sent (at most twice as much), never only the size it announced:
// a client that announces the largest request allowed and sends a few
// bytes, or nothing, costs the server minPooled bytes, not the limit.
// The copies of growing come only with a new buffer (a server that
// serves requests of a size all the time reuses its buffers), and add up
// to less than n.
func (p *bufferPool) read(r io.Reader, n int) ([]byte, error) {
	b := p.reuse(n)
	if b == nil && n <= minPooled {
		b = make([]byte, n)
	}
	if b != nil {
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	b = make([]byte, 0, minPooled)
	for {
		m, err := io.ReadFull(r, b[len(b):min(n, cap(b))])
		b = b[:len(b)+m]
		if err != nil {
			return nil, err
		}
		if len(b) == n {
			return b, nil
		}
		grown := make([]byte, len(b), min(2*cap(b), capacity(n)))
		copy(grown, b)
		b = grown
	}
}

// put gives a buffer from read back once nothing refers to it. A buffer
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

// release lets the collector have every free buffer: a server that
// stopped keeps none (its connections are gone, so nothing is put back).
func (p *bufferPool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = [numClasses][][]byte{}
	p.held = 0
}
