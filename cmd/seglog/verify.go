package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/spf13/cobra"
)

const verifyDesc = `
Check a data directory without changing a byte of it: nothing is opened for
writing, nothing is created, repaired or removed (a Store or an offset
store is never opened on it), so it is safe on a damaged directory and
beside a running broker.

For every partition <topic>-<n>: the segment file names, every batch's
header and checksum and that offsets follow on within and across segments
(--deep also decodes every record), each segment's .index and .timeindex
against its batches, and the recovery-point and log-start-offset
checkpoints against the log. Each topic must have partitions 0..n-1.
The offset store (<dir>/offsets) is checked on a private copy in a
temporary directory, with the offsets package's own replay: snapshot and
journal checksums and records, and every committed offset against its
partition.

A torn tail past the recovery point of a partition that was not shut down
cleanly is a warning (the next open truncates it; nothing flushed is lost),
and so are index entries past the end of its log data (the next open
rebuilds the index); while a writer holds the directory (a running broker
or seglog produce) neither is reported at all: they are the batch being
appended. Everything else wrong is an error. One line per partition goes to stdout,
then a summary; errors and warnings go to stderr with the file and byte
position. Exit 1 when there is any error.

DIR may also be a single partition directory.`

const verifyExample = `
seglog verify /var/lib/seglog
seglog verify --deep /var/lib/seglog/orders-3 || echo "damaged: see stderr"`

func verifyCommand(e *env) *cobra.Command {
	var deep bool
	var dirFlag string
	cmd := command(e, "verify [flags] DIR", "check every partition of a data directory, read-only", verifyDesc, verifyExample,
		func(c *cli, pos []string) int {
			if dirFlag != "" {
				pos = append([]string{dirFlag}, pos...)
			}
			if len(pos) != 1 {
				return c.usageErr("want one DIR (or --dir DIR), got %d", len(pos))
			}
			dir := pos[0]
			if err := requireDir(dir); err != nil {
				return c.fail("%v", err)
			}
			w := bufio.NewWriter(e.stdout)
			v := &verifier{w: w, stderr: e.stderr, name: c.name, deep: deep, parts: map[string]partSummary{}}
			v.run(dir)
			fmt.Fprintf(w, "verified %s: %s of %s, %s, %s, %s, %s: %s, %s\n",
				dir, plural(int64(v.nParts), "partition"), plural(int64(v.nTopics), "topic"), plural(int64(v.nSegs), "segment"),
				plural(v.nBatches, "batch"), plural(v.nRecords, "record"), humanBytes(v.nBytes), plural(int64(v.errors), "error"), plural(int64(v.warnings), "warning"))
			if err := w.Flush(); err != nil {
				return c.fail("write output: %v", err)
			}
			if v.errors > 0 {
				return exitFailure
			}
			return exitOK
		})
	cmd.Flags().StringVar(&dirFlag, "dir", "", "the data directory (or partition directory) to check; the same as the DIR argument")
	cmd.Flags().BoolVar(&deep, "deep", false, "also decode every record of every batch (slower: decompresses)")
	cmd.MarkFlagDirname("dir")
	return cmd
}

type partSummary struct {
	start, end int64
	ok         bool // the offsets are known
}

type verifier struct {
	w      *bufio.Writer
	stderr io.Writer
	name   string
	deep   bool

	errors, warnings           int
	nParts, nTopics, nSegs     int
	nBatches, nRecords, nBytes int64
	parts                      map[string]partSummary // by directory name
	partErrs, partWarns        int                    // of the partition being checked
}

func (v *verifier) errorf(format string, args ...any) {
	v.errors++
	v.partErrs++
	_ = v.w.Flush()
	fmt.Fprintf(v.stderr, "%s: ERROR: %s\n", v.name, fmt.Sprintf(format, args...))
}

func (v *verifier) warnf(format string, args ...any) {
	v.warnings++
	v.partWarns++
	_ = v.w.Flush()
	fmt.Fprintf(v.stderr, "%s: warning: %s\n", v.name, fmt.Sprintf(format, args...))
}

func (v *verifier) run(dir string) {
	// A single partition directory?
	if storage.IsPartitionDir(dir) {
		v.nTopics = 1
		v.partition(dir, dirName(dir))
		return
	}
	offs := readOffsetsFirst(dir)
	rl, err := storage.ListRoot(dir)
	if err != nil {
		v.errorf("%v", fileErr(dir, err))
		return
	}
	for _, name := range rl.Leftovers {
		v.warnf("%s: left by a topic deletion that was interrupted; the next open of the store removes it", filepath.Join(dir, name))
	}
	if rl.Refused != nil {
		v.errorf("%v (the store refuses to open)", rl.Refused)
	}
	topics := map[string]bool{}
	for _, p := range rl.Partitions {
		if p.Symlink {
			if rl.Refused == nil {
				v.errorf("%s: a symbolic link; partition directories must be real directories (the store refuses to open)", filepath.Join(dir, p.Name))
			}
			continue
		}
		topics[p.Topic] = true
	}
	v.nTopics = len(topics)
	for _, p := range rl.Partitions {
		if !p.Symlink {
			v.partition(filepath.Join(dir, p.Name), p.Name)
		}
	}
	v.offsetStore(dir, offs)
}

// partition checks one partition directory. Beside a writer (the
// partition's or the data root's lock is held), what it reads may change
// under it: a segment rolls, retention deletes one, a checkpoint is
// replaced, an index is trimmed. So a live partition with errors is
// checked again (three times in all) and only the last check reported.
func (v *verifier) partition(dir, name string) {
	live := writerHolds(dir)
	for attempt := 1; ; attempt++ {
		saved := *v
		var out, errOut bytes.Buffer
		v.w, v.stderr = bufio.NewWriter(&out), &errOut
		v.partitionOnce(dir, name, live)
		_ = v.w.Flush()
		if !live || v.partErrs == 0 || attempt == 3 {
			v.w, v.stderr = saved.w, saved.stderr
			_ = v.w.Flush()
			_, _ = v.stderr.Write(errOut.Bytes())
			_, _ = v.w.Write(out.Bytes())
			return
		}
		parts := v.parts
		*v = saved
		v.parts = parts
		delete(v.parts, name)
	}
}

func (v *verifier) partitionOnce(dir, name string, live bool) {
	v.nParts++
	v.partErrs, v.partWarns = 0, 0
	pl, err := storage.ListPartition(dir)
	if err != nil {
		v.errorf("%v", fileErr(dir, err))
		fmt.Fprintf(v.w, "%s: unreadable\n", name)
		return
	}
	v.checkFiles(dir, pl, live)
	bases, clean := pl.Segments, pl.Clean
	startCkpt, haveStart, rp, haveRP := v.checkpoints(dir)
	if len(bases) == 0 {
		// A partition never written to (a topic's partitions are created
		// as empty directories; the first open creates segment 0) is
		// healthy, unless a checkpoint says it held records.
		if haveRP && rp > 0 {
			v.errorf("%s: no segments, but the recovery point is %d: records that were flushed are missing", dir, rp)
		}
		if haveStart && startCkpt > 0 {
			v.errorf("%s: no segments, but the log start offset is %d: the segments are missing", dir, startCkpt)
		}
		v.parts[name] = partSummary{ok: true}
		fmt.Fprintf(v.w, "%s: empty (never written): %s\n", name, v.partStatus())
		return
	}
	v.checkStart(dir, bases, startCkpt, haveStart)
	end, size, batches, records := v.segments(dir, bases, clean, live, haveRP, rp)
	start := bases[0]
	if haveStart && startCkpt > start && startCkpt <= end {
		start = startCkpt
	}
	if haveStart && startCkpt > end {
		v.errorf("%s: log start offset %d is past the log end %d", filepath.Join(dir, storage.LogStartOffsetFile), startCkpt, end)
	}
	if haveRP && rp > end {
		v.errorf("%s: recovery point %d is past the log end %d: records that were flushed are missing", filepath.Join(dir, storage.RecoveryPointFile), rp, end)
	}
	if !haveRP {
		v.warnf("%s: no recovery point: the next open rescans every segment", dir)
	}
	v.nBatches += batches
	v.nRecords += records
	v.nBytes += size
	v.parts[name] = partSummary{start: start, end: end, ok: true}
	rpText := "none"
	if haveRP {
		rpText = fmt.Sprint(rp)
	}
	shutdown := "unclean"
	if clean {
		shutdown = "clean"
	}
	fmt.Fprintf(v.w, "%s: %s, %s, %s, offsets [%d, %d), %s, recovery point %s, %s shutdown: %s\n",
		name, plural(int64(len(bases)), "segment"), plural(batches, "batch"), plural(records, "record"), start, end, humanBytes(size), rpText, shutdown, v.partStatus())
}

// checkFiles reports the partition's files that are not part of its log:
// leftovers (unless live) as warnings and refused files as errors.
func (v *verifier) checkFiles(dir string, pl storage.PartitionListing, live bool) {
	for _, f := range pl.Files {
		path := filepath.Join(dir, f.Name)
		switch f.Kind {
		case storage.FileLeftover:
			if !live { // beside a writer: a file it is writing now
				v.warnf("%s: %s; the next open removes it", path, f.Why)
			}
		case storage.FileRefused:
			v.errorf("%s: %s (the log refuses to open)", path, f.Why)
		}
	}
}

// checkpoints reads the partition's log start offset and recovery point;
// an unreadable one is an error and counts as absent.
func (v *verifier) checkpoints(dir string) (startCkpt int64, haveStart bool, rp int64, haveRP bool) {
	var err error
	startCkpt, haveStart, err = storage.ReadCheckpoint(dir, storage.LogStartOffsetFile)
	if err != nil {
		v.errorf("%s: %v", filepath.Join(dir, storage.LogStartOffsetFile), err)
		haveStart = false
	}
	rp, haveRP, err = storage.ReadCheckpoint(dir, storage.RecoveryPointFile)
	if err != nil {
		v.errorf("%s: %v", filepath.Join(dir, storage.RecoveryPointFile), err)
		haveRP = false
	}
	return startCkpt, haveStart, rp, haveRP
}

// checkStart reports segments wholly below the log start offset and
// records missing between the start offset and the first segment.
func (v *verifier) checkStart(dir string, bases []int64, startCkpt int64, haveStart bool) {
	if haveStart {
		for i := 0; i+1 < len(bases) && bases[i+1] <= startCkpt; i++ {
			v.warnf("%s: wholly below the log start offset %d, left by an interrupted retention deletion; the next open deletes it",
				filepath.Join(dir, segment.FileName(bases[i], segment.LogSuffix)), startCkpt)
		}
	}
	// Retention advances the log start offset before it deletes
	// segments, so records below the first segment and above the start
	// offset are lost, not deleted (an open takes the first segment's
	// base as the start and says nothing).
	if expect := startCkpt; (haveStart || expect == 0) && bases[0] > expect {
		what := fmt.Sprintf("the log start offset is %d", expect)
		if !haveStart {
			what = "no retention ever advanced the log start offset"
		}
		v.errorf("%s: missing: the first segment starts at offset %d, but %s: records [%d, %d) are gone",
			filepath.Join(dir, segment.FileName(expect, segment.LogSuffix)), bases[0], what, expect, bases[0])
	}
}

// segments checks each segment of the partition in turn and returns the
// log end offset and the bytes, batches and records of the segments.
func (v *verifier) segments(dir string, bases []int64, clean, live, haveRP bool, rp int64) (end, size, batches, records int64) {
	for i, base := range bases {
		path := filepath.Join(dir, segment.FileName(base, segment.LogSuffix))
		last := i == len(bases)-1
		next, st := v.segment(path, base, last, clean, live, haveRP, rp)
		size += st.size
		batches += st.batches
		records += st.records
		v.nSegs++
		if !last && next != bases[i+1] {
			v.errorf("%s: ends at offset %d but the next segment starts at %d (a gap or an overlap between segments)", path, next, bases[i+1])
		}
		end = next
	}
	return end, size, batches, records
}

func (v *verifier) partStatus() string {
	switch {
	case v.partErrs > 0:
		return strings.ToUpper(plural(int64(v.partErrs), "error"))
	case v.partWarns > 0:
		return "ok, " + plural(int64(v.partWarns), "warning")
	}
	return "ok"
}

type segStats struct{ size, batches, records int64 }

// segment checks one .log and its indexes; it returns the offset after its
// last valid batch. In the last segment of a partition that was not shut
// down cleanly, index entries past the log data read are not damage: a
// writer appending (live) writes each batch before its index entries;
// after a crash, the next open rebuilds the index (a warning).
func (v *verifier) segment(path string, base int64, last, clean, live, haveRP bool, rp int64) (int64, segStats) {
	var st segStats
	f, size, err := openLogFile(path)
	if err != nil {
		v.errorf("%v", err)
		return base, st
	}
	defer f.Close()
	chk := loadIndexChecker(path, base, size)
	s := newBatchWalk(f, size, path)
	next := base
	for s.Next() {
		h := s.Header
		if s.VerifyErr != nil {
			v.errorf("%s at byte %d: batch at offset %d: %v", path, s.Pos, h.BaseOffset, s.VerifyErr)
		} else if v.deep {
			if _, err := segment.ValidateRecords(s.Batch, segment.DefaultLimits); err != nil {
				v.errorf("%s at byte %d: batch at offset %d: %v", path, s.Pos, h.BaseOffset, err)
			}
		}
		if h.BaseOffset != next {
			v.errorf("%s at byte %d: batch base offset %d, expected %d (offsets must follow on)", path, s.Pos, h.BaseOffset, next)
		}
		chk.Batch(s.Pos, h.IndexOffset(), h.MaxTimestamp)
		next = h.NextOffset()
		st.batches++
		st.records += int64(h.RecordCount)
	}
	// The bytes of the batches: an active segment's file is preallocated
	// past them.
	st.size = s.End()
	if err := s.Err(); err != nil {
		torn := last && !clean && (!haveRP || next >= rp) && isCorrupt(err)
		switch {
		case torn && live:
			// A batch that the writer is writing now.
		case torn:
			v.warnf("%v: a torn tail of %d bytes after an unclean shutdown, past the recovery point: the next open truncates it (nothing flushed is lost)", err, size-s.End())
		default:
			v.errorf("%v (%d bytes from here on are unreadable)", err, size-s.End())
		}
	}
	if last && !clean {
		if n := chk.DropPastEnd(s.End(), next); n > 0 && !live {
			v.warnf("%s: %d index entries past the end of the log data (offset %d, byte %d), left by an unclean shutdown: the next open rebuilds the index", path, n, next, s.End())
		}
	}
	for _, p := range chk.Finish(s.End()) {
		v.errorf("%s (an index is derived data: the log rebuilds it when its sanity check fails)", p)
	}
	return next, st
}

// offsetsSnapshot is what verify read of the offset store, before the
// partitions: committed offsets read before a log's end was can never be
// past it, unless the log lost records (beside running consumers, offsets
// read after the logs could be).
type offsetsSnapshot struct {
	err       error
	busy      bool
	dropped   int64
	groups    []string
	positions map[string][]offsets.Position
	notes     []offsetsNote
}

type offsetsNote struct {
	isErr bool
	msg   string
}

// readOffsetsFirst reads the data directory dir's offset store with the
// offsets package's own read-only open.
func readOffsetsFirst(dir string) *offsetsSnapshot {
	o := &offsetsSnapshot{busy: offsetStoreBusy(dir), positions: map[string][]offsets.Position{}}
	st, closeFn, err := readOffsets(dir, func(isErr bool, msg string) {
		o.notes = append(o.notes, offsetsNote{isErr, msg})
	})
	if err != nil {
		o.err = err
		return o
	}
	defer closeFn()
	o.dropped = st.Stats().DroppedBytes
	o.groups = st.Groups()
	for _, g := range o.groups {
		o.positions[g] = st.Positions(g)
	}
	return o
}

// offsetStore reports on the offset store of the data directory dir, as
// read before the partitions, checking every committed offset against
// its partition.
func (v *verifier) offsetStore(dir string, o *offsetsSnapshot) {
	v.partErrs, v.partWarns = 0, 0
	if errors.Is(o.err, errNoOffsetStore) {
		fmt.Fprintf(v.w, "offsets: no offset store\n")
		return
	}
	if o.busy {
		fmt.Fprintf(v.w, "offsets: in use by running processes (checked as it was on disk when verify started)\n")
	}
	for _, n := range o.notes {
		if n.isErr {
			v.errorf("%s", n.msg)
		} else if !o.busy || !strings.Contains(n.msg, "interrupted") {
			v.warnf("%s", n.msg)
		}
	}
	if o.err != nil {
		v.errorf("%v", o.err)
		fmt.Fprintf(v.w, "offsets: %s\n", v.partStatus())
		return
	}
	if o.dropped > 0 && !o.busy {
		v.warnf("%s: a torn journal tail of %d bytes (an interrupted commit); the next open drops it", offsetsPath(dir), o.dropped)
	}
	npos := 0
	for _, g := range o.groups {
		for _, p := range o.positions[g] {
			npos++
			name := storage.PartitionDir(p.Topic, p.Partition)
			ps, ok := v.parts[name]
			switch {
			case !ok:
				v.warnf("offsets: group %q has a committed offset %d on %s, which does not exist", g, p.Offset, name)
			case !ps.ok:
			case p.Offset > ps.end:
				v.errorf("offsets: group %q committed offset %d on %s, past the log end %d (was the log truncated?)", g, p.Offset, name, ps.end)
			case p.Offset < ps.start && !o.busy:
				v.warnf("offsets: group %q committed offset %d on %s, below the log start %d (retention deleted its records; the consumer resets to the start)", g, p.Offset, name, ps.start)
			}
		}
	}
	fmt.Fprintf(v.w, "offsets: %s, %s: %s\n", plural(int64(len(o.groups)), "group"), plural(int64(npos), "committed position"), v.partStatus())
}
