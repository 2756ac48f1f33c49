package bench

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// Workload is one benchmark. Run measures it in a subdirectory of env.Dir
// and returns one result or more (a workload with variants, such as
// durable with 1 and N producers, returns one per variant).
type Workload interface {
	Name() string
	Run(ctx context.Context, env *Env) ([]Result, error)
}

// Env is what workloads share in one run: the working directory and the
// data sets already written, so that consume and random-read can read
// what an earlier workload produced instead of writing it again.
type Env struct {
	// Dir is the working directory; each workload uses a subdirectory.
	Dir string

	progress *progress
	datasets map[dataSpec]string
}

// NewEnv returns an Env over dir, which must exist.
func NewEnv(dir string) *Env {
	return &Env{Dir: dir, datasets: map[dataSpec]string{}}
}

// orDefault sets *p to v when it is zero or negative: an unset size.
func orDefault[T int | int64 | time.Duration](p *T, v T) {
	if *p <= 0 {
		*p = v
	}
}

// WorkDir returns a fresh, empty subdirectory of the Env for name: where
// a workload defined outside this package keeps its files.
func (e *Env) WorkDir(name string) (string, error) { return e.workDir(name) }

// Progress reports how far the running workload is: done of total.
func (e *Env) Progress(done, total int64) {
	e.progress.setTotal(total)
	e.progress.set(done)
}

// workDir returns a fresh, empty subdirectory of the Env for name.
func (e *Env) workDir(name string) (string, error) {
	dir := filepath.Join(e.Dir, name)
	for k, v := range e.datasets {
		if v == dir {
			delete(e.datasets, k)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o750)
}

// dataSpec names a data set: uncompressed records of RecordSize bytes in
// batches of BatchSize, Records in all, spread over Partitions.
type dataSpec struct {
	RecordSize int
	BatchSize  int
	Partitions int
	Records    int64
}

func (s dataSpec) String() string {
	return fmt.Sprintf("data-r%d-b%d-p%d-n%d", s.RecordSize, s.BatchSize, s.Partitions, s.Records)
}

// dataset returns the directory of a data set, writing it (untimed) if no
// earlier workload left one.
func (e *Env) dataset(ctx context.Context, s dataSpec) (string, error) {
	if dir, ok := e.datasets[s]; ok {
		return dir, nil
	}
	dir, err := e.workDir(s.String())
	if err != nil {
		return "", err
	}
	w := Produce{RecordSize: s.RecordSize, BatchSize: s.BatchSize, Partitions: s.Partitions, Producers: s.Partitions, Records: s.Records}.withDefaults()
	if _, err := w.run(ctx, e, dir, nil); err != nil {
		return "", fmt.Errorf("bench: write data set %s: %w", s, err)
	}
	e.datasets[s] = dir
	return dir, nil
}

func partitionDir(dir string, p int) string {
	return filepath.Join(dir, storage.PartitionDir("bench", int32(p)))
}

func openLogs(dir string, partitions int, opts storage.Options) ([]*storage.Log, error) {
	logs := make([]*storage.Log, 0, partitions)
	for p := 0; p < partitions; p++ {
		l, err := storage.Open(partitionDir(dir, p), opts)
		if err != nil {
			closeLogs(logs)
			return nil, err
		}
		logs = append(logs, l)
	}
	return logs, nil
}

func closeLogs(logs []*storage.Log) error {
	var first error
	for _, l := range logs {
		if err := l.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// diskUsage sums the sizes of the regular files under dir.
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// makeRecords returns n records with values of size bytes: random
// (incompressible) when compressible is false, otherwise text resembling
// application log lines (which zstd shrinks about 3 to 5 times).
func makeRecords(n, size int, compressible bool, seed uint64) []segment.Record {
	backing := make([]byte, n*size)
	if compressible {
		fillText(backing, seed)
	} else {
		fillRandom(backing, seed)
	}
	ts := time.Now().UnixMilli()
	recs := make([]segment.Record, n)
	for i := range recs {
		recs[i] = segment.Record{Timestamp: ts, Value: backing[i*size : (i+1)*size : (i+1)*size]}
	}
	return recs
}

var words = strings.Fields("GET POST PUT /api/v1/users /api/v1/orders /static/app.js INFO WARN ERROR user_id= order_id= status=200 status=404 status=500 latency_ms= bytes= region=eu-west-1 region=us-east-1 request accepted completed retry cache hit miss")

func fillText(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	i := 0
	for i < len(b) {
		var s string
		if r.IntN(3) == 0 {
			s = fmt.Sprintf("%d ", r.IntN(100000))
		} else {
			s = words[r.IntN(len(words))] + " "
		}
		i += copy(b[i:], s)
	}
}

// encodeBatches encodes k distinct batches of batchSize records each.
func encodeBatches(k, batchSize, recordSize int, codec segment.Codec, seed uint64) ([][]byte, error) {
	out := make([][]byte, k)
	for i := range out {
		recs := makeRecords(batchSize, recordSize, codec != segment.CodecNone, seed+uint64(i))
		b, err := segment.AppendBatch(nil, recs, segment.EncodeOptions{Codec: codec})
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
