package consumer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// Options say what a Consumer reads and where it starts.
type Options struct {
	// Group is the consumer group: each partition starts at the group's
	// committed offset, Commit commits, and the group's processes reading
	// all partitions split them. "": no group, nothing committed.
	Group string
	// Partitions are the partitions to read; nil: all of the topic's (split
	// with the group's other processes when Group is set).
	Partitions []int32
	// From is where a partition without a commit starts. With a group, the
	// start of every such partition is committed first, so that the group
	// holds its place.
	From Position
	// Follow makes Poll wait for records at the end of every partition;
	// without it Poll returns io.EOF there.
	Follow bool
	// Notify, when set, hears what the caller may want to tell an operator:
	// a committed offset outside the log that was reset, a starting offset
	// moved into the log.
	Notify func(msg string)
}

// Record is a record of one partition of the topic.
type Record struct {
	Partition int32
	storage.Record

	kafka *kgo.Record // through a broker: what the broker sent
}

// Consumer reads a topic of a data directory, read-only, beside the
// process that writes it. Poll and Commit are called from one goroutine.
type Consumer struct {
	store *storage.Store
	topic string
	opts  Options

	ost        *offsets.Store // with a group, when no broker serves it
	parts      []*partReader
	leases     *leases   // a group over all partitions: split with its other processes
	rebalanced time.Time // when the leases were last looked at
	broker     *brokerConsumer
}

// partReader is one partition being read.
type partReader struct {
	p         int32
	l         *storage.Follower
	r         *storage.Reader
	committed int64 // last offset committed, -1: none
}

// Open starts reading topic of store (opened read-only, or not) as opts
// say. With a group over all partitions and a broker serving the data
// directory (BrokerAddr), it joins the group through the broker; else,
// with a group, it opens the data directory's offset store, and over all
// partitions takes its share of the group's leases.
func Open(store *storage.Store, topic string, opts Options) (*Consumer, error) {
	n, err := store.Partitions(topic)
	if err != nil {
		return nil, err
	}
	c := &Consumer{store: store, topic: topic, opts: opts}
	if opts.Group != "" && opts.Partitions == nil {
		if addr := BrokerAddr(store.Root()); addr != "" {
			if c.broker, err = joinBroker(addr, topic, opts); err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	parts := opts.Partitions
	if parts == nil {
		for p := range int32(n) {
			parts = append(parts, p)
		}
	}
	if opts.Group != "" {
		if c.ost, err = offsets.Open(offsets.Dir(store.Root()), offsets.Options{}); err != nil {
			return nil, err
		}
		if opts.Partitions == nil {
			if c.leases, err = joinLeases(store.Root(), opts.Group, topic, n); err != nil {
				c.Close()
				return nil, err
			}
			if parts, err = c.leases.rebalance(c.release); err != nil {
				c.Close()
				return nil, err
			}
			c.rebalanced = time.Now()
		}
	}
	if err := c.add(parts); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Broker returns the address of the broker through which the group was
// joined, "" when none was.
func (c *Consumer) Broker() string {
	if c.broker == nil {
		return ""
	}
	return c.broker.addr
}

// Close leaves the group (releasing its leases) and closes the offset
// store; what was not committed is read again by the next reader.
func (c *Consumer) Close() error {
	var errs []error
	if c.broker != nil {
		c.broker.close()
	}
	if c.leases != nil {
		c.leases.close()
		c.leases = nil
	}
	if c.ost != nil {
		errs = append(errs, c.ost.Close())
		c.ost = nil
	}
	c.parts = nil
	return errors.Join(errs...)
}

func (c *Consumer) notify(format string, args ...any) {
	if c.opts.Notify != nil {
		c.opts.Notify(fmt.Sprintf(format, args...))
	}
}

// add starts reading partitions: from the group's committed offsets, or
// From (committed first, so that the group holds its place).
func (c *Consumer) add(parts []int32) error {
	var starts []offsets.Commit
	for _, p := range parts {
		l, err := c.store.Follower(c.topic, p)
		if err != nil {
			return err
		}
		// A partition taken over from another process may have been
		// opened (and left) long ago: its end as the writer has it now,
		// so that a commit past the end this log knew is not reset.
		if _, err := l.Refresh(); err != nil {
			return fmt.Errorf("%s: %w", storage.PartitionDir(c.topic, p), err)
		}
		start, committed, err := c.startOffset(l, p)
		if err != nil {
			return fmt.Errorf("%s: %w", storage.PartitionDir(c.topic, p), err)
		}
		pr := &partReader{p: p, l: l, r: l.NewReader(start), committed: -1}
		if committed {
			pr.committed = start
		} else if c.ost != nil {
			starts = append(starts, offsets.Commit{Topic: c.topic, Partition: p, Offset: start})
			pr.committed = start
		}
		c.parts = append(c.parts, pr)
	}
	slices.SortFunc(c.parts, func(a, b *partReader) int { return int(a.p - b.p) })
	if len(starts) > 0 {
		if err := c.ost.CommitBatch(c.opts.Group, starts); err != nil {
			return fmt.Errorf("commit the starting positions of group %s: %w", c.opts.Group, err)
		}
	}
	return nil
}

// startOffset returns where to start reading partition p, and whether
// that is the group's committed offset.
func (c *Consumer) startOffset(l *storage.Follower, p int32) (int64, bool, error) {
	name := storage.PartitionDir(c.topic, p)
	start, end := l.StartOffset(), l.EndOffset()
	g := c.opts.Group
	if c.ost != nil {
		pos, err := c.ost.Fetch(g, c.topic, p)
		switch {
		case err == nil && pos.Offset < start:
			c.notify("group %s: committed offset %d on %s is below the log start %d (retention deleted those records): resetting to %d", g, pos.Offset, name, start, start)
			return start, false, nil
		case err == nil && pos.Offset > end:
			c.notify("group %s: committed offset %d on %s is past the log end %d: resetting to %d", g, pos.Offset, name, end, end)
			return end, false, nil
		case err == nil:
			return pos.Offset, true, nil
		case !errors.Is(err, offsets.ErrNoCommit):
			return 0, false, err
		}
	}
	off, err := c.opts.From.Resolve(l, -1)
	if err != nil {
		return 0, false, err
	}
	switch {
	case off < start:
		c.notify("offset %d on %s is below the log start %d: starting at %d", off, name, start, start)
		off = start
	case off > end:
		c.notify("offset %d on %s is past the log end %d: starting at %d", off, name, end, end)
		off = end
	}
	return off, false, nil
}

// release stops reading a partition whose lease goes to another
// process: what the caller handled is committed already.
func (c *Consumer) release(p int32) error {
	c.parts = slices.DeleteFunc(c.parts, func(pr *partReader) bool { return pr.p == p })
	return nil
}

// rebalance looks at the group's leases again when it is time.
func (c *Consumer) rebalance() error {
	if c.leases == nil || time.Since(c.rebalanced) < LeaseInterval {
		return nil
	}
	c.rebalanced = time.Now()
	taken, err := c.leases.rebalance(c.release)
	if err != nil {
		return err
	}
	return c.add(taken)
}

// Poll returns up to max records (at least 1, at most MaxPoll) of one partition, the
// lowest partition that has any: a partition is read to its end before
// the next. At the end of every partition it returns io.EOF, or with
// Options.Follow waits for records until ctx is done (ctx.Err()). Through
// a broker, it returns the records the broker has for the group, of any
// partitions; without Follow, io.EOF once the broker has had nothing new
// for 2 s. The records are the caller's (Poll does not reuse them).
func (c *Consumer) Poll(ctx context.Context, max int) ([]Record, error) {
	n := min(max, MaxPoll)
	if n < 1 {
		n = 1
	}
	if c.broker != nil {
		return c.broker.poll(ctx, n, c.opts.Follow)
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := c.rebalance(); err != nil {
			return nil, err
		}
		for _, pr := range c.parts {
			recs, err := pr.read(n)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", storage.PartitionDir(c.topic, pr.p), err)
			}
			if len(recs) > 0 {
				return recs, nil
			}
		}
		if !c.opts.Follow {
			return nil, io.EOF
		}
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if c.leases != nil {
			// Look at the leases again in a while, records or not.
			wctx, cancel = context.WithTimeout(ctx, LeaseInterval)
		}
		pr, err := waitAny(wctx, c.parts)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil && wctx.Err() != nil:
		case err != nil:
			// Following failed (the partition was deleted, a file is
			// unreadable).
			return nil, fmt.Errorf("%s: waiting for records: %w", storage.PartitionDir(c.topic, pr.p), err)
		}
	}
}

// MaxPoll is the most records one Poll returns.
const MaxPoll = 500

// read returns up to max records of the partition from where it is,
// copied out of the reader's buffers.
func (pr *partReader) read(n int) ([]Record, error) {
	var recs []Record
	for len(recs) < n && pr.r.Next() {
		r := pr.r.Record()
		cp := storage.Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: clone(r.Key), Value: clone(r.Value)}
		for _, h := range r.Headers {
			cp.Headers = append(cp.Headers, segment.RecordHeader{Key: clone(h.Key), Value: clone(h.Value)})
		}
		recs = append(recs, Record{Partition: pr.p, Record: cp})
	}
	return recs, pr.r.Err()
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// Commit commits, for the group, the offset after the last of recs on
// each partition they are of: the caller has handled them. Committing
// before handling them reads each record at most once; after, at least
// once. It finishes even when the caller is being interrupted (within 30
// s through a broker). Without a group it does nothing.
func (c *Consumer) Commit(recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	if c.broker != nil {
		if err := c.broker.commit(recs); err != nil {
			return fmt.Errorf("commit for group %s: %w", c.opts.Group, err)
		}
		return nil
	}
	if c.ost == nil {
		return nil
	}
	next := map[int32]int64{}
	for _, r := range recs {
		next[r.Partition] = max(next[r.Partition], r.Offset+1)
	}
	for _, pr := range c.parts {
		off, ok := next[pr.p]
		if !ok || off == pr.committed {
			continue
		}
		if err := c.ost.Commit(c.opts.Group, c.topic, pr.p, off, ""); err != nil {
			return fmt.Errorf("commit offset %d for group %s: %w", off, c.opts.Group, err)
		}
		pr.committed = off
	}
	return nil
}

// waitAny waits until any partition has a record at its position, or ctx
// is done (ctx.Err()), or a wait fails: it returns the partition that
// failed and the error. Every wait has returned when it returns.
func waitAny(ctx context.Context, parts []*partReader) (*partReader, error) {
	if len(parts) == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		pr  *partReader
		err error
	}
	done := make(chan result, len(parts))
	for _, pr := range parts {
		go func() { done <- result{pr, pr.l.Wait(wctx, pr.r.Offset())} }()
	}
	first := <-done
	cancel()
	for range len(parts) - 1 {
		<-done
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return first.pr, first.err
}
