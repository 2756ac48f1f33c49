package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

type result struct {
	code           int
	stdout, stderr string
}

// seglog runs the command line in-process with stdin.
func seglog(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	return seglogCtx(t, context.Background(), stdin, args...)
}

func seglogCtx(t testing.TB, ctx context.Context, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := runContext(ctx, args, strings.NewReader(stdin), &out, &errb)
	r := result{code: code, stdout: out.String(), stderr: errb.String()}
	noStackTrace(t, r.stderr)
	return r
}

func noStackTrace(t testing.TB, stderr string) {
	t.Helper()
	for _, bad := range []string{"goroutine ", "panic:", "internal error", ".go:"} {
		require.NotContains(t, stderr, bad, "stderr shows a crash")
	}
}

// hashTree returns a hash of every file under dir, by relative path, with
// the file's mode and size, so that any change shows.
func hashTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel+"/"] = info.Mode().String()
			return nil
		}
		b, err := readAll(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = info.Mode().String() + " " + hex.EncodeToString(sum[:]) + " " + info.ModTime().Format(time.RFC3339Nano)
		return nil
	})
	require.NoError(t, err)
	return out
}

func readAll(path string) ([]byte, error) { return os.ReadFile(path) }

// fixedTS is the timestamp of the first record of test data.
const fixedTS = 1_700_000_000_000

// makeLog writes a partition log topic-p under root with the storage
// package, with deterministic content: n batches of per records each,
// timestamps from fixedTS, small segments and a small index interval so
// that there are several segments and index entries.
func makeLog(t testing.TB, root, topic string, partitions, batches, per int, segBytes int64) {
	t.Helper()
	s, err := storage.OpenStore(root, storage.StoreOptions{Log: storage.Options{SegmentBytes: segBytes, IndexIntervalBytes: 256}})
	require.NoError(t, err)
	require.NoError(t, s.CreateTopic(topic, partitions, storage.TopicConfig{}))
	for p := range partitions {
		l, err := s.Log(topic, int32(p))
		require.NoError(t, err)
		ts := int64(fixedTS)
		for b := range batches {
			recs := make([]storage.Record, per)
			for i := range recs {
				off := b*per + i
				recs[i] = storage.Record{Timestamp: ts, Key: []byte("key-" + itoa(off%7)), Value: []byte("value-" + itoa(off))}
				ts += 10
			}
			_, err := l.Append(recs...)
			require.NoError(t, err)
		}
	}
	require.NoError(t, s.Close())
}

func itoa(i int) string { return strconv.Itoa(i) }

// seglogFS runs the command line in-process with the filesystem fsys.
func seglogFS(t testing.TB, fsys vfs.FS, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := runEnv(&env{ctx: context.Background(), stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, fs: fsys}, args)
	r := result{code: code, stdout: out.String(), stderr: errb.String()}
	noStackTrace(t, r.stderr)
	return r
}

// segmentBases returns the base offsets of the .log files of the
// partition directory dir, sorted.
func segmentBases(t testing.TB, dir string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var bases []int64
	for _, e := range entries {
		if base, ok := segment.ParseFileName(e.Name(), segment.LogSuffix); ok {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	return bases
}
