package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// RepairOptions configure Repair.
type RepairOptions struct {
	CheckOptions
	// DryRun reports what Repair would do and changes nothing.
	DryRun bool
	// TruncateAtDamage cuts a partition at damage that the log does not
	// repair by itself (damage or a hole below the recovery point):
	// every offset from the damage to the end goes, and the report says
	// which. The bytes cut and the segments after are moved into the
	// quarantine folder, not deleted. Without it such damage is reported
	// and left as it is.
	TruncateAtDamage bool
}

// Repair actions.
const (
	ActionRebuildIndex = "rebuild-index" // a sealed segment's indexes moved aside and rebuilt from its .log
	ActionRecover      = "recover"       // the clean-shutdown marker removed: the open rescans from the recovery point
	ActionTruncate     = "truncate"      // the partition cut at damage
	ActionOpen         = "open"          // the log opened and closed: torn tails cut, leftovers removed, unusable files quarantined
)

// RepairAction is one thing Repair did (or, in a dry run, would do).
type RepairAction struct {
	Partition string
	Action    string
	File      string
	What      string
	// From and Upto are the offsets a truncation removes, [From, Upto);
	// -1 otherwise.
	From, Upto int64
	// Done is false in a dry run.
	Done bool
}

func (a RepairAction) String() string {
	verb := "would"
	if a.Done {
		verb = "did"
	}
	return fmt.Sprintf("%s %s: %s: %s", verb, a.Action, a.File, a.What)
}

// RepairReport is what Repair did and what is left.
type RepairReport struct {
	Dir    string
	DryRun bool
	// Before is what Check found first.
	Before  Report
	Actions []RepairAction
	// Left lists the problems left: after a repair, what Check finds
	// then; in a dry run, the problems that no action would repair.
	Left []Problem
}

// Repair acts on what Check finds in a partition directory, or in every
// partition of a data root: it rebuilds the missing or damaged indexes of
// sealed segments, has the log's own open cut torn tails, remove leftovers
// and move unusable files into quarantine, and, with TruncateAtDamage
// only, cuts a partition at damage the log does not repair by itself,
// reporting exactly which offsets go. Nothing is deleted that is not the
// engine's own leftover: what cannot be used moves into the quarantine
// folder. With DryRun it changes nothing and says what it would do. The
// partitions must not be open elsewhere (it takes their locks). The
// offsets store of a data root is not its business.
func Repair(dir string, opts RepairOptions) (RepairReport, error) {
	opts.CheckOptions = opts.CheckOptions.withDefaults()
	rep := RepairReport{Dir: dir, DryRun: opts.DryRun}
	parts, err := partitionDirs(opts.FS, dir)
	if err != nil {
		return rep, err
	}
	rep.Before.Dir = dir
	if !opts.DryRun {
		// A Store holds its root's lock, a Log its own directory's.
		root := dir
		if len(parts) == 1 && parts[0] == dir {
			root = filepath.Dir(dir)
		}
		lock, err := lockDir(root)
		if err != nil {
			return rep, err
		}
		defer lock.unlock()
	}
	for _, p := range parts {
		if err := repairPartition(opts, p, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func repairPartition(opts RepairOptions, dir string, rep *RepairReport) error {
	var lock *dirLock
	if !opts.DryRun {
		var err error
		if lock, err = lockDir(dir); err != nil {
			return err
		}
		defer lock.unlock()
	}
	probs, st, err := checkPartitionState(opts.CheckOptions, dir, false)
	if err != nil {
		return err
	}
	rep.Before.Partitions = append(rep.Before.Partitions, dir)
	rep.Before.Problems = append(rep.Before.Problems, probs...)
	if len(probs) == 0 {
		return nil
	}
	fsys := opts.FS
	var actions []RepairAction
	act := func(a RepairAction) { a.Partition, a.Done = dir, !opts.DryRun; actions = append(actions, a) }
	fixed := map[int]bool{} // problems (by index) an action repairs
	// The segments the repair keeps: up to the damage when it cuts.
	keep := len(st.bases)
	if st.damaged >= 0 && opts.TruncateAtDamage {
		keep = st.damaged + 1
	}
	segIndex := func(path string) int {
		for i, b := range st.bases {
			if filepath.Join(dir, segment.FileName(b, segment.LogSuffix)) == path {
				return i
			}
		}
		return -1
	}
	rebuilt := map[int]bool{}
	recoverLast := false
	for n, p := range probs {
		switch {
		case p.OpenRepairs:
			fixed[n] = true
		case p.Kind == ProblemIndex:
			i := segIndex(p.File)
			switch {
			case i < 0 || i >= keep:
				// A segment the truncation moves aside.
			case i == len(st.bases)-1 || i == keep-1 && keep < len(st.bases):
				// The segment that is (or becomes) the last: the open
				// after the marker's removal rescans it.
				fixed[n], recoverLast = true, true
			case st.ends[i].damage == nil:
				fixed[n] = true
				if !rebuilt[i] {
					rebuilt[i] = true
					act(RepairAction{Action: ActionRebuildIndex, File: p.File, What: "move its .index and .timeindex into " + QuarantineDir + " and rebuild them from the .log", From: -1, Upto: -1})
				}
			}
		}
	}
	var cut *RepairAction
	if st.damaged >= 0 {
		i := st.damaged
		sc := st.ends[i]
		end := st.ends[len(st.ends)-1].next
		for n, p := range probs {
			if p.CutAtDamage() && opts.TruncateAtDamage {
				fixed[n] = true
			}
		}
		if opts.TruncateAtDamage {
			path := filepath.Join(dir, segment.FileName(st.bases[i], segment.LogSuffix))
			what := fmt.Sprintf("cut at byte %d: offsets %d to %d go (the bytes cut and %d later segments move into %s)", sc.end, sc.next, max(end, sc.next+1)-1, len(st.bases)-1-i, QuarantineDir)
			if end <= sc.next {
				what = fmt.Sprintf("cut at byte %d: no offset goes (the bytes cut and %d later segments move into %s)", sc.end, len(st.bases)-1-i, QuarantineDir)
			}
			act(RepairAction{Action: ActionTruncate, File: path, What: what, From: sc.next, Upto: max(end, sc.next)})
			cut = &actions[len(actions)-1]
			recoverLast = true
		}
	}
	if recoverLast && cut == nil {
		act(RepairAction{Action: ActionRecover, File: filepath.Join(dir, cleanShutdownFile), What: "remove the clean-shutdown marker so that the open rescans the last segment and rebuilds its indexes", From: -1, Upto: -1})
	}
	act(RepairAction{Action: ActionOpen, File: dir, What: "open and close the log: it cuts torn tails, removes its leftovers and moves unusable files into " + QuarantineDir, From: -1, Upto: -1})
	rep.Actions = append(rep.Actions, actions...)
	if opts.DryRun {
		for n, p := range probs {
			if !fixed[n] {
				rep.Left = append(rep.Left, p)
			}
		}
		return nil
	}

	// Act.
	for i := range rebuilt {
		if err := rebuildSealedIndexes(opts, dir, st.bases[i], st.bases[i+1]); err != nil {
			return err
		}
	}
	if cut != nil {
		if err := cutAtDamage(opts, dir, st); err != nil {
			return err
		}
	}
	if recoverLast {
		for _, name := range []string{cleanShutdownFile, manifestFile} {
			if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("storage: repair %s: %w", dir, err)
			}
		}
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("storage: repair %s: %w", dir, err)
		}
	}
	lock.unlock() // the log takes it
	l, err := Open(dir, Options{FS: fsys, Limits: opts.Limits})
	if err != nil {
		return fmt.Errorf("storage: repair %s: reopen: %w", dir, err)
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("storage: repair %s: close: %w", dir, err)
	}
	after, err := checkPartition(opts.CheckOptions, dir)
	if err != nil {
		return err
	}
	rep.Left = append(rep.Left, after...)
	return nil
}

// rebuildSealedIndexes moves a sealed segment's index files into
// quarantine and rebuilds them from its .log (the segment's own rebuild of
// missing indexes, made durable before it returns).
func rebuildSealedIndexes(opts RepairOptions, dir string, base, next int64) error {
	for _, suffix := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
		name := segment.FileName(base, suffix)
		if _, err := opts.FS.Lstat(filepath.Join(dir, name)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if _, err := quarantineFile(opts.FS, nil, dir, name, "replaced by a rebuilt index (seglog repair)", 0o750); err != nil {
			return err
		}
	}
	seg := segment.Open(dir, base, next, Options{FS: opts.FS, Limits: opts.Limits}.withDefaults().segmentOptions())
	_, _, err := seg.Find(base)
	if cerr := seg.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: repair: rebuild the indexes of %s: %w", seg.LogPath(), err)
	}
	return nil
}

// cutAtDamage cuts the partition at the first damage the log does not
// repair by itself: the bytes of that segment from the damage on are
// copied into quarantine and cut, its indexes and every later segment move
// into quarantine, the recovery point is lowered to the cut (a rescan
// rebuilds the indexes) and the clean-shutdown marker removed, each step
// durable before the next.
func cutAtDamage(opts RepairOptions, dir string, st partitionState) error {
	fsys := opts.FS
	i := st.damaged
	sc := st.ends[i]
	name := segment.FileName(st.bases[i], segment.LogSuffix)
	path := filepath.Join(dir, name)
	if sc.size > sc.end {
		if err := copyTail(fsys, path, filepath.Join(dir, QuarantineDir), name+".from-byte-"+strconv.FormatInt(sc.end, 10), sc.end); err != nil {
			return err
		}
	}
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("storage: repair: %w", err)
	}
	err = f.Truncate(sc.end)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: repair: cut %s at %d: %w", path, sc.end, err)
	}
	why := fmt.Sprintf("cut away by seglog repair at offset %d", sc.next)
	for _, suffix := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
		n := segment.FileName(st.bases[i], suffix)
		if _, err := fsys.Lstat(filepath.Join(dir, n)); err == nil {
			if _, err := quarantineFile(fsys, nil, dir, n, "the index of a segment cut by seglog repair (rebuilt)", 0o750); err != nil {
				return err
			}
		}
	}
	for _, b := range st.bases[i+1:] {
		if _, err := quarantineSegment(fsys, nil, dir, b, why, 0o750); err != nil {
			return err
		}
	}
	rp := sc.next
	if st.haveRP {
		rp = min(rp, st.rp)
	}
	if err := writeCheckpoint(fsys, dir, recoveryPointFile, rp, 0o640); err != nil {
		return err
	}
	for _, n := range []string{cleanShutdownFile, manifestFile} {
		if err := fsys.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("storage: repair %s: %w", dir, err)
		}
	}
	return fsys.SyncDir(dir)
}

// copyTail copies the bytes of the file at path from pos on into a new
// file qdir/name, durably.
func copyTail(fsys vfs.FS, path, qdir, name string, pos int64) error {
	if err := fsys.MkdirAll(qdir, 0o750); err != nil {
		return err
	}
	src, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := fsys.OpenFile(filepath.Join(qdir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("storage: repair: %w", err)
	}
	_, err = io.Copy(dst, io.NewSectionReader(src, pos, 1<<62))
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.SyncDir(qdir)
	}
	if err != nil {
		return fmt.Errorf("storage: repair: keep the bytes cut from %s: %w", path, err)
	}
	return nil
}
