package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
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

func runVerify(e *env, args []string) int {
	c := newCLI(e, "seglog verify", "seglog verify [flags] DIR", verifyDesc, verifyExample)
	deep := c.fs.Bool("deep", false, "also decode every record of every batch (slower: decompresses)")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.usageErr("want exactly one DIR, got %d arguments", len(pos))
	}
	dir := pos[0]
	if err := requireDir(dir); err != nil {
		return c.fail("%v", err)
	}
	w := bufio.NewWriter(e.stdout)
	v := &verifier{w: w, stderr: e.stderr, name: c.name, deep: *deep, parts: map[string]partSummary{}}
	v.run(dir)
	fmt.Fprintf(w, "verified %s: %d partitions of %d topics, %d segments, %d batches, %d records, %s: %d errors, %d warnings\n",
		dir, v.nParts, v.nTopics, v.nSegs, v.nBatches, v.nRecords, humanBytes(v.nBytes), v.errors, v.warnings)
	if err := w.Flush(); err != nil {
		return c.fail("write output: %v", err)
	}
	if v.errors > 0 {
		return exitFailure
	}
	return exitOK
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
	entries, err := os.ReadDir(dir)
	if err != nil {
		v.errorf("%s: %v", dir, unwrapPathErr(err))
		return
	}
	// A single partition directory? Named like one, and holding segment
	// files, or nothing that a data root holds (a partition never
	// written to is an empty directory).
	if _, _, ok := storage.ParsePartitionDir(filepath.Base(filepath.Clean(dir))); ok && (hasSegmentFiles(entries) || !hasPartitionDirs(entries)) {
		v.nTopics = 1
		v.partition(dir, filepath.Base(filepath.Clean(dir)))
		return
	}
	topics := map[string][]int32{}
	var names []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if strings.HasSuffix(name, ".deleted") {
			v.warnf("%s: left by a topic deletion that was interrupted; the next open of the store removes it", path)
			continue
		}
		topic, p, ok := storage.ParsePartitionDir(name)
		if !ok {
			continue // the offsets store, markers, an operator's notes
		}
		if e.Type()&os.ModeSymlink != 0 {
			v.errorf("%s: a symbolic link; partition directories must be real directories (the store refuses to open)", path)
			continue
		}
		if !e.IsDir() {
			continue
		}
		topics[topic] = append(topics[topic], p)
		names = append(names, name)
	}
	for topic, ps := range topics {
		slices.Sort(ps)
		for i, p := range ps {
			if p != int32(i) {
				v.errorf("%s: topic %s has partition %d but not %d (the store refuses to open)", dir, topic, p, i)
				break
			}
		}
	}
	v.nTopics = len(topics)
	slices.SortFunc(names, comparePartitionDirs)
	for _, name := range names {
		v.partition(filepath.Join(dir, name), name)
	}
	v.offsetStore(filepath.Join(dir, "offsets"))
}

// comparePartitionDirs orders by topic, then partition number.
func comparePartitionDirs(a, b string) int {
	ta, pa, _ := storage.ParsePartitionDir(a)
	tb, pb, _ := storage.ParsePartitionDir(b)
	if c := strings.Compare(ta, tb); c != 0 {
		return c
	}
	return int(pa) - int(pb)
}

// hasPartitionDirs reports whether entries hold a partition directory or
// the offset store: what a data root holds.
func hasPartitionDirs(entries []os.DirEntry) bool {
	for _, e := range entries {
		if _, _, ok := storage.ParsePartitionDir(e.Name()); ok || e.Name() == "offsets" {
			return true
		}
	}
	return false
}

func hasSegmentFiles(entries []os.DirEntry) bool {
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), segment.LogSuffix) {
			return true
		}
	}
	return false
}

func (v *verifier) partition(dir, name string) {
	v.nParts++
	v.partErrs, v.partWarns = 0, 0
	entries, err := os.ReadDir(dir)
	if err != nil {
		v.errorf("%s: %v", dir, unwrapPathErr(err))
		fmt.Fprintf(v.w, "%s: unreadable\n", name)
		return
	}
	var bases []int64
	logs := map[int64]bool{}
	clean := false
	for _, e := range entries {
		fname := e.Name()
		path := filepath.Join(dir, fname)
		if fname == ".clean-shutdown" {
			clean = true
			continue
		}
		if strings.HasSuffix(fname, ".tmp") || strings.HasSuffix(fname, ".deleted") {
			v.warnf("%s: left by an interrupted write or deletion; the next open removes it", path)
			continue
		}
		var suffix string
		for _, s := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
			if strings.HasSuffix(fname, s) {
				suffix = s
			}
		}
		if suffix == "" {
			continue
		}
		base, ok := segment.ParseFileName(fname, suffix)
		if !ok {
			v.errorf("%s: unexpected file name: segment files are named by 20 decimal digits (the log refuses to open)", path)
			continue
		}
		if !e.Type().IsRegular() {
			v.errorf("%s: not a regular file (symbolic links are refused; the log refuses to open)", path)
			continue
		}
		if suffix == segment.LogSuffix {
			bases = append(bases, base)
			logs[base] = true
		}
	}
	for _, e := range entries {
		for _, s := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
			if base, ok := segment.ParseFileName(e.Name(), s); ok && !logs[base] {
				v.warnf("%s: an index without its .log, left by an interrupted deletion; the next open removes it", filepath.Join(dir, e.Name()))
			}
		}
	}
	slices.Sort(bases)

	startCkpt, haveStart, err := storage.ReadCheckpoint(dir, storage.LogStartOffsetFile)
	if err != nil {
		v.errorf("%s: %v", filepath.Join(dir, storage.LogStartOffsetFile), err)
		haveStart = false
	}
	rp, haveRP, err := storage.ReadCheckpoint(dir, storage.RecoveryPointFile)
	if err != nil {
		v.errorf("%s: %v", filepath.Join(dir, storage.RecoveryPointFile), err)
		haveRP = false
	}
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
	if haveStart {
		for i := 0; i+1 < len(bases) && bases[i+1] <= startCkpt; i++ {
			v.warnf("%s: wholly below the log start offset %d, left by an interrupted retention deletion; the next open deletes it",
				filepath.Join(dir, segment.FileName(bases[i], segment.LogSuffix)), startCkpt)
		}
	}
	// A writer holding the partition's or the data root's lock appends
	// while this runs.
	live := inUse(dir) || inUse(filepath.Dir(filepath.Clean(dir)))
	var size, batches, records int64
	var end int64
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
	fmt.Fprintf(v.w, "%s: %d segments, %d batches, %d records, offsets [%d, %d), %s, recovery point %s, %s shutdown: %s\n",
		name, len(bases), batches, records, start, end, humanBytes(size), rpText, shutdown, v.partStatus())
}

func (v *verifier) partStatus() string {
	switch {
	case v.partErrs > 0:
		return fmt.Sprintf("%d ERRORS", v.partErrs)
	case v.partWarns > 0:
		return fmt.Sprintf("ok, %d warnings", v.partWarns)
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
	st.size = size
	chk := loadIndexChecker(path, base, size)
	s := newLogScanner(f, size, path)
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
		chk.batch(s.Pos, h)
		next = h.NextOffset()
		st.batches++
		st.records += int64(h.RecordCount)
	}
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
		if n := chk.dropPastEnd(s.End(), next); n > 0 && !live {
			v.warnf("%s: %d index entries past the end of the log data (offset %d, byte %d), left by an unclean shutdown: the next open rebuilds the index", path, n, next, s.End())
		}
	}
	chk.finish(s.End())
	for _, p := range chk.problems {
		v.errorf("%s (an index is derived data: the log rebuilds it when its sanity check fails)", p)
	}
	return next, st
}

// offsetStore checks the consumer offset store on a private copy, so
// that the offsets package's own replay (which may repair) never touches
// the original.
func (v *verifier) offsetStore(dir string) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(v.w, "offsets: no offset store\n")
		return
	}
	v.partErrs, v.partWarns = 0, 0
	if err != nil {
		v.errorf("%s: %v", dir, unwrapPathErr(err))
		fmt.Fprintf(v.w, "offsets: unreadable\n")
		return
	}
	if inUse(filepath.Join(dir, "LOCK")) {
		fmt.Fprintf(v.w, "offsets: in use by a running process (checking a copy of what is on disk now)\n")
	}
	tmp, err := os.MkdirTemp("", "seglog-verify-offsets-")
	if err != nil {
		v.errorf("offsets: cannot make a temporary copy to check: %v", err)
		return
	}
	defer os.RemoveAll(tmp)
	const maxCopy = 4 << 30
	var total int64
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case name == "LOCK":
			continue
		case name == "snapshot.tmp":
			v.warnf("%s: a snapshot whose writing was interrupted; the next open removes it", path)
			continue
		case name == "snapshot", strings.HasPrefix(name, "journal-"):
		default:
			v.warnf("%s: not a file of the offset store", path)
			continue
		}
		if !e.Type().IsRegular() {
			v.errorf("%s: not a regular file", path)
			continue
		}
		n, err := copyFile(path, filepath.Join(tmp, name), maxCopy-total)
		total += n
		if err != nil {
			v.errorf("%v", err)
			return
		}
	}
	st, err := offsets.Open(tmp, offsets.Options{Sync: offsets.SyncNever})
	if err != nil {
		v.errorf("%s", strings.ReplaceAll(err.Error(), tmp, dir))
		fmt.Fprintf(v.w, "offsets: %s\n", v.partStatus())
		return
	}
	defer st.Close()
	if d := st.Stats().DroppedBytes; d > 0 {
		v.warnf("%s: a torn journal tail of %d bytes (an interrupted commit); the next open drops it", dir, d)
	}
	groups := st.Groups()
	npos := 0
	for _, g := range groups {
		for _, p := range st.Positions(g) {
			npos++
			name := storage.PartitionDir(p.Topic, p.Partition)
			ps, ok := v.parts[name]
			switch {
			case !ok:
				v.warnf("offsets: group %q has a committed offset %d on %s, which does not exist", g, p.Offset, name)
			case !ps.ok:
			case p.Offset > ps.end:
				v.errorf("offsets: group %q committed offset %d on %s, past the log end %d (was the log truncated?)", g, p.Offset, name, ps.end)
			case p.Offset < ps.start:
				v.warnf("offsets: group %q committed offset %d on %s, below the log start %d (retention deleted its records; the consumer resets to the start)", g, p.Offset, name, ps.start)
			}
		}
	}
	fmt.Fprintf(v.w, "offsets: %d groups, %d committed positions: %s\n", len(groups), npos, v.partStatus())
}

// inUse reports whether a lock file or directory is locked by a process
// (the offset store's LOCK, a store's or a log's directory), probing with
// a shared lock taken and released on a read-only descriptor.
func inUse(lockPath string) bool {
	f, err := os.Open(lockPath)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// copyFile copies src (opened read-only) to dst, refusing more than limit
// bytes.
func copyFile(src, dst string, limit int64) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", src, unwrapPathErr(err))
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, fmt.Errorf("temporary copy of %s: %w", src, err)
	}
	n, err := io.Copy(out, io.LimitReader(in, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("%s: copy: %w", src, err)
	}
	if n > limit {
		return n, fmt.Errorf("%s: the offset store is larger than this tool checks", src)
	}
	return n, nil
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
