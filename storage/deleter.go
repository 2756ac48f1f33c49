package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
)

// A Store removes the files of the segments that AdvanceStartOffsets took
// out of its logs in the background, as Kafka's log manager deletes
// segments asynchronously once the log start offset has moved: the
// caller waits only for the one durable write of the new start offsets,
// not for the unlinks of every segment's three files.
//
// Why this is safe. The start offsets are durable (the store's
// log-start-offset-checkpoint) before a segment leaves a log, and a
// segment leaves the log's list before its files are touched: readers
// get ErrOffsetOutOfRange below the new start, and one that loaded the
// list before finishes its read from the files, which are still there,
// or, once they are removed, retries and gets ErrOffsetOutOfRange (a
// Region's WriteTo already under way works on its own descriptor and
// still sends it whole; one that begins after the removal gets
// ErrOffsetOutOfRange).
// Files that a crash or a Close leaves behind lie below the durable start
// offset, and the next open of the partition removes them (Log.load), so
// the deleter keeps no state on disk: Kafka renames a segment to
// ".deleted" first so that a restart finds it, and waits
// file.delete.delay.ms for readers of the old file; here the durable start
// offset marks what is garbage, and a reader holds the segment's lock (or
// its own descriptor) while it reads, so the files go as soon as a worker
// gets to them.
//
// What a worker does for one log, under its writeMu: the clean-shutdown
// marker's removal is made durable (a directory fsync, once per open, as
// before any change of the log's files), the partition's own
// log-start-offset file is replaced without fsync (for followers, which
// drop the segments below it before their files go, and for a standalone
// open), then the files are removed, with no directory fsync. A removal
// that fails leaves the segment in the log's pendingDelete: it is tried
// again with the store's next deletion, by DeleteSegmentsBefore, or by the
// next open; WaitDeleted reports it meanwhile.
//
// Close stops the workers after the log each has in hand and waits for
// them; the logs still queued keep their files (below the durable start,
// removed by the next open), and their own log-start-offset file is
// written so that a standalone open agrees.

// deleteWorkers is how many goroutines remove files at once: several, so
// that the directory fsyncs that logs opened after a clean shutdown need
// (one per log) overlap. With 1,000 such partitions (see retention's
// BenchmarkRunOnce1000x20) 1 worker frees the space in about 2.5 s, 4 in
// 1.4 s, 8 in 0.9 s, 16 no faster.
const deleteWorkers = 8

// deleter is the store's background remover of deleted segments' files.
// Its mu is taken last: nothing is locked while holding it (a worker
// takes a log's writeMu with it released), and AdvanceStartOffsets
// queues logs while it holds their writeMu.
type deleter struct {
	mu      sync.Mutex
	queue   []*Log         // logs with files to remove, in arrival order
	queued  map[*Log]bool  // the logs in queue
	failed  map[*Log]error // logs whose last removal failed
	workers int            // goroutines running
	stopped bool           // the store is closing: no more work starts
	idle    chan struct{}  // closed when the last worker exits; nil while none runs
	wg      sync.WaitGroup // the workers
}

// add queues logs whose segments left them, with the logs whose last
// removal failed (tried again), and starts workers as needed. After stop
// it queues nothing and returns false: the files wait for the next open.
func (d *deleter) add(logs ...*Log) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return false
	}
	if d.queued == nil {
		d.queued, d.failed = map[*Log]bool{}, map[*Log]error{}
	}
	for _, l := range append(slices.Collect(maps.Keys(d.failed)), logs...) {
		if !d.queued[l] {
			d.queued[l] = true
			d.queue = append(d.queue, l)
		}
	}
	for d.workers < deleteWorkers && d.workers < len(d.queue) {
		if d.workers == 0 {
			d.idle = make(chan struct{})
		}
		d.workers++
		d.wg.Add(1)
		go d.work()
	}
	return true
}

// work removes the files of queued logs until the queue is empty or the
// store stops it.
func (d *deleter) work() {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		if d.stopped || len(d.queue) == 0 {
			d.workers--
			if d.workers == 0 {
				close(d.idle)
				d.idle = nil
			}
			d.mu.Unlock()
			return
		}
		l := d.queue[0]
		d.queue[0] = nil
		d.queue = d.queue[1:]
		delete(d.queued, l)
		d.mu.Unlock()

		err := l.removeDropped(true)

		d.mu.Lock()
		if err != nil {
			d.failed[l] = err
		} else {
			delete(d.failed, l)
		}
		d.mu.Unlock()
	}
}

// stop stops the workers after the log each has in hand, waits for them,
// and returns the logs whose files were not all removed.
func (d *deleter) stop() []*Log {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	left := append(slices.Collect(maps.Keys(d.failed)), d.queue...)
	d.queue, d.queued, d.failed = nil, nil, nil
	return left
}

// DeletionFailure is a partition whose deleted segments' files the store
// could not all remove in the background.
type DeletionFailure struct {
	Topic     string
	Partition int32
	Err       error
}

// DeletionFailures lists the partitions, sorted, whose last background
// removal of files failed and that still hold such files (a later
// DeleteSegmentsBefore may have removed them). The files are tried again
// with the store's next deletion; a caller may also retry at once with
// DeleteSegmentsBefore(StartOffset()), as the retention cleaner does.
func (s *Store) DeletionFailures() []DeletionFailure {
	failed := s.deleter.failures()
	out := make([]DeletionFailure, 0, len(failed))
	for l, err := range failed {
		if !l.hasPendingDeletes() {
			s.deleter.clearFailure(l)
			continue
		}
		topic, p, _ := ParsePartitionDir(filepath.Base(l.dir))
		out = append(out, DeletionFailure{Topic: topic, Partition: p, Err: err})
	}
	slices.SortFunc(out, func(a, b DeletionFailure) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// failures returns a copy of the failed logs and their errors.
func (d *deleter) failures() map[*Log]error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.failed)
}

// clearFailure forgets a log's failure (its files are gone since).
func (d *deleter) clearFailure(l *Log) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.failed, l)
}

// WaitDeleted waits until the files of every segment that
// AdvanceStartOffsets took out of a log before the call are removed,
// until ctx is done (its error), or until Close stops the removal
// (ErrClosed: the files left lie below the durable start offsets, and
// the next open removes them). It returns the errors of the removals
// that failed; those files are tried again with the store's next
// deletion. The start offsets are durable before WaitDeleted is needed:
// it only tells when the space is free.
func (s *Store) WaitDeleted(ctx context.Context) error {
	d := &s.deleter
	d.mu.Lock()
	idle := d.idle
	d.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d.mu.Lock()
	stopped := d.stopped
	d.mu.Unlock()
	if stopped {
		return ErrClosed
	}
	var errs []error
	for _, f := range s.DeletionFailures() {
		errs = append(errs, f.Err)
	}
	return errors.Join(errs...)
}

// hasPendingDeletes says whether segments taken out of the log still have
// files to remove.
func (l *Log) hasPendingDeletes() bool {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	return len(l.pendingDelete) > 0 && !l.closed.Load()
}

// removeDropped removes the files of the segments taken out of the log
// (pendingDelete), as the store's deleter: producers that expired with
// them are dropped, the clean-shutdown marker's removal is made durable,
// the log-start-offset file is written without fsync, then the files go.
// With remove false (the store is closing) only the log-start-offset file
// is written and the segments' files are closed, not removed: they lie
// below the durable start and the next open removes them. On a closed log
// it only closes the segments' files.
func (l *Log) removeDropped(remove bool) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	return l.removeDroppedLocked(remove)
}

// removeDroppedLocked is removeDropped with writeMu held.
func (l *Log) removeDroppedLocked(remove bool) error {
	if len(l.pendingDelete) == 0 {
		return nil
	}
	if l.closed.Load() {
		for _, s := range l.pendingDelete {
			_ = s.Close()
		}
		return nil
	}
	if !remove {
		for _, s := range l.pendingDelete {
			_ = s.Close()
		}
		return l.writeStartFileLocked()
	}
	l.repl.producers.expire(l.start.Load(), l.opts.Now().Add(-l.opts.ProducerExpiry).UnixMilli())
	if err := l.durableMarkerRemovalLocked(); err != nil {
		return fmt.Errorf("storage: delete segments of %s: %w", l.dir, err)
	}
	if err := l.writeStartFileLocked(); err != nil {
		return err
	}
	_, err := l.removePendingLocked()
	return err
}
