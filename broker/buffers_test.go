package broker

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// getN reads a request body of n bytes into a buffer of p.
func getN(t *testing.T, p *bufferPool, n int) []byte {
	t.Helper()
	b, err := p.read(bytes.NewReader(make([]byte, n)), n)
	require.NoError(t, err)
	return b
}

func TestBufferPoolSizeClassesHoldEveryRequestOfTheirSize(t *testing.T) {
	for _, tc := range []struct {
		n, capacity int
	}{
		{minPooled, minPooled},
		{minPooled + 1, 2 * minPooled},
		{1_000_000, 1 << 20},
		{1 << 20, 1 << 20},
		{1<<20 + 1, 2 << 20},
		{maxPooled, maxPooled},
	} {
		var p bufferPool
		b := getN(t, &p, tc.n)
		assert.Len(t, b, tc.n)
		assert.Equal(t, tc.capacity, cap(b), "request of %d bytes", tc.n)
	}
}

func TestBufferPoolReusesAFreedBufferForARequestOfItsClass(t *testing.T) {
	var p bufferPool
	b := getN(t, &p, 1_000_000)
	b[0] = 7
	p.put(b)
	again := getN(t, &p, 1_040_000) // another batch, a few bytes longer
	require.Len(t, again, 1_040_000)
	assert.Same(t, &b[0], &again[0], "the freed buffer is reused")
	assert.Zero(t, p.held)
	other := getN(t, &p, 1_000_000)
	assert.NotSame(t, &b[0], &other[0], "a buffer is handed out once")
}

func TestBufferPoolKeepsItsBuffersThroughGarbageCollections(t *testing.T) {
	var p bufferPool
	b := getN(t, &p, 1<<20)
	p.put(b)
	runtime.GC()
	runtime.GC()
	again := getN(t, &p, 1<<20)
	assert.Same(t, &b[0], &again[0])
}

func TestBufferPoolLeavesToTheCollector(t *testing.T) {
	for _, tc := range []struct {
		name string
		buf  []byte
	}{
		{"a small buffer", make([]byte, minPooled-1)},
		{"a buffer over the largest class", make([]byte, maxPooled+1)},
		{"a buffer not of a size class", make([]byte, 100_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p bufferPool
			p.put(tc.buf)
			assert.Zero(t, p.held)
		})
	}
	t.Run("buffers over the bound", func(t *testing.T) {
		var p bufferPool
		var bufs [][]byte
		for range pooledBytes/maxPooled + 1 {
			bufs = append(bufs, getN(t, &p, maxPooled))
		}
		for _, b := range bufs {
			p.put(b)
		}
		assert.Equal(t, pooledBytes, p.held)
	})
	t.Run("small requests", func(t *testing.T) {
		var p bufferPool
		b := getN(t, &p, 100)
		assert.Equal(t, 100, cap(b))
	})
}

func TestServerReleasesItsPooledBuffersWhenItStops(t *testing.T) {
	for _, stop := range []struct {
		name string
		stop func(s *Server) error
	}{
		{"Shutdown", func(s *Server) error { return s.Shutdown(context.Background()) }},
		{"Close", (*Server).Close},
	} {
		t.Run(stop.name, func(t *testing.T) {
			b := startBroker(t, t.TempDir(), Options{})
			createTopic(t, b, "pooled", 1, nil)
			got := produce(t, b.client(), "pooled", 1, map[int32][]byte{0: largeBatch(t, 1<<20)})
			require.Zero(t, got[0].ErrorCode)
			srv := b.srv
			require.Eventually(t, func() bool {
				srv.buffers.mu.Lock()
				defer srv.buffers.mu.Unlock()
				return srv.buffers.held > 0
			}, 10*time.Second, time.Millisecond, "the produce request's buffer is kept for the next (once answered)")
			require.NoError(t, stop.stop(srv))
			srv.buffers.mu.Lock()
			defer srv.buffers.mu.Unlock()
			assert.Zero(t, srv.buffers.held)
			for _, class := range srv.buffers.free {
				assert.Empty(t, class)
			}
		})
	}
}
