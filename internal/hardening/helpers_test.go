package hardening

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// cliBin is the seglog command, built once by TestMain.
var cliBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "seglog-hardening-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cliBin = filepath.Join(dir, "seglog")
	out, err := exec.Command("go", "build", "-o", cliBin, "github.com/seglog/seglog/cmd/seglog").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build seglog: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// smallLog is a log that rolls every few batches and indexes often, so a
// short workload exercises rolls, index entries and index allocation.
func smallLog(fs vfs.FS) storage.Options {
	return storage.Options{FS: fs, SegmentBytes: 1024, IndexIntervalBytes: 128, MaxIndexBytes: 1024}
}

// value is a unique, recognizable record value of about 100 bytes.
func value(tag string, i int) string {
	return fmt.Sprintf("%s-%04d-%s", tag, i, strings.Repeat("x", 90))
}

// model is what a log must hold: what was appended, what was acknowledged
// (fsynced), and values whose fate is unknown (their operation failed).
type model struct {
	vals     map[int64]string // offset -> value, for appends that returned nil
	acked    map[int64]bool   // offsets whose value was fsynced (Sync or Close returned nil)
	maybe    map[string]bool  // values that may or may not be in the log
	deleteTo int64            // DeleteSegmentsBefore was asked for this offset: anything below may be gone
}

func newModel() *model {
	return &model{vals: map[int64]string{}, acked: map[int64]bool{}, maybe: map[string]bool{}}
}

// appended records the result of an Append of v.
func (m *model) appended(v string, res storage.AppendResult, err error) {
	if err != nil {
		m.maybe[v] = true
		return
	}
	m.vals[res.FirstOffset] = v
}

// synced marks everything appended so far acknowledged.
func (m *model) synced() {
	for o := range m.vals {
		m.acked[o] = true
	}
}

// truncated records Truncate(at): on success records from at are gone;
// on failure they may or may not be.
func (m *model) truncated(at int64, err error) {
	for o, v := range m.vals {
		if o >= at {
			delete(m.vals, o)
			delete(m.acked, o)
			if err != nil {
				m.maybe[v] = true
			}
		}
	}
}

// deleted records DeleteSegmentsBefore(to).
func (m *model) deleted(to int64) { m.deleteTo = max(m.deleteTo, to) }

type rec struct {
	off int64
	val string
}

// readAll reads every record of l from its start offset with a Reader.
func readAll(l *storage.Log) ([]rec, error) {
	r := l.NewReader(l.StartOffset())
	var out []rec
	for r.Next() {
		out = append(out, rec{r.Record().Offset, string(r.Record().Value)})
	}
	return out, r.Err()
}

// check compares l with the model: the log reads without error, its
// offsets are dense from StartOffset to EndOffset, every acknowledged
// record not below deleteTo is there with its value, every record has the
// value the model has for its offset or a value whose append failed, and
// no value appears twice.
func (m *model) check(l *storage.Log) error {
	recs, err := readAll(l)
	if err != nil {
		return fmt.Errorf("reading the log: %w", err)
	}
	start, end := l.StartOffset(), l.EndOffset()
	if int64(len(recs)) != end-start {
		return fmt.Errorf("read %d records, the log holds [%d, %d)", len(recs), start, end)
	}
	seen := map[string]int64{}
	for i, r := range recs {
		if r.off != start+int64(i) {
			return fmt.Errorf("record %d has offset %d, want %d (offsets not dense)", i, r.off, start+int64(i))
		}
		if prev, dup := seen[r.val]; dup {
			return fmt.Errorf("value %.12s at offsets %d and %d (duplicate)", r.val, prev, r.off)
		}
		seen[r.val] = r.off
		if v, ok := m.vals[r.off]; ok {
			if v != r.val {
				return fmt.Errorf("offset %d holds %.12s, want %.12s", r.off, r.val, v)
			}
		} else if !m.maybe[r.val] {
			return fmt.Errorf("offset %d holds %.12s, which was never appended there", r.off, r.val)
		}
	}
	for _, o := range slices.Sorted(maps.Keys(m.acked)) {
		if o < m.deleteTo {
			continue
		}
		if o < start || o >= end {
			return fmt.Errorf("acknowledged offset %d lost: the log holds [%d, %d)", o, start, end)
		}
	}
	return nil
}

// appendNext appends v and checks that it got the end offset.
func (m *model) appendNext(l *storage.Log, v string) error {
	end := l.EndOffset()
	res, err := l.Append(storage.Record{Value: []byte(v)})
	m.appended(v, res, err)
	if err != nil {
		return err
	}
	if res.FirstOffset != end {
		return fmt.Errorf("append got offset %d, the end was %d", res.FirstOffset, end)
	}
	return nil
}

// appendN appends n records of tag and requires success.
func appendN(t *testing.T, l *storage.Log, m *model, tag string, n int) {
	t.Helper()
	for i := range n {
		require.NoError(t, m.appendNext(l, value(tag, i)))
	}
}

// isFailedOrFull reports an error that says the log needs a reopen or space.
func isFailedOrFull(err error) bool {
	return errors.Is(err, storage.ErrFailed) || errors.Is(err, storage.ErrDiskFull)
}
