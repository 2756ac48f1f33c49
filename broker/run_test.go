package broker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/retention"
	"github.com/seglog/seglog/storage"
)

// openStores opens a store and offsets store in a fresh directory,
// closed with the test.
func openStores(t *testing.T) (*storage.Store, *offsets.Store) {
	t.Helper()
	dir := t.TempDir()
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	ost, err := offsets.Open(offsets.Dir(dir), offsets.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ost.Close() })
	return store, ost
}

func TestRunServesUntilItsContextEnds(t *testing.T) {
	store, ost := openStores(t)
	srv, err := New(store, ost, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx, ln, 10*time.Second) }()

	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err, "Run serves")
	defer nc.Close()
	cancel()
	select {
	case err := <-ran:
		assert.NoError(t, err, "a clean stop")
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	_, err = net.Dial("tcp", ln.Addr().String())
	assert.Error(t, err, "the listener is closed")
}

func TestRetentionOptionRunsTheCleanerUntilClose(t *testing.T) {
	store, ost := openStores(t)
	require.NoError(t, store.CreateTopic("t", 1, storage.TopicConfig{}))
	l, err := store.Log("t", 0)
	require.NoError(t, err)
	for range 3 {
		_, err := l.Append(storage.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("v")})
		require.NoError(t, err)
		require.NoError(t, l.Roll())
	}
	srv, err := New(store, ost, Options{
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Retention: &retention.Options{Default: retention.Policy{MaxAge: time.Nanosecond}, Interval: 10 * time.Millisecond},
	})
	require.NoError(t, err)
	require.NotNil(t, srv.Cleaner())

	// The cleaner started with New.
	require.Eventually(t, func() bool { return l.StartOffset() == 3 }, 10*time.Second, 5*time.Millisecond, "the expired segments are deleted")
	require.NoError(t, srv.Close())
	_, err = srv.Cleaner().RunOnce(context.Background())
	assert.ErrorIs(t, err, retention.ErrClosed, "Close stopped the cleaner")
}

func TestRetentionRunsAreLoggedWhenTheyDeleteOrFail(t *testing.T) {
	deleted := retention.Report{Deletions: []retention.Deletion{{Topic: "t", Bytes: 10}, {Topic: "t", Bytes: 5}}}
	for _, tc := range []struct {
		name string
		rep  retention.Report
		err  error
		want string
	}{
		{"a run that deleted", deleted, nil, "level=INFO msg=\"retention run\" segments=2 bytes=15 failures=0"},
		{"a run that failed", retention.Report{}, errors.New("boom"), "level=ERROR msg=\"retention run failed\" err=boom"},
		{"a run that did nothing", retention.Report{Partitions: 4}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			logRetention(slog.New(slog.NewTextHandler(&buf, nil)))(tc.rep, tc.err)
			if tc.want == "" {
				assert.Empty(t, buf.String())
			} else {
				assert.Contains(t, buf.String(), tc.want)
			}
		})
	}
}

func TestNoRetentionOptionRunsNoCleaner(t *testing.T) {
	store, ost := openStores(t)
	srv, err := New(store, ost, Options{})
	require.NoError(t, err)
	assert.Nil(t, srv.Cleaner())
	assert.NoError(t, srv.Close())
}
