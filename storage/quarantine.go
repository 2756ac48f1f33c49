package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// QuarantineDir is the folder, inside a partition directory, where the
// engine moves the files it does not recognise or cannot use, instead of
// deleting them: a garbage segment after the end, segments that no
// longer follow on from the log after a cut, an index without its .log, a
// temporary file that is not one of the engine's own, the bytes a repair
// cuts away. Nothing in it is read again; an operator looks at it and
// removes it.
const QuarantineDir = "quarantine"

// Quarantined is a file moved into the quarantine folder.
type Quarantined struct {
	File string // where it was (a path in the partition directory)
	To   string // where it is now
	Why  string
}

// quarantineFile moves dir/name into dir/quarantine/ (under a name not
// taken yet), durably: the quarantine folder's entry, the file's new entry
// and its removal from dir are fsynced before it returns. It logs the move.
func quarantineFile(fsys vfs.FS, logger *slog.Logger, dir, name, why string, perm os.FileMode) (Quarantined, error) {
	qdir := filepath.Join(dir, QuarantineDir)
	if err := fsys.MkdirAll(qdir, perm); err != nil {
		return Quarantined{}, fmt.Errorf("storage: quarantine %s: %w", name, err)
	}
	to := filepath.Join(qdir, name)
	for i := 1; ; i++ {
		if _, err := fsys.Lstat(to); errors.Is(err, os.ErrNotExist) {
			break
		}
		to = filepath.Join(qdir, name+"."+strconv.Itoa(i))
	}
	from := filepath.Join(dir, name)
	if err := fsys.Rename(from, to); err != nil {
		return Quarantined{}, fmt.Errorf("storage: quarantine %s: %w", from, err)
	}
	if err := errors.Join(fsys.SyncDir(qdir), fsys.SyncDir(dir)); err != nil {
		return Quarantined{}, fmt.Errorf("storage: quarantine %s: %w", from, err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger.Warn("seglog: file quarantined", "file", from, "to", to, "why", why)
	return Quarantined{File: from, To: to, Why: why}, nil
}

// quarantineSegment moves the files of the segment at base (those that
// exist) into quarantine.
func quarantineSegment(fsys vfs.FS, logger *slog.Logger, dir string, base int64, why string, perm os.FileMode) ([]Quarantined, error) {
	var out []Quarantined
	for _, suffix := range [...]string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		name := segment.FileName(base, suffix)
		if _, err := fsys.Lstat(filepath.Join(dir, name)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		q, err := quarantineFile(fsys, logger, dir, name, why, perm)
		if err != nil {
			return out, err
		}
		out = append(out, q)
	}
	return out, nil
}

// quarantine moves a file of the log's directory into quarantine and
// notes it in the open report.
func (l *Log) quarantine(name, why string) error {
	q, err := quarantineFile(l.opts.FS, l.opts.Logger, l.dir, name, why, l.opts.DirMode)
	if err != nil {
		return err
	}
	l.openStats.Quarantined = append(l.openStats.Quarantined, q)
	return nil
}

// quarantineSegment is quarantineSegment for the log, noted in the open
// report.
func (l *Log) quarantineSegment(base int64, why string) error {
	qs, err := quarantineSegment(l.opts.FS, l.opts.Logger, l.dir, base, why, l.opts.DirMode)
	l.openStats.Quarantined = append(l.openStats.Quarantined, qs...)
	return err
}
