package retention

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/faultfs"
)

func TestAppliesSaysWhetherAnyPolicyAndTheConsumedOneApply(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{})
	require.NoError(t, s.CreateTopic("plain", 1, storage.TopicConfig{}))
	check := func(def Policy, wantAny, wantConsumed bool) {
		t.Helper()
		anyPolicy, consumed, err := Applies(s, def)
		require.NoError(t, err)
		assert.Equal(t, wantAny, anyPolicy, "any policy")
		assert.Equal(t, wantConsumed, consumed, "consumed")
	}
	check(Policy{}, false, false)
	check(Policy{MaxAge: time.Hour}, true, false)
	check(Policy{Consumed: true}, true, true)
	require.NoError(t, s.CreateTopic("aged", 1, storage.TopicConfig{RetentionAge: time.Hour}))
	check(Policy{}, true, false)
	require.NoError(t, s.CreateTopic("read", 1, storage.TopicConfig{RetentionConsumed: true}))
	check(Policy{}, true, true)

	p, own := TopicPolicy(storage.TopicConfig{RetentionBytes: 10, SegmentBytes: 1 << 20})
	assert.True(t, own)
	assert.Equal(t, Policy{MaxBytes: 10}, p)
	_, own = TopicPolicy(storage.TopicConfig{SegmentBytes: 1 << 20})
	assert.False(t, own, "a topic config without retention fields sets no policy")
}

func TestRunOnceDeletesAndFreesTheSpaceOrOnlyReports(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, storage.StoreOptions{Log: smallLog()})
	logs := makeTopic(t, s, "t", 1, 4, 10, at(t0.Add(-48*time.Hour)))
	opts := Options{Default: Policy{MaxAge: time.Hour}, Now: func() time.Time { return t0 }}

	dry := opts
	dry.DryRun = true
	rep, err := RunOnce(context.Background(), s, NoConsumers{}, dry)
	require.NoError(t, err)
	assert.Len(t, rep.Deletions, 4)
	assert.Equal(t, int64(0), logs[0].StartOffset(), "a dry run deletes nothing")

	rep, err = RunOnce(context.Background(), s, NoConsumers{}, opts)
	require.NoError(t, err)
	require.Len(t, rep.Deletions, 4)
	assert.Equal(t, int64(40), logs[0].StartOffset())
	for _, d := range rep.Deletions {
		assert.NoFileExists(t, filepath.Join(root, "t-0", fmt.Sprintf("%020d.log", d.BaseOffset)), "removed before RunOnce returns")
	}
}

func TestReportStaleWhenOnlyListedSegmentsWereGone(t *testing.T) {
	gone := fmt.Errorf("open x.log: %w", fs.ErrNotExist)
	assert.False(t, Report{}.Stale(), "no failure")
	assert.True(t, Report{Failures: []Failure{{Err: gone}, {Err: gone}}}.Stale())
	assert.False(t, Report{Failures: []Failure{{Err: gone}, {Err: fs.ErrPermission}}}.Stale())
}

func TestNoConsumersReadsNothing(t *testing.T) {
	_, ok := NoConsumers{}.MinCommitted("t", 0)
	assert.False(t, ok)
}

func TestRunOnceBesideLooksAgainWhenADryRunListedWhatIsGone(t *testing.T) {
	root := twoAgedTopics(t)
	dry := Options{Default: Policy{MaxAge: time.Hour}, Now: func() time.Time { return t0 }, DryRun: true}
	readOnly := storage.StoreOptions{Log: storage.Options{ReadOnly: true}}
	reopens := 0
	reopen := func() (*storage.Store, error) { reopens++; return storage.OpenStore(root, readOnly) }

	rep, err := RunOnceBeside(context.Background(), openStore(t, root, readOnly), reopen, NoConsumers{}, dry)
	require.NoError(t, err)
	assert.Zero(t, reopens, "a report that is not stale is the answer")
	assert.Len(t, rep.Deletions, 8)

	// A partition the store listed at its open is gone when the run
	// reaches it: the report is stale, and a fresh store lists what is.
	r := openStore(t, root, readOnly)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "gone-0")))
	rep, err = RunOnceBeside(context.Background(), r, reopen, NoConsumers{}, dry)
	require.NoError(t, err)
	assert.Equal(t, 1, reopens, "one fresh open")
	assert.False(t, rep.Stale(), "%+v", rep.Failures)
	assert.Len(t, rep.Deletions, 4, "what the fresh store lists")
}

func TestRunOnceBesideLooksAgainOnlyForADryRun(t *testing.T) {
	root := twoAgedTopics(t)
	// Every file of gone-0 reads as missing: the report looks stale.
	ffs := faultfs.New(vfs.Default)
	ffs.FailAll(faultfs.OpOpen|faultfs.OpLstat|faultfs.OpReadDir, "gone-0", fs.ErrNotExist)
	opts := Options{Default: Policy{MaxAge: time.Hour}, Now: func() time.Time { return t0 }}

	for _, dryRun := range []bool{true, false} {
		logOpts := smallLog()
		logOpts.FS, logOpts.ReadOnly = ffs, dryRun
		reopens := 0
		reopen := func() (*storage.Store, error) {
			reopens++
			return storage.OpenStore(root, storage.StoreOptions{Log: logOpts})
		}
		opts.DryRun = dryRun
		rep, err := RunOnceBeside(context.Background(), openStore(t, root, storage.StoreOptions{Log: logOpts}), reopen, NoConsumers{}, opts)
		require.NoError(t, err)
		require.True(t, rep.Stale(), "dry run %v: %+v", dryRun, rep)
		if dryRun {
			assert.Equal(t, 3, reopens, "a stale dry run looks again, three times at most")
			assert.Len(t, rep.Deletions, 4, "kept-0 is listed")
		} else {
			// A run that deletes holds the store's lock: its report is the
			// answer, stale or not.
			assert.Zero(t, reopens, "a run that deletes runs once")
			assert.Len(t, rep.Deletions, 4, "kept-0 is deleted")
		}
	}
}

// twoAgedTopics makes a closed store of two one-partition topics, "gone"
// and "kept", of four segments each, all older than a day at t0.
func twoAgedTopics(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	w := openStore(t, root, storage.StoreOptions{Log: smallLog()})
	makeTopic(t, w, "gone", 1, 4, 10, at(t0.Add(-48*time.Hour)))
	makeTopic(t, w, "kept", 1, 4, 10, at(t0.Add(-48*time.Hour)))
	require.NoError(t, w.Close())
	return root
}
