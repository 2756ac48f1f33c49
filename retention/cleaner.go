package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seglog/seglog/storage"
)

var (
	// ErrClosed is returned by RunOnce on a closed Cleaner, and by a run
	// that Close interrupted.
	ErrClosed = errors.New("retention: cleaner closed")
	// ErrInvalidOptions reports Options that cannot be used.
	ErrInvalidOptions = errors.New("retention: invalid options")
)

// Defaults.
const (
	DefaultInterval = 5 * time.Minute
	DefaultWorkers  = 8
)

// Options configure a Cleaner.
type Options struct {
	Default  Policy
	Topics   map[string]Policy // per-topic overrides (whole Policy)
	Interval time.Duration     // Start's period; default 5 minutes
	DryRun   bool              // report, delete nothing
	Now      func() time.Time  // default time.Now

	// Workers is how many partitions a run plans at once (default 8), and
	// how many it deletes from at once when the store's one durable write
	// fails and each partition makes its own (each then fsyncs a
	// checkpoint and a directory: a few at a time hide the disk's
	// latency). Files are removed by the store's own workers.
	Workers int
	// OnRun, when set, is called with the result of every run that Start's
	// goroutine makes, on that goroutine (log it, export it). RunOnce
	// called directly does not call it.
	OnRun func(Report, error)
}

// Failure is a partition the run could not clean. It is retried on the
// next run.
type Failure struct {
	Topic     string
	Partition int32
	Err       error
}

// Report says what one run deleted (or, in a dry run, would delete) and
// what failed. Deletions and Failures are sorted by topic, partition and
// offset.
type Report struct {
	Deletions  []Deletion
	Failures   []Failure
	DryRun     bool
	Partitions int // partitions examined
	Elapsed    time.Duration
}

// Bytes returns the bytes of every deletion in the report.
func (r Report) Bytes() int64 {
	var n int64
	for _, d := range r.Deletions {
		n += d.Bytes
	}
	return n
}

// Stats are counters over the cleaner's life.
type Stats struct {
	Runs            int64         // runs completed or interrupted, dry runs included
	DryRuns         int64         // of which dry runs
	DeletedSegments int64         // segments removed from logs
	DeletedBytes    int64         // their bytes
	Failures        int64         // partition failures, summed over runs
	LastRun         time.Time     // when the last run started (by Options.Now)
	LastElapsed     time.Duration // how long it took
}

// Cleaner applies retention policies to the partitions of a Store. Its
// methods are safe for concurrent use.
type Cleaner struct {
	store    *storage.Store
	consumed Consumed
	opts     Options

	// runMu serializes runs; it guards retry.
	runMu sync.Mutex
	retry map[partKey]bool // partitions whose last deletion failed part-way

	// mu guards stats, started and closed.
	mu      sync.Mutex
	stats   Stats
	started bool
	closed  bool

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // Start's goroutine
}

type partKey struct {
	topic     string
	partition int32
}

// New returns a Cleaner over store. consumed may be nil when no policy uses
// it (it is an error if one does). Nothing runs until Start or RunOnce.
func New(store *storage.Store, consumed Consumed, opts Options) (*Cleaner, error) {
	var errs []error
	if store == nil {
		errs = append(errs, errors.New("nil store"))
	}
	if err := opts.Default.validate(); err != nil {
		errs = append(errs, fmt.Errorf("default policy: %w", err))
	}
	usesConsumed := opts.Default.Consumed
	for topic, p := range opts.Topics {
		if err := storage.ValidateTopic(topic); err != nil {
			errs = append(errs, err)
		}
		if err := p.validate(); err != nil {
			errs = append(errs, fmt.Errorf("policy of %s: %w", topic, err))
		}
		usesConsumed = usesConsumed || p.Consumed
	}
	if usesConsumed && consumed == nil {
		errs = append(errs, errors.New("a policy deletes consumed segments but Consumed is nil"))
	}
	if opts.Interval < 0 || opts.Workers < 0 {
		errs = append(errs, errors.New("negative Interval or Workers"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Topics = cloneMap(opts.Topics)
	c := &Cleaner{store: store, consumed: consumed, opts: opts, retry: map[partKey]bool{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

func cloneMap(m map[string]Policy) map[string]Policy {
	out := make(map[string]Policy, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Policy returns the policy that applies to a topic: its entry in
// Options.Topics, else the retention the topic's own configuration sets
// (storage.TopicConfig: RetentionAge, RetentionBytes, RetentionConsumed;
// the consumed policy only when the cleaner has a Consumed), else
// Options.Default.
func (c *Cleaner) Policy(topic string) Policy {
	if p, ok := c.opts.Topics[topic]; ok {
		return p
	}
	if cfg, err := c.store.TopicConfig(topic); err == nil {
		if p, own := TopicPolicy(cfg); own {
			p.Consumed = p.Consumed && c.consumed != nil
			return p
		}
	}
	return c.opts.Default
}

// Start starts the background goroutine, which runs RunOnce every
// Options.Interval (the first run one interval after Start) until Close.
// Calling it again, or after Close, does nothing.
func (c *Cleaner) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.closed {
		return
	}
	c.started = true
	c.wg.Add(1)
	go c.loop()
}

func (c *Cleaner) loop() {
	defer c.wg.Done()
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			rep, err := c.RunOnce(c.ctx)
			if c.opts.OnRun != nil && !errors.Is(err, ErrClosed) {
				c.opts.OnRun(rep, err)
			}
		}
	}
}

// Close stops the background goroutine and waits for it, and waits for a
// RunOnce in progress, which stops at its next partition. It does not close
// the Store. Later RunOnce calls return ErrClosed; Close is idempotent.
func (c *Cleaner) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.cancel()
	c.mu.Unlock()
	c.wg.Wait()
	c.runMu.Lock() // a direct RunOnce sees the cancellation and returns
	c.runMu.Unlock()
	return nil
}

// Stats returns the counters so far.
func (c *Cleaner) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Cleaner) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

type job struct {
	topic     string
	partition int32
	policy    Policy
	retry     bool // delete files left by a failed deletion, even with nothing planned
}

type result struct {
	ran       bool
	deletions []Deletion
	err       error
	retry     bool // call DeleteSegmentsBefore again on the next run

	// Between planning and deleting:
	log    *storage.Log
	plan   []Deletion
	delete bool // plan is not empty, or the job is a retry
}

// RunOnce applies the policies once to every partition of every topic
// whose policy can delete something (and to partitions whose last deletion
// failed part-way), a few partitions at a time, and returns what it
// deleted (or, with Options.DryRun, what it would delete). Failures of
// single partitions are in the Report, never in the error: the error is
// only ctx's error when ctx is done, or ErrClosed when the cleaner is (or
// gets) closed; the Report then holds what was done before. Runs are
// serialized.
func (c *Cleaner) RunOnce(ctx context.Context) (Report, error) {
	if c.isClosed() {
		return Report{}, ErrClosed
	}
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if c.isClosed() {
		return Report{}, ErrClosed
	}
	began := time.Now()
	now := c.opts.Now()
	rep := Report{DryRun: c.opts.DryRun}

	jobs := c.planJobs()
	results := make([]result, len(jobs))
	c.runJobs(ctx, len(jobs), func(i int) { results[i] = c.planPartition(jobs[i], now) })
	if !c.opts.DryRun {
		c.deletePlanned(ctx, jobs, results)
	}
	c.collect(&rep, jobs, results)
	rep.Elapsed = time.Since(began)
	c.recordRun(rep, now)

	switch {
	case c.ctx.Err() != nil:
		return rep, ErrClosed
	case ctx.Err() != nil:
		return rep, ctx.Err()
	}
	return rep, nil
}

// planJobs lists the partitions this run cleans: those with a policy, and
// those a failed run left to retry.
func (c *Cleaner) planJobs() []job {
	if !c.opts.DryRun {
		// Files the store failed to remove in the background: removed
		// here, or reported.
		for _, f := range c.store.DeletionFailures() {
			c.retry[partKey{f.Topic, f.Partition}] = true
		}
	}
	var jobs []job
	for _, t := range c.store.Topics() {
		p := c.Policy(t.Name)
		for i := 0; i < t.Partitions; i++ {
			retry := !c.opts.DryRun && c.retry[partKey{t.Name, int32(i)}]
			if p.Enabled() || retry {
				jobs = append(jobs, job{topic: t.Name, partition: int32(i), policy: p, retry: retry})
			}
		}
	}
	clear(c.retry) // rebuilt by collect from this run; vanished topics drop out
	return jobs
}

// runJobs calls fn(0..n-1) on Options.Workers goroutines, until ctx or the
// cleaner is done; fn is not called for the rest.
func (c *Cleaner) runJobs(ctx context.Context, n int, fn func(i int)) {
	stopped := func() bool { return ctx.Err() != nil || c.ctx.Err() != nil }
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(c.opts.Workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		if stopped() {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
}

// deletePlanned has the store make every planned start offset durable in
// one write (Store.AdvanceStartOffsets), which takes the segments out of
// the logs; the store removes their files in the background. The
// partitions it did not move (that write failed on a full disk, or a
// retry with nothing new planned) go through DeleteSegmentsBefore here:
// each log makes its own start offset durable, or deletes oldest first,
// and removes the files.
func (c *Cleaner) deletePlanned(ctx context.Context, jobs []job, results []result) {
	var targets []storage.PartitionOffset
	var todo []int
	for i, r := range results {
		if !r.delete {
			continue
		}
		todo = append(todo, i)
		if len(r.plan) > 0 {
			targets = append(targets, storage.PartitionOffset{Topic: jobs[i].topic, Partition: jobs[i].partition, Offset: r.plan[len(r.plan)-1].NextOffset})
		}
	}
	if len(targets) > 0 {
		_ = c.store.AdvanceStartOffsets(targets) // on failure, per partition below
	}
	left := todo[:0]
	for _, i := range todo {
		if r := &results[i]; len(r.plan) > 0 && r.log.StartOffset() >= r.plan[len(r.plan)-1].NextOffset {
			r.deletions, r.retry = r.plan, false // the store's deleter removes the files
			continue
		}
		left = append(left, i)
	}
	c.runJobs(ctx, len(left), func(k int) {
		i := left[k]
		results[i] = c.deletePartition(jobs[i], results[i])
	})
}

// collect adds the results to the report (deletions sorted) and notes the
// partitions to retry.
func (c *Cleaner) collect(rep *Report, jobs []job, results []result) {
	for i, r := range results {
		if !r.ran {
			if jobs[i].retry {
				c.retry[partKey{jobs[i].topic, jobs[i].partition}] = true
			}
			continue
		}
		rep.Partitions++
		rep.Deletions = append(rep.Deletions, r.deletions...)
		if r.err != nil {
			rep.Failures = append(rep.Failures, Failure{Topic: jobs[i].topic, Partition: jobs[i].partition, Err: r.err})
		}
		if r.retry {
			c.retry[partKey{jobs[i].topic, jobs[i].partition}] = true
		}
	}
	slices.SortFunc(rep.Deletions, func(a, b Deletion) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.BaseOffset, b.BaseOffset))
	})
}

// recordRun adds a run's report to the cleaner's statistics.
func (c *Cleaner) recordRun(rep Report, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Runs++
	if rep.DryRun {
		c.stats.DryRuns++
	} else {
		c.stats.DeletedSegments += int64(len(rep.Deletions))
		c.stats.DeletedBytes += rep.Bytes()
	}
	c.stats.Failures += int64(len(rep.Failures))
	c.stats.LastRun = now
	c.stats.LastElapsed = rep.Elapsed
}

// planPartition plans one partition: the dry run's result, or what
// deletePartition then deletes. A panic becomes the partition's failure.
func (c *Cleaner) planPartition(j job, now time.Time) (r result) {
	r.ran = true
	defer c.recoverPanic(j, &r)
	fail := func(err error) result {
		r.retry = j.retry
		r.err = fmt.Errorf("retention: %s: %w", storage.PartitionDir(j.topic, j.partition), err)
		return r
	}
	l, err := c.store.Log(j.topic, j.partition)
	var segs []storage.SegmentInfo
	switch {
	case errors.Is(err, storage.ErrReadOnly) && c.opts.DryRun:
		// A dry run beside the writing process: through the follower.
		segs, err = c.followerSegments(j.topic, j.partition)
	case err == nil:
		segs, err = l.Segments()
	}
	if err != nil {
		return fail(err)
	}
	var minCommitted int64
	var consumedOK bool
	if j.policy.Consumed {
		minCommitted, consumedOK = c.consumed.MinCommitted(j.topic, j.partition)
	}
	plan := Plan(segs, j.policy, minCommitted, consumedOK, now)
	for i := range plan {
		plan[i].Topic, plan[i].Partition = j.topic, j.partition
	}
	if c.opts.DryRun {
		r.deletions = plan
		return r
	}
	// retry stays set if ctx stops the run before the deletion.
	r.log, r.plan, r.delete, r.retry = l, plan, len(plan) > 0 || j.retry, j.retry
	return r
}

// deletePartition has the log delete a planned partition's segments.
func (c *Cleaner) deletePartition(j job, r result) result {
	defer c.recoverPanic(j, &r)
	r.retry = false
	target := r.log.StartOffset() // nothing new: only finish the last deletion
	if len(r.plan) > 0 {
		target = r.plan[len(r.plan)-1].NextOffset
	}
	res, err := r.log.DeleteSegmentsBefore(target)
	// What the log no longer holds is deleted, even when removing its
	// files failed (they go on the retry or at the next open).
	for _, d := range r.plan {
		if d.NextOffset <= res.StartOffset {
			r.deletions = append(r.deletions, d)
		}
	}
	if err != nil {
		r.retry = true
		r.err = fmt.Errorf("retention: %s: %w", storage.PartitionDir(j.topic, j.partition), err)
	}
	return r
}

// recoverPanic turns a panic while cleaning a partition into its failure.
func (c *Cleaner) recoverPanic(j job, r *result) {
	if v := recover(); v != nil {
		r.err = fmt.Errorf("retention: %s: panic: %v", storage.PartitionDir(j.topic, j.partition), v)
		r.retry = r.retry || j.retry
	}
}

// followerSegments lists a partition's segments through its follower in
// a read-only store.
func (c *Cleaner) followerSegments(topic string, partition int32) ([]storage.SegmentInfo, error) {
	f, err := c.store.Follower(topic, partition)
	if err != nil {
		return nil, err
	}
	return f.Segments()
}
