package crashtest

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs/crashfs"
)

// The replay tool. A failing sweep names its crash points; to study one,
// replay it with its whole history instead of running the tests:
//
//	make crashreplay POINT=log/truncate/lazy@384
//	go test -count=1 -v ./internal/crashtest/ -replay log/truncate/lazy@384
//
// It prints what the workload's run returned, every disk-changing
// operation up to the crash, what survived the crash, and what the check
// of a reopen found; it exits 0 when the check passes, 1 when it fails
// and 2 when the point cannot be replayed.
var replayFlag = flag.String("replay", "", "replay one crash point with its whole history instead of running the tests: <workload>/<mode>@<point>, e.g. log/truncate/lazy@384")

// TestMain runs the replay tool when -replay is given, else the tests.
func TestMain(m *testing.M) {
	flag.Parse()
	if *replayFlag == "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "seglog-crashreplay")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	passed, err := replay(*replayFlag, dir, os.Stdout)
	if rmErr := os.RemoveAll(dir); err == nil {
		err = rmErr
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "crash replay:", err)
		os.Exit(2)
	case !passed:
		os.Exit(1)
	}
	os.Exit(0)
}

// replayPoint is a crash point to replay: a workload, a crash mode and
// the number of the operation at which the power goes.
type replayPoint struct {
	workload string
	mode     crashfs.Mode
	point    int64
}

// parseReplay parses <workload>/<mode>@<point>.
func parseReplay(spec string) (replayPoint, error) {
	usage := fmt.Errorf("crash point %q: want <workload>/<mode>@<point>, for example log/truncate/lazy@384", spec)
	at := strings.LastIndexByte(spec, '@')
	slash := strings.LastIndexByte(spec, '/')
	if slash <= 0 || at < slash {
		return replayPoint{}, usage
	}
	p := replayPoint{workload: spec[:slash]}
	point, err := strconv.ParseInt(spec[at+1:], 10, 64)
	if err != nil || point < 1 {
		return replayPoint{}, fmt.Errorf("%w: the point is an operation number from 1", usage)
	}
	p.point = point
	modeName := spec[slash+1 : at]
	var names []string
	for _, m := range []crashfs.Mode{crashfs.Strict, crashfs.Lazy, crashfs.Kill} {
		if m.String() == modeName {
			p.mode = m
			return p, nil
		}
		names = append(names, m.String())
	}
	return replayPoint{}, fmt.Errorf("%w: no crash mode %q (%s)", usage, modeName, strings.Join(names, ", "))
}

// replay runs one crash point in dir, as a sweep does but without crashes
// during the recovery, and writes what happened to w. It reports whether
// the check after the crash passed; an error means the point could not be
// replayed (a bad spec, an unknown workload, a failing file system).
func replay(spec, dir string, w io.Writer) (passed bool, err error) {
	p, err := parseReplay(spec)
	if err != nil {
		return false, err
	}
	newW, ok := allWorkloads()[p.workload]
	if !ok {
		return false, fmt.Errorf("no workload %q", p.workload)
	}
	fsys, err := crashfs.New(dir, crashfs.Options{Mode: p.mode, Seed: uint64(p.point), CrashAt: p.point, HistoryLen: 1 << 20})
	if err != nil {
		return false, err
	}
	wl := newW()
	fmt.Fprintf(w, "run: %v\n", wl.Run(fsys, dir))
	if !fsys.Crashed() {
		fmt.Fprintf(w, "the workload ended before operation %d: crashing after its end\n", p.point)
		fsys.CrashNow()
	}
	fmt.Fprintf(w, "operations:\n%s\n", strings.Join(fsys.History(), "\n"))
	rep, err := fsys.Crash()
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "%s\n", strings.TrimRight(rep.String(), "\n"))
	last, err := crashfs.New(dir, crashfs.Options{})
	if err != nil {
		return false, err
	}
	n, cerr := wl.Check(last, dir)
	fmt.Fprintf(w, "check: %d acknowledged items, %v\n", n, cerr)
	return cerr == nil, nil
}

// TestParseReplay: a crash point is <workload>/<mode>@<point>, the
// workload name may hold slashes, and anything else is refused with the
// expected form.
func TestParseReplay(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want replayPoint
		err  string
	}{
		{"log/truncate/lazy@384", replayPoint{"log/truncate", crashfs.Lazy, 384}, ""},
		{"offsets/commit-always/strict@1", replayPoint{"offsets/commit-always", crashfs.Strict, 1}, ""},
		{"w/kill@7", replayPoint{"w", crashfs.Kill, 7}, ""},
		{"log/truncate/lazy", replayPoint{}, "want <workload>/<mode>@<point>"},
		{"lazy@3", replayPoint{}, "want <workload>/<mode>@<point>"},
		{"/lazy@3", replayPoint{}, "want <workload>/<mode>@<point>"},
		{"log@3/lazy", replayPoint{}, "want <workload>/<mode>@<point>"},
		{"log/lazy@x", replayPoint{}, "an operation number from 1"},
		{"log/lazy@0", replayPoint{}, "an operation number from 1"},
		{"log/sudden@3", replayPoint{}, `no crash mode "sudden" (strict, lazy, kill)`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := parseReplay(tc.spec)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestReplayShowsOneCrashPoint: the replay tool runs a workload to its
// crash point and shows the operations, what survived and the check,
// which passes; an unknown workload is an error.
func TestReplayShowsOneCrashPoint(t *testing.T) {
	var out strings.Builder
	passed, err := replay("offsets/commit-always/strict@5", t.TempDir(), &out)
	require.NoError(t, err)
	assert.True(t, passed, out.String())
	assert.Contains(t, out.String(), "run: ")
	assert.Contains(t, out.String(), "operations:\n")
	assert.Regexp(t, `check: [0-9]+ acknowledged items, <nil>`, out.String())
	// The history holds every operation before the crash point, not the
	// one the power cut.
	assert.Contains(t, out.String(), "\n#1 ")
	assert.Contains(t, out.String(), "\n#4 ")
	assert.NotContains(t, out.String(), "\n#5 ")

	_, err = replay("no/such/strict@1", t.TempDir(), &out)
	assert.ErrorContains(t, err, `no workload "no/such"`)
}
