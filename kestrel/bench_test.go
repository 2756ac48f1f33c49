package kestrel_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/kestrel"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/storage"
)

// BenchmarkKestrel measures one connection's set and reliable get
// (get /close/open) round trips over loopback, beside the same work as
// in-process queue calls (baseline=...) in the same run. Nothing is
// fsynced (logs and offsets under SyncNever): what is measured is the
// protocol's cost over the queue's; seglog bench kestrel measures the
// durable path with many connections.
func BenchmarkKestrel(b *testing.B) {
	value := strings.Repeat("v", 256)
	open := func(b *testing.B) (*storage.Store, *offsets.Store) {
		dir := b.TempDir()
		store, err := storage.OpenStore(dir, storage.StoreOptions{})
		require.NoError(b, err)
		ost, err := offsets.Open(filepath.Join(dir, "offsets"), offsets.Options{Sync: offsets.SyncNever})
		require.NoError(b, err)
		b.Cleanup(func() { _ = ost.Close(); _ = store.Close() })
		return store, ost
	}
	b.Run("baseline=queue/put", func(b *testing.B) {
		store, ost := open(b)
		q, err := queue.Open(store, ost, "q", queue.Options{})
		require.NoError(b, err)
		defer q.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := q.Put([]byte(value), 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline=queue/open+confirm", func(b *testing.B) {
		store, ost := open(b)
		q, err := queue.Open(store, ost, "q", queue.Options{})
		require.NoError(b, err)
		defer q.Close()
		for range b.N {
			_, err := q.Put([]byte(value), 0)
			require.NoError(b, err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			it, err := q.Open(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if err := q.Confirm(it.Lease); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("loopback/set", func(b *testing.B) {
		s := &server{t: b, dir: b.TempDir()}
		s.startWith(storage.SyncNever, offsets.SyncNever, kestrel.Options{})
		c := s.dial()
		req := setReq("q", value)
		b.ReportAllocs()
		for b.Loop() {
			c.send(req)
			if l := c.line(); l != "STORED" {
				b.Fatal(l)
			}
		}
	})
	b.Run("loopback/get-close-open", func(b *testing.B) {
		s := &server{t: b, dir: b.TempDir()}
		s.startWith(storage.SyncNever, offsets.SyncNever, kestrel.Options{})
		c := s.dial()
		var fill strings.Builder
		for range b.N {
			fill.WriteString(setReq("q", value))
		}
		c.send(fill.String())
		for range b.N {
			require.Equal(b, "STORED", c.line())
		}
		b.ReportAllocs()
		b.ResetTimer()
		req := "get q/open\r\n"
		for range b.N {
			c.send(req)
			if got := c.replies(); len(got) != 3 {
				b.Fatal(got)
			}
			req = "get q/close/open\r\n"
		}
	})
}
