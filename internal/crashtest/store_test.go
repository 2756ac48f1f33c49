package crashtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// storeTopics are the names the topics workload creates and deletes.
var storeTopics = []string{"a", "b", "c"}

// storeConfigs are the configurations topics are created with and
// altered to: the store's defaults (no file) and configurations that
// change nothing of how the logs write, so that only the file counts.
var storeConfigs = []storage.TopicConfig{
	{},
	{RetentionBytes: 1 << 20},
	{RetentionAge: 3600e9, RetentionConsumed: true},
	{RetentionBytes: 2 << 20, IndexIntervalBytes: 128},
}

// topicModel is what an acknowledged topic must be after a crash.
type topicModel struct {
	cfg  storage.TopicConfig
	logs []*logModel // one per partition
}

// pendingOp is a topic operation that failed (the crash): after the
// crash it may have happened or not, and a client retries it.
type pendingOp struct {
	kind  string // "create", "alter", "delete"
	topic string
	parts int
	cfg   storage.TopicConfig // create and alter: the new configuration
}

// storeWorkload creates, alters and deletes topics of a store, appends
// to their partitions (SyncAlways), advances their start offsets and
// reopens the store. The invariants after a crash: an acknowledged topic
// is there with its partitions and its configuration in every partition
// directory, and its records as the log workloads require them (none
// below an acknowledged start comes back); a topic nobody created or that
// was deleted is absent; the configuration a topic reports
// (Store.TopicConfig) is the one every partition directory holds; and a
// topic operation that the crash interrupted completes when retried.
type storeWorkload struct {
	seed    uint64
	steps   int
	topics  map[string]*topicModel
	pending *pendingOp
	incarn  int // numbers the partition models, so that values never repeat
}

func (w *storeWorkload) dir(root string) string { return filepath.Join(root, "store") }

// newLogs returns the models of n new partitions; their record values
// differ from those of every other partition ever made.
func (w *storeWorkload) newLogs(n int) []*logModel {
	logs := make([]*logModel, n)
	for p := range logs {
		w.incarn++
		logs[p] = newLogModel(true)
		logs[p].seq = w.incarn * 100_000
	}
	return logs
}

func (w *storeWorkload) openStore(fsys vfs.FS, root string) (*storage.Store, error) {
	return storage.OpenStore(w.dir(root), storage.StoreOptions{Log: logOptions(fsys, storage.SyncAlways)})
}

func (w *storeWorkload) Run(fsys vfs.FS, root string) (err error) {
	w.topics = map[string]*topicModel{}
	rng := rand.New(rand.NewPCG(w.seed, 5))
	st, err := w.openStore(fsys, root)
	if err != nil {
		return err
	}
	defer func() {
		if st != nil {
			if cerr := st.Close(); err == nil {
				err = cerr
			}
		}
	}()
	for i := 0; i < w.steps; i++ {
		topic := storeTopics[rng.IntN(len(storeTopics))]
		tm := w.topics[topic]
		cfg := storeConfigs[rng.IntN(len(storeConfigs))]
		k := rng.IntN(12)
		switch {
		case tm == nil || k < 1:
			// Create (again: a no-op, or more partitions).
			parts := 1 + rng.IntN(3)
			if tm != nil {
				parts = max(parts, len(tm.logs))
				cfg = tm.cfg // added partitions take the topic's config
			}
			w.pending = &pendingOp{kind: "create", topic: topic, parts: parts, cfg: cfg}
			if err := st.CreateTopic(topic, parts, cfg); err != nil {
				return err
			}
			if tm == nil {
				tm = &topicModel{cfg: cfg}
				w.topics[topic] = tm
			}
			tm.logs = append(tm.logs, w.newLogs(parts-len(tm.logs))...)
		case k < 6:
			p := rng.IntN(len(tm.logs))
			l, err := st.Log(topic, int32(p))
			if err != nil {
				return err
			}
			if err := (&logRun{m: tm.logs[p], l: l, rng: rng}).append(3); err != nil {
				return err
			}
		case k < 8:
			w.pending = &pendingOp{kind: "alter", topic: topic, parts: len(tm.logs), cfg: cfg}
			if err := st.AlterTopic(topic, cfg); err != nil {
				return err
			}
			tm.cfg = cfg
		case k < 10:
			if err := w.advance(st, rng, topic, tm); err != nil {
				return err
			}
		case k < 11:
			w.pending = &pendingOp{kind: "delete", topic: topic, parts: len(tm.logs)}
			if err := st.DeleteTopic(topic); err != nil {
				return err
			}
			delete(w.topics, topic)
		default:
			err := st.Close()
			st = nil
			if err != nil {
				return err
			}
			if st, err = w.openStore(fsys, root); err != nil {
				return err
			}
		}
		w.pending = nil
	}
	return nil
}

// advance moves the start of the topic's partitions to random offsets
// with one AdvanceStartOffsets.
func (w *storeWorkload) advance(st *storage.Store, rng *rand.Rand, topic string, tm *topicModel) error {
	var targets []storage.PartitionOffset
	for p, m := range tm.logs {
		if m.end == 0 {
			continue
		}
		off := m.ackedStart + rng.Int64N(m.end-m.ackedStart+1)
		m.deleteReq = max(m.deleteReq, off)
		targets = append(targets, storage.PartitionOffset{Topic: topic, Partition: int32(p), Offset: off})
	}
	if err := st.AdvanceStartOffsets(targets); err != nil {
		return err
	}
	for p, m := range tm.logs {
		l, err := st.Log(topic, int32(p))
		if err != nil {
			return err
		}
		m.ackedStart = max(m.ackedStart, l.StartOffset())
	}
	return nil
}

func (w *storeWorkload) Check(fsys vfs.FS, root string) (checked int, err error) {
	st, err := w.openStore(fsys, root)
	if err != nil {
		return 0, fmt.Errorf("reopen store: %w", err)
	}
	defer func() {
		if cerr := st.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close store after the check: %w", cerr)
		}
	}()
	var errs []error
	found := map[string]int{}
	for _, ti := range st.Topics() {
		found[ti.Name] = ti.Partitions
		// Whatever happened, once its partitions are open, the
		// configuration the topic reports is the one every partition
		// directory holds.
		for p := 0; p < ti.Partitions; p++ {
			if _, err := st.Log(ti.Name, int32(p)); err != nil {
				errs = append(errs, fmt.Errorf("topic %s partition %d: %w", ti.Name, p, err))
			}
		}
		if err := w.consistent(root, st, ti.Name, ti.Partitions); err != nil {
			errs = append(errs, err)
		}
	}
	pend := w.pending
	for _, topic := range storeTopics {
		tm, n := w.topics[topic], found[topic]
		inFlight := pend != nil && pend.topic == topic
		switch {
		case tm == nil && n > 0 && !(inFlight && pend.kind == "create"):
			errs = append(errs, fmt.Errorf("topic %s has %d partitions, but it was never created or was deleted", topic, n))
		case tm != nil && n < len(tm.logs) && !(inFlight && pend.kind == "delete"):
			errs = append(errs, fmt.Errorf("topic %s has %d partitions, %d were acknowledged", topic, n, len(tm.logs)))
		}
		if tm == nil {
			continue
		}
		if !inFlight || pend.kind == "delete" {
			if err := w.configIs(root, topic, min(n, len(tm.logs)), tm.cfg); err != nil {
				errs = append(errs, err)
			}
		}
		for p := 0; p < min(n, len(tm.logs)); p++ {
			l, err := st.Log(topic, int32(p))
			if err != nil {
				errs = append(errs, fmt.Errorf("topic %s partition %d: %w", topic, p, err))
				continue
			}
			c, err := tm.logs[p].check(l)
			checked += c
			if err != nil {
				errs = append(errs, fmt.Errorf("topic %s partition %d: %w", topic, p, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return checked, err
	}
	if pend != nil {
		return checked, w.retry(st, root, pend)
	}
	return checked, nil
}

// retry runs the interrupted operation again, as its client would, and
// checks that it completes.
func (w *storeWorkload) retry(st *storage.Store, root string, pend *pendingOp) error {
	var err error
	switch pend.kind {
	case "create":
		err = st.CreateTopic(pend.topic, pend.parts, pend.cfg)
	case "alter":
		err = st.AlterTopic(pend.topic, pend.cfg)
	case "delete":
		err = st.DeleteTopic(pend.topic)
		if errors.Is(err, storage.ErrUnknownTopic) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("retrying the interrupted %s of %s: %w", pend.kind, pend.topic, err)
	}
	if pend.kind == "delete" {
		if n, err := st.Partitions(pend.topic); err == nil {
			return fmt.Errorf("topic %s has %d partitions after its deletion was retried", pend.topic, n)
		}
	} else if err := w.configIs(root, pend.topic, pend.parts, pend.cfg); err != nil {
		return fmt.Errorf("after retrying the interrupted %s: %w", pend.kind, err)
	}
	// The retry is acknowledged: later checks expect its outcome.
	tm := w.topics[pend.topic]
	switch {
	case pend.kind == "delete":
		delete(w.topics, pend.topic)
	case tm == nil:
		w.topics[pend.topic] = &topicModel{cfg: pend.cfg, logs: w.newLogs(pend.parts)}
	default:
		tm.cfg = pend.cfg
		tm.logs = append(tm.logs, w.newLogs(pend.parts-len(tm.logs))...)
	}
	w.pending = nil
	return nil
}

// configIs checks that the first n partition directories of a topic hold
// the configuration want.
func (w *storeWorkload) configIs(root, topic string, n int, want storage.TopicConfig) error {
	for p := 0; p < n; p++ {
		got, err := storage.ReadTopicConfig(filepath.Join(w.dir(root), storage.PartitionDir(topic, int32(p))))
		if err != nil {
			return fmt.Errorf("topic %s partition %d: %w", topic, p, err)
		}
		if got != want {
			return fmt.Errorf("topic %s partition %d has the configuration %+v, %+v was acknowledged", topic, p, got, want)
		}
	}
	return nil
}

// consistent checks that every partition directory of a topic holds the
// configuration the store reports for the topic.
func (w *storeWorkload) consistent(root string, st *storage.Store, topic string, n int) error {
	cfg, err := st.TopicConfig(topic)
	if err != nil {
		return fmt.Errorf("topic %s: %w", topic, err)
	}
	var differ []int
	for p := 0; p < n; p++ {
		got, err := storage.ReadTopicConfig(filepath.Join(w.dir(root), storage.PartitionDir(topic, int32(p))))
		if err != nil {
			return fmt.Errorf("topic %s partition %d: %w", topic, p, err)
		}
		if got != cfg {
			differ = append(differ, p)
		}
	}
	if len(differ) > 0 {
		slices.Sort(differ)
		return fmt.Errorf("topic %s reports the configuration %+v, but partitions %v hold another: half written", topic, cfg, differ)
	}
	return nil
}

// The store workloads, by name.
var storeWorkloads = map[string]func() Workload{
	// Topics created, altered, deleted and created again, with appends,
	// start offsets advanced and reopens between.
	"store/topics": func() Workload { return &storeWorkload{seed: 31, steps: 70} },
}
