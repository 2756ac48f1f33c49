package offsets

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/seglog/seglog/vfs"
)

// CheckProblem is one thing wrong in an offset store's directory.
type CheckProblem struct {
	// File is the file the problem is in (the directory for a listing
	// problem).
	File string
	// Pos is the byte position in File (-1: not about a position).
	Pos int64
	// What says what is wrong and what an open does about it.
	What string
	// Err is true when an open refuses the store (a corrupt snapshot or
	// journal record, a file of the store that is not a regular file);
	// false for what an open cleans up by itself (a torn journal tail, a
	// leftover of an interrupted write or compaction).
	Err bool
}

// String says the severity, where and what, as seglog verify prints it.
func (p CheckProblem) String() string {
	sev := "warning"
	if p.Err {
		sev = "error"
	}
	where := ""
	if p.Pos >= 0 {
		where = fmt.Sprintf(" at byte %d", p.Pos)
	}
	return fmt.Sprintf("%s: %s%s: %s", sev, p.File, where, p.What)
}

// CheckReport is what Check found in an offset store's directory.
type CheckReport struct {
	Dir string
	// Exists is false when the directory does not exist: no group ever
	// committed.
	Exists bool
	// Groups and Positions count what replaying the valid records gives.
	Groups, Positions int
	Problems          []CheckProblem
}

// Errors returns how many problems make an open refuse the store.
func (r CheckReport) Errors() int {
	n := 0
	for _, p := range r.Problems {
		if p.Err {
			n++
		}
	}
	return n
}

// Check reports what is wrong in the offset store directory dir, changing
// nothing and taking no lock, with the rules Open's recovery applies: the
// same listing, snapshot decoder and journal replay. A corrupt snapshot or
// a corrupt record in the middle of a journal is an error (Open refuses
// the store unless Options.RecoverCorrupt); a torn journal tail (a commit
// being written, or one a crash interrupted), a temporary snapshot, an
// obsolete or empty journal left by an interrupted compaction are
// warnings: the next writable open removes or cuts them. Beside running
// stores a journal's last record may be one being appended: it is
// reported as a torn tail. An error is returned only when dir cannot be
// read.
func Check(dir string) (CheckReport, error) {
	fsys := vfs.Default
	rep := CheckReport{Dir: dir}
	ls, err := listDir(fsys, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rep, nil
	case errors.Is(err, ErrInvalid):
		rep.Exists = true
		rep.Problems = append(rep.Problems, CheckProblem{File: dir, Pos: -1, What: err.Error() + " (Open refuses the store)", Err: true})
		return rep, nil
	case err != nil:
		return rep, err
	}
	rep.Exists = true
	add := func(p CheckProblem) { rep.Problems = append(rep.Problems, p) }
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, name := range ls.temps {
		add(CheckProblem{File: path(name), Pos: -1, What: "a snapshot whose writing was interrupted; the next open removes it"})
	}
	st := newState(0)
	var snapGen uint64
	if ls.snapshot {
		p := path(snapshotName)
		data, err := vfs.ReadFile(fsys, p, maxSnapshotBytes)
		if err != nil {
			add(CheckProblem{File: p, Pos: -1, What: fmt.Sprintf("cannot be read: %v", err), Err: true})
			return rep, nil
		}
		s, gen, pos, reason := decodeSnapshot(data)
		if reason != "" {
			add(CheckProblem{File: p, Pos: pos, What: reason + " (Open refuses the store)", Err: true})
			return rep, nil
		}
		st, snapGen = s, gen
	}
	stopped := false
	lastRecords := -1
	var lastPath string
	live := 0
	for _, gen := range ls.gens {
		p := path(journalName(gen))
		switch {
		case gen < snapGen:
			add(CheckProblem{File: p, Pos: -1, What: "a journal the snapshot already holds, left by an interrupted compaction; the next open removes it"})
			continue
		case stopped:
			add(CheckProblem{File: p, Pos: -1, What: "follows a corrupt journal: an open that recovers the corruption drops it", Err: true})
			continue
		}
		data, err := vfs.ReadFile(fsys, p, 1<<62)
		if err != nil {
			add(CheckProblem{File: p, Pos: -1, What: fmt.Sprintf("cannot be read: %v", err), Err: true})
			stopped = true
			continue
		}
		res := replayJournal(data, gen, st)
		switch {
		case res.newer:
			add(CheckProblem{File: p, Pos: 0, What: res.reason + " (written by a later seglog: Open refuses the store)", Err: true})
			stopped = true
		case res.reason != "":
			add(CheckProblem{File: p, Pos: int64(res.end), What: res.reason + " (Open refuses the store unless it recovers corruption, which drops this record and all after it)", Err: true})
			stopped = true
		case res.end < journalHeaderSize && len(data) > 0:
			add(CheckProblem{File: p, Pos: 0, What: "a journal header that never reached the disk; the next open rewrites it"})
		case res.end < len(data):
			add(CheckProblem{File: p, Pos: int64(res.end), What: fmt.Sprintf("a torn tail of %d bytes: a commit being written, or one a crash interrupted; the next open cuts what is still incomplete", len(data)-res.end)})
		}
		live++
		lastRecords, lastPath = res.records, p
	}
	if live > 1 && lastRecords == 0 && !stopped {
		add(CheckProblem{File: lastPath, Pos: -1, What: "an empty journal a compaction created before it was interrupted; the next open removes it"})
	}
	rep.Groups, rep.Positions = len(st.groups), st.entries
	return rep, nil
}
