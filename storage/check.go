package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Severity says how bad a Problem is.
type Severity int

// The severities of a Problem.
const (
	// SeverityWarning: nothing acknowledged is lost or unreadable (a torn
	// tail past the recovery point, a leftover file).
	SeverityWarning Severity = iota + 1
	// SeverityError: data or derived data is damaged or missing.
	SeverityError
)

func (s Severity) String() string {
	switch s {
	case SeverityWarning:
		return "warning"
	case SeverityError:
		return "error"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// ProblemKind says what a Problem is about.
type ProblemKind string

// The kinds of Problem.
const (
	// ProblemDamage: a batch fails its checks (checksum, header, offsets)
	// or bytes follow the last batch that are not a zero tail.
	ProblemDamage ProblemKind = "damage"
	// ProblemTornTail: damage at the end of the last segment, past the
	// recovery point: what a crash leaves of writes never fsynced.
	ProblemTornTail ProblemKind = "torn-tail"
	// ProblemHole: offsets missing between segments, or a log that ends
	// below its recovery point.
	ProblemHole ProblemKind = "hole"
	// ProblemIndex: an index file missing, unreadable, or disagreeing
	// with the batches of its .log.
	ProblemIndex ProblemKind = "index"
	// ProblemUnusableFile: a file the log cannot use (an index without
	// its .log, a temporary file that is not the engine's): the next open
	// moves it into quarantine.
	ProblemUnusableFile ProblemKind = "unusable-file"
	// ProblemLeftover: a leftover of the engine's own interrupted writes
	// or deletions: the next open removes it.
	ProblemLeftover ProblemKind = "leftover"
	// ProblemRefused: a name or file type the log refuses to open.
	ProblemRefused ProblemKind = "refused"
	// ProblemCheckpoint: a checkpoint file that cannot be read.
	ProblemCheckpoint ProblemKind = "checkpoint"
)

// Problem is one thing wrong in a partition directory.
type Problem struct {
	Kind ProblemKind
	// Partition is the partition directory.
	Partition string
	// File is the file the problem is in.
	File string
	// Pos is the byte position in File (-1: not about a position).
	Pos int64
	// From and Upto are the offsets concerned, [From, Upto) (-1: none
	// or unknown).
	From, Upto int64
	// What says what is wrong.
	What     string
	Severity Severity
	// OpenRepairs says whether opening the log repairs it by itself (a
	// torn tail cut, a leftover removed, an unusable file moved aside).
	// Problems it does not repair make it refuse to open or to write, or
	// stay until Repair.
	OpenRepairs bool
}

func (p Problem) String() string {
	var where string
	if p.Pos >= 0 {
		where = fmt.Sprintf(" at byte %d", p.Pos)
	}
	var offs string
	if p.From >= 0 && p.Upto > p.From {
		offs = fmt.Sprintf(" (offsets %d to %d)", p.From, p.Upto-1)
	} else if p.From >= 0 {
		offs = fmt.Sprintf(" (from offset %d)", p.From)
	}
	fix := "repair needed"
	if p.OpenRepairs {
		fix = "the next open repairs it"
	}
	return fmt.Sprintf("%s: %s%s%s: %s [%s, %s]", p.Severity, p.File, where, offs, p.What, p.Kind, fix)
}

// CutAtDamage reports whether the problem is one that only
// RepairOptions.TruncateAtDamage repairs: damage or a hole that opening
// the log does not repair by itself.
func (p Problem) CutAtDamage() bool {
	return !p.OpenRepairs && (p.Kind == ProblemDamage || p.Kind == ProblemHole)
}

// Report is what Check found.
type Report struct {
	Dir        string
	Partitions []string // the partition directories checked
	// Stats are what the check read of each partition, in the order of
	// Partitions.
	Stats    []PartitionStats
	Problems []Problem
	// Writing are the partitions a writer held during the check: each
	// was checked up to the last whole batch a read-only follower saw,
	// and the tail being written after it is not judged.
	Writing []WritingTail
}

// PartitionStats is what Check read of a partition: up to the first
// damage of each segment (and, beside a writer, up to the follower's end).
type PartitionStats struct {
	Segments, Batches, Records int64
	// Bytes are the bytes of the valid batches read.
	Bytes int64
	// End is the offset after the last valid batch of the last segment
	// (the first segment's base offset, or 0, when there is none).
	End int64
	// RecoveryPoint is the recovery-point checkpoint (-1: none).
	RecoveryPoint int64
	// Clean says the clean-shutdown marker is there.
	Clean bool
}

// Errors returns how many problems are errors.
func (r Report) Errors() int {
	n := 0
	for _, p := range r.Problems {
		if p.Severity == SeverityError {
			n++
		}
	}
	return n
}

// CheckOptions configure Check and Repair. The zero value is usable.
type CheckOptions struct {
	// FS is the filesystem (default vfs.Default).
	FS vfs.FS
	// Limits bound the batches (default segment.DefaultLimits).
	Limits segment.Limits
	// Records makes Check also decode every record of every valid batch
	// (slower: it decompresses). Recovery does not: a batch whose
	// checksum matches but whose records do not decode is kept, and
	// reads of it fail.
	Records bool
}

func (o CheckOptions) withDefaults() CheckOptions {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Limits.MaxBatchBytes <= 0 {
		o.Limits = segment.DefaultLimits
	}
	return o
}

// maxIndexCheckBytes bounds what Check reads of an index file.
const maxIndexCheckBytes = 1 << 30

// Check reports the problems of a partition directory, or of every
// partition of a data root, as structured values, changing nothing. It
// applies the rules recovery applies, with recovery's own scan (the same
// validating segment.Scanner walk, up to the same damage): damage below the
// recovery point is an error the log refuses to write past; past it, in
// the last segment, a torn tail the next open cuts. It also checks each
// segment's indexes against its batches (index.Checker), the active
// segment's too.
//
// A partition a writer holds (its lock, or its store's, is held: a broker
// or seglog produce is running) is read through a read-only follower
// (OpenFollower): up to the last whole batch the follower sees, and
// the tail being written after it is not judged (Report.Writing says so);
// nor are the writer's own leftovers (the temporary file of a checkpoint
// it is writing), nor a segment retention deletes during the check, by
// this writer or one that opened the partition after the check began (the
// follower's rule: a writer advances the log start offset before it
// deletes). An error is returned only when a directory cannot be read.
func Check(dir string, opts CheckOptions) (Report, error) {
	opts = opts.withDefaults()
	rep := Report{Dir: dir}
	parts, err := partitionDirs(opts.FS, dir)
	if err != nil {
		return rep, err
	}
	for _, p := range parts {
		probs, st, err := checkPartitionState(opts, p, true)
		if err != nil {
			return rep, err
		}
		rep.Partitions = append(rep.Partitions, p)
		rep.Stats = append(rep.Stats, st.stats)
		rep.Problems = append(rep.Problems, probs...)
		if st.live != nil {
			rep.Writing = append(rep.Writing, WritingTail{Partition: p, From: st.live.end})
		}
	}
	return rep, nil
}

// partitionDirs returns dir when it is a partition directory (named like
// one, or holding segments: a Log's directory may have any name), else the
// partition directories of the data root dir.
func partitionDirs(fsys vfs.FS, dir string) ([]string, error) {
	if isPartitionDir(dir) {
		return []string{dir}, nil
	}
	if pl, err := listPartition(fsys, dir); err == nil && len(pl.Segments) > 0 {
		return []string{dir}, nil
	}
	rl, err := listRoot(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range rl.Partitions {
		if !p.Symlink {
			out = append(out, filepath.Join(dir, p.Name))
		}
	}
	return out, nil
}

// partitionState is what checkPartition read of a partition's checkpoints
// and listing: what Repair acts on besides the problems.
type partitionState struct {
	bases   []int64
	clean   bool
	rp      int64 // 0 when none
	haveRP  bool
	ends    []logScan // per segment
	damaged int       // index of the first segment with damage or a hole the open does not repair (-1: none)
	live    *liveView // a writer held the partition: what its follower saw
	stats   PartitionStats
}

// checkPartition checks a partition no writer holds (Repair's, under the
// lock it took).
func checkPartition(opts CheckOptions, dir string) ([]Problem, error) {
	probs, _, err := checkPartitionState(opts, dir, false)
	return probs, err
}

// checkPartitionState checks the partition directory dir; with
// detectLive, a partition a writer holds is checked through a follower.
func checkPartitionState(opts CheckOptions, dir string, detectLive bool) ([]Problem, partitionState, error) {
	fsys := opts.FS
	st := partitionState{damaged: -1}
	pl, err := listPartition(fsys, dir)
	if err != nil {
		return nil, st, err
	}
	var probs []Problem
	add := func(p Problem) { p.Partition = dir; probs = append(probs, p) }
	refused := false
	liveDir := detectLive && partitionHeld(dir)
	for _, f := range pl.Files {
		path := filepath.Join(dir, f.Name)
		switch f.Kind {
		case fileLeftover:
			if ownLeftover(f.Name) {
				if liveDir {
					continue // a file the writer is writing now
				}
				add(Problem{Kind: ProblemLeftover, File: path, Pos: -1, From: -1, Upto: -1, What: f.Why, Severity: SeverityWarning, OpenRepairs: true})
			} else {
				add(Problem{Kind: ProblemUnusableFile, File: path, Pos: -1, From: -1, Upto: -1, What: f.Why + "; the next open moves it into " + QuarantineDir, Severity: SeverityWarning, OpenRepairs: true})
			}
		case fileRefused:
			refused = true
			add(Problem{Kind: ProblemRefused, File: path, Pos: -1, From: -1, Upto: -1, What: f.Why + " (the log refuses to open)", Severity: SeverityError})
		}
	}
	if pl.Refused != nil && !refused {
		add(Problem{Kind: ProblemRefused, File: dir, Pos: -1, From: -1, Upto: -1, What: pl.Refused.Error(), Severity: SeverityError})
	}
	st.bases, st.clean = pl.Segments, pl.Clean
	st.stats.Clean, st.stats.RecoveryPoint = pl.Clean, -1
	for _, name := range []string{recoveryPointFile, logStartOffsetFile} {
		v, ok, err := readCheckpoint(fsys, dir, name)
		if err != nil {
			add(Problem{Kind: ProblemCheckpoint, File: filepath.Join(dir, name), Pos: -1, From: -1, Upto: -1, What: err.Error() + "; the next open does without it (a full rescan)", Severity: SeverityWarning, OpenRepairs: true})
			continue
		}
		if name == recoveryPointFile {
			st.rp, st.haveRP = v, ok
			if ok {
				st.stats.RecoveryPoint = v
			}
		}
	}
	// The checkpoints were read before the follower opens: what the
	// follower sees is at or past the recovery point they name.
	if liveDir {
		v, err := followerView(opts, dir)
		if err != nil {
			add(Problem{Kind: ProblemRefused, File: dir, Pos: -1, From: -1, Upto: -1, What: fmt.Sprintf("held by a writer, and a read-only follower cannot open it: %v", err), Severity: SeverityError})
			return probs, st, nil
		}
		st.live = &v
	}
	durable := int64(0)
	if st.haveRP {
		durable = st.rp
	}
	if st.live != nil {
		st.bases = liveBases(st.bases, *st.live)
	}
	for i := range st.bases {
		seg, err := checkSegment(opts, dir, &st, i, durable)
		// Retention deletes from the front: a segment a writer removes
		// while the check reads it (its .log, an index or the records
		// vanish) is passed over, with whatever its partial read found,
		// once the log start offset has passed it. The follower keeps the
		// same rule: the writer advances the start first. The writer may
		// have opened the partition after the check began (Repair holds
		// the lock: no writer there).
		if detectLive && (err != nil || len(seg.probs) > 0) {
			if next, deleted := deletedByWriter(fsys, dir, st.bases, i); deleted {
				st.ends = append(st.ends, logScan{next: next})
				st.stats.End = next
				continue
			}
		}
		if err != nil {
			return nil, st, err
		}
		for _, p := range seg.probs {
			add(p)
		}
		if seg.damaged && st.damaged < 0 {
			st.damaged = i
		}
		st.ends = append(st.ends, seg.scan)
		st.stats.Segments++
		st.stats.Batches += seg.batches
		st.stats.Records += seg.records
		st.stats.Bytes += seg.scan.end
		st.stats.End = seg.scan.next
	}
	return probs, st, nil
}

// segmentCheck is what checking one segment found.
type segmentCheck struct {
	scan             logScan
	probs            []Problem
	damaged          bool // damage or a hole the open does not repair
	batches, records int64
}

// checkSegment checks the i-th segment of st.bases: its batches as
// recovery scans them, its records (opts.Records), how it meets the next
// segment, and its indexes. durable is the recovery point (0: none).
func checkSegment(opts CheckOptions, dir string, st *partitionState, i int, durable int64) (segmentCheck, error) {
	fsys := opts.FS
	var res segmentCheck
	add := func(p Problem) { p.Partition = dir; res.probs = append(res.probs, p) }
	base := st.bases[i]
	last := i == len(st.bases)-1
	path := filepath.Join(dir, segment.FileName(base, segment.LogSuffix))
	empty := false
	if fi, err := fsys.Lstat(path); err == nil && fi.Size() == 0 {
		empty = true // never appended to: no index file needed yet
	}
	chk, idxProbs := loadIndexes(fsys, dir, base, empty)
	stopAt := int64(-1)
	if st.live != nil && last {
		stopAt = st.live.end
	}
	sc := logScan{next: base} // the writer's tail holds no whole batch yet
	if stopAt < 0 || stopAt > base {
		var err error
		sc, err = scanLogEach(fsys, dir, base, stopAt, opts.Limits, func(pos int64, h segment.Header) {
			chk.Batch(pos, h.IndexOffset(), h.MaxTimestamp)
			res.batches++
			res.records += int64(h.RecordCount)
		})
		if err != nil {
			return res, fmt.Errorf("storage: check %s: %w", path, err)
		}
	}
	res.scan = sc
	if opts.Records && sc.end > 0 {
		p, err := checkRecords(fsys, path, base, sc.end, opts.Limits)
		if err != nil {
			return res, fmt.Errorf("storage: check %s: %w", path, err)
		}
		if p != nil {
			res.damaged = true
			add(*p)
		}
	}
	if sc.damage != nil {
		switch {
		case sc.next < durable:
			res.damaged = true
			add(Problem{Kind: ProblemDamage, File: path, Pos: sc.damage.Pos, From: sc.next, Upto: -1, What: fmt.Sprintf("%v; below the recovery point %d: reads there fail, and an open that rescans it refuses writes until a repair", sc.damage.Err, durable), Severity: SeverityError})
		case last:
			add(Problem{Kind: ProblemTornTail, File: path, Pos: sc.damage.Pos, From: sc.next, Upto: -1, What: fmt.Sprintf("%v; past the recovery point: the next open cuts these %d bytes", sc.damage.Err, sc.size-sc.damage.Pos), Severity: SeverityWarning, OpenRepairs: true})
		default:
			add(Problem{Kind: ProblemDamage, File: path, Pos: sc.damage.Pos, From: sc.next, Upto: -1, What: fmt.Sprintf("%v; past the recovery point: the next open cuts the log here, moving the later segments into %s", sc.damage.Err, QuarantineDir), Severity: SeverityError, OpenRepairs: true})
		}
	}
	switch {
	case !last && sc.damage == nil && sc.next < st.bases[i+1]:
		next := st.bases[i+1]
		p := Problem{Kind: ProblemHole, File: path, Pos: sc.end, From: sc.next, Upto: next, What: fmt.Sprintf("offsets %d to %d are missing: the segment ends at %d, the next begins at %d", sc.next, next-1, sc.next, next), Severity: SeverityError}
		if next > durable {
			p.What += fmt.Sprintf("; past the recovery point: the next open cuts the log here, moving the later segments into %s", QuarantineDir)
			p.OpenRepairs = true
		} else {
			res.damaged = true
		}
		add(p)
	case !last && sc.next > st.bases[i+1]:
		res.damaged = true
		add(Problem{Kind: ProblemDamage, File: path, Pos: sc.end, From: st.bases[i+1], Upto: sc.next, What: fmt.Sprintf("overlaps the next segment, which begins at %d", st.bases[i+1]), Severity: SeverityError})
	case last && sc.damage == nil && sc.next < durable:
		res.damaged = true
		add(Problem{Kind: ProblemHole, File: path, Pos: sc.end, From: sc.next, Upto: durable, What: fmt.Sprintf("the data ends at offset %d, below the recovery point %d: flushed records are missing", sc.next, durable), Severity: SeverityError})
	}
	// The indexes.
	if last && (!st.clean || st.live != nil) || sc.damage != nil {
		// Entries past the damage (or past a torn tail) cannot be
		// checked: the damage is the problem.
		chk.DropPastEnd(sc.end, sc.next)
	}
	for _, ip := range append(idxProbs, chk.Finish(sc.end)...) {
		p := Problem{Kind: ProblemIndex, File: path, Pos: -1, From: -1, Upto: -1, What: ip, Severity: SeverityError}
		if last {
			p.What += "; the next unclean open rebuilds it"
		}
		add(p)
	}
	return res, nil
}

// loadIndexes reads the indexes of the segment at base into an
// index.Checker; files that are missing or cannot be read are problems.
func loadIndexes(fsys vfs.FS, dir string, base int64, emptyLog bool) (*index.Checker, []string) {
	oPath := filepath.Join(dir, segment.FileName(base, segment.IndexSuffix))
	tPath := filepath.Join(dir, segment.FileName(base, segment.TimeIndexSuffix))
	var probs []string
	read := func(path string) []byte {
		b, err := readIndexFile(fsys, path)
		if err != nil {
			what := "cannot be read: " + err.Error()
			if errors.Is(err, os.ErrNotExist) {
				if emptyLog {
					return nil
				}
				what = "is missing"
			}
			probs = append(probs, fmt.Sprintf("%s %s", path, what))
			return nil
		}
		return b
	}
	ob, tb := read(oPath), read(tPath)
	return index.NewChecker(oPath, ob, tPath, tb, base), probs
}

// checkRecords decodes the records of the batches of the .log at path up
// to end (the end of its valid batches) and returns the first batch whose
// records do not decode, as a problem.
func checkRecords(fsys vfs.FS, path string, base, end int64, lim segment.Limits) (*Problem, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := segment.NewScanner(f, end, segment.ScanOptions{File: path, Limits: lim, FirstOffset: base, Window: 1 << 20})
	for sc.Next() {
		b, err := sc.Batch()
		if err != nil {
			return nil, err
		}
		if _, err := segment.ValidateRecords(b, lim); err != nil {
			h := sc.Header()
			return &Problem{Kind: ProblemDamage, File: path, Pos: sc.Pos(), From: h.BaseOffset, Upto: h.NextOffset(),
				What: fmt.Sprintf("%v; the checksum matches, so recovery keeps the batch, and reads of it fail", err), Severity: SeverityError}, nil
		}
	}
	return nil, sc.Err()
}
