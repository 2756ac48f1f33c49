package kestrel

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/storage"
)

// registry holds the server's open queues, opening each on first use.
type registry struct {
	store *storage.Store
	ost   *offsets.Store
	opts  queue.Options

	// mu guards m and closed; a queue is opened and deleted under it, so
	// no get opens a queue that a delete is removing.
	mu     sync.Mutex
	m      map[string]*queue.Queue
	closed bool
}

func newRegistry(store *storage.Store, ost *offsets.Store, opts queue.Options) *registry {
	return &registry{store: store, ost: ost, opts: opts, m: make(map[string]*queue.Queue)}
}

// errBadName wraps storage's error for a queue name it refuses.
var errBadName = errors.New("bad queue name")

// get returns queue name, opening it (and creating it in the data
// directory) on first use.
func (r *registry) get(name string) (*queue.Queue, error) {
	if err := storage.ValidateTopic(name); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadName, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if q, ok := r.m[name]; ok {
		return q, nil
	}
	q, err := queue.Open(r.store, r.ost, name, r.opts)
	if err != nil {
		return nil, err
	}
	r.m[name] = q
	return q, nil
}

// names returns the names of the queues: those open and those in the
// data directory (queue.List: every topic queue.Group reads, a queue
// never got from included), sorted.
func (r *registry) names() []string {
	r.mu.Lock()
	out := make([]string, 0, len(r.m))
	for name := range r.m {
		out = append(out, name)
	}
	r.mu.Unlock()
	for _, name := range queue.List(r.store, r.ost) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// delete closes queue name and removes it: its items (the topic) and its
// position. A queue that does not exist reports false.
func (r *registry) delete(name string) (bool, error) {
	if err := storage.ValidateTopic(name); err != nil {
		return false, fmt.Errorf("%w: %w", errBadName, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, ErrClosed
	}
	found := false
	if q, ok := r.m[name]; ok {
		found = true
		delete(r.m, name)
		if err := q.Close(); err != nil && !errors.Is(err, queue.ErrClosed) {
			return true, err
		}
	}
	if err := r.store.DeleteTopic(name); err == nil {
		found = true
	} else if !errors.Is(err, storage.ErrUnknownTopic) {
		return found, err
	}
	if err := r.ost.DeleteTopic(name); err != nil {
		return found, err
	}
	return found, nil
}

// closeAll closes every open queue; later gets return ErrClosed.
func (r *registry) closeAll() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	var errs []error
	for name, q := range r.m {
		if err := q.Close(); err != nil && !errors.Is(err, queue.ErrClosed) {
			errs = append(errs, fmt.Errorf("queue %s: %w", name, err))
		}
		delete(r.m, name)
	}
	return errors.Join(errs...)
}
