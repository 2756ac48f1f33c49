package retention

import (
	"context"
	"errors"
	"io/fs"

	"github.com/seglog/seglog/storage"
)

// TopicPolicy returns the retention a topic's own configuration sets
// (RetentionAge, RetentionBytes, RetentionConsumed), and whether it sets
// any: a topic that sets none takes the cleaner's default.
func TopicPolicy(cfg storage.TopicConfig) (Policy, bool) {
	p := Policy{MaxAge: cfg.RetentionAge, MaxBytes: cfg.RetentionBytes, Consumed: cfg.RetentionConsumed}
	return p, p.MaxAge > 0 || p.MaxBytes > 0 || p.Consumed
}

// Applies says what a run over store with the default policy def would
// do: whether any policy applies to any topic, and whether one of them is
// the consumed policy (which needs the consumer offsets).
func Applies(store *storage.Store, def Policy) (anyPolicy, consumed bool, err error) {
	anyPolicy, consumed = def.Enabled(), def.Consumed
	for _, t := range store.Topics() {
		cfg, err := store.TopicConfig(t.Name)
		if err != nil {
			return false, false, err
		}
		p, own := TopicPolicy(cfg)
		anyPolicy = anyPolicy || own
		consumed = consumed || p.Consumed
	}
	return anyPolicy, consumed, nil
}

// NoConsumers is the consumer progress of a data directory without an
// offset store: no group reads any topic, so the consumed policy deletes
// nothing.
type NoConsumers struct{}

// MinCommitted says no group reads the topic.
func (NoConsumers) MinCommitted(string, int32) (int64, bool) { return 0, false }

// RunOnce runs a cleaner with opts over store once and closes it. Unless
// it is a dry run, it then waits until the store has removed the deleted
// segments' files (a store removes them in the background, and its Close
// would leave the rest to the next open), so that the space is free when
// it returns.
func RunOnce(ctx context.Context, store *storage.Store, consumed Consumed, opts Options) (Report, error) {
	cl, err := New(store, consumed, opts)
	if err != nil {
		return Report{}, err
	}
	defer cl.Close()
	rep, err := cl.RunOnce(ctx)
	if err == nil && !opts.DryRun {
		err = store.WaitDeleted(ctx)
	}
	return rep, err
}

// RunOnceBeside is RunOnce for a dry run over a read-only store opened
// beside a process that writes the data directory. While the report is
// Stale, it runs again, at most three more times, over a store that
// reopen opens afresh (and closes after the run), and returns the last
// report. A run that deletes holds the store's lock, so no other process
// deletes beside it: it runs once.
func RunOnceBeside(ctx context.Context, store *storage.Store, reopen func() (*storage.Store, error), consumed Consumed, opts Options) (Report, error) {
	rep, err := RunOnce(ctx, store, consumed, opts)
	for try := 0; err == nil && opts.DryRun && try < 3 && rep.Stale(); try++ {
		fresh, oerr := reopen()
		if oerr != nil {
			return rep, oerr
		}
		rep, err = RunOnce(ctx, fresh, consumed, opts)
		err = errors.Join(err, fresh.Close())
	}
	return rep, err
}

// Stale reports whether the run failed only on partitions where a
// segment file it listed was gone. A read-only store opened between a
// writer's advance of a log's start and the removal of the segments below
// it keeps those segments in its list, and Refresh does not drop them
// (the start it reads back has not moved since the open): a dry run
// beside a writer whose own retention deletes is then run again on a
// store opened afresh.
func (r Report) Stale() bool {
	if len(r.Failures) == 0 {
		return false
	}
	for _, f := range r.Failures {
		if !errors.Is(f.Err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}
