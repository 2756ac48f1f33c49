package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// ErrDamaged is returned by writes to a log whose data below the recovery
// point (fsynced and checkpointed: acknowledged) failed its checks at
// open. Recovery does not cut acknowledged data away: the log opens, reads
// below the damage work, and writes refuse until an operator repairs it
// (Repair, seglog repair). It wraps the *DamageError that says where.
var ErrDamaged = errors.New("storage: log damaged below its recovery point, writes refused until it is repaired")

// DamageError says where a partition's data fails its checks.
type DamageError struct {
	File   string // the .log file
	Pos    int64  // byte position of the first invalid batch
	Offset int64  // the offset the invalid batch should have held
	Err    error  // why (wraps ErrCorrupt)
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%s at byte %d (offset %d): %v", e.File, e.Pos, e.Offset, e.Err)
}

// Unwrap returns the reason, which wraps ErrCorrupt.
func (e *DamageError) Unwrap() error { return e.Err }

// HoleError reports offsets missing from the chain of segments: a segment
// ends before the next one begins (a file deleted by hand, a disk that lost
// it). It wraps ErrCorrupt.
type HoleError struct {
	Dir        string
	From, Upto int64 // the missing offsets: [From, Upto)
	After      string
}

func (e *HoleError) Error() string {
	return fmt.Sprintf("%v: offsets %d to %d are missing from %s: %s ends at %d, the next segment begins at %d",
		ErrCorrupt, e.From, e.Upto-1, e.Dir, e.After, e.From, e.Upto)
}

// Unwrap returns ErrCorrupt.
func (e *HoleError) Unwrap() error { return ErrCorrupt }

// logScan is what a validating scan of one .log found.
type logScan struct {
	size   int64                 // bytes of the file
	end    int64                 // end of the last valid batch
	next   int64                 // offset after it
	damage *segment.CorruptError // the first invalid batch (nil: none)
	// zeroTail: the bytes after end are zeros (a preallocated tail), not
	// damage.
	zeroTail bool
	stopped  bool // the scan stopped at stopAt, before the end
}

// scanLog validates the batches of the .log of the segment at base, as
// recovery does (segment.Scanner with checksums and offsets checked), up to
// the first batch that reaches stopAt (stopAt < 0: to the end). It is the
// scan that both recovery's check below the recovery point and Check use.
func scanLog(fsys vfs.FS, dir string, base, stopAt int64, lim segment.Limits) (logScan, error) {
	return scanLogEach(fsys, dir, base, stopAt, lim, nil)
}

// scanLogEach is scanLog calling onBatch (unless nil) with the position and
// header of each valid batch.
func scanLogEach(fsys vfs.FS, dir string, base, stopAt int64, lim segment.Limits, onBatch func(pos int64, h segment.Header)) (logScan, error) {
	path := filepath.Join(dir, segment.FileName(base, segment.LogSuffix))
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return logScan{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return logScan{}, err
	}
	res := logScan{size: fi.Size(), next: base}
	sc := segment.NewScanner(f, res.size, segment.ScanOptions{File: path, Limits: lim, Verify: true, CheckOffsets: true, FirstOffset: base, Window: 1 << 20})
	for sc.Next() {
		res.end, res.next = sc.End(), sc.Header().NextOffset()
		if onBatch != nil {
			onBatch(sc.Pos(), sc.Header())
		}
		if stopAt >= 0 && res.next >= stopAt {
			res.stopped = true
			return res, nil
		}
	}
	if err := sc.Err(); err != nil {
		var ce *segment.CorruptError
		if !errors.As(err, &ce) {
			return res, err
		}
		res.damage = ce
		return res, nil
	}
	res.zeroTail = sc.ZeroTail() || res.end == res.size
	if !res.zeroTail {
		// Bytes after the last batch that are not a zero tail.
		res.damage = &segment.CorruptError{File: path, Pos: res.end, Err: fmt.Errorf("%w: %d bytes after the last batch", ErrCorrupt, res.size-res.end)}
	}
	return res, nil
}

// checkSealedEnd checks that a sealed segment holds offsets up to want
// (the next segment's base), scanning it (scanLog) when its last expected
// offset cannot be found: a HoleError or a DamageError says what is not.
func (l *Log) checkSealedEnd(seg *segment.Segment, want int64) error {
	_, _, err := seg.Find(want - 1)
	if err == nil {
		return nil
	}
	var ce *segment.CorruptError
	if !errors.Is(err, io.EOF) && !errors.As(err, &ce) && !errors.Is(err, ErrCorrupt) {
		return err
	}
	sc, serr := scanLog(l.opts.FS, l.dir, seg.Base(), -1, l.opts.Limits)
	if serr != nil {
		return serr
	}
	if sc.damage != nil && sc.next < want {
		return &DamageError{File: sc.damage.File, Pos: sc.damage.Pos, Offset: sc.next, Err: sc.damage}
	}
	if sc.next < want {
		return &HoleError{Dir: l.dir, From: sc.next, Upto: want, After: seg.LogPath()}
	}
	return nil
}

// damaged returns the damage that makes the log refuse writes, or nil.
func (l *Log) damaged() *DamageError { return l.damage.Load() }

// refuseDamaged is the error writes return on a damaged log.
func refuseDamaged(d *DamageError) error { return fmt.Errorf("%w: %w", ErrDamaged, d) }
