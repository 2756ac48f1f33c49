package storage

import (
	"fmt"
	"sync"
)

// checkpoints is what the log last wrote to its offset checkpoint files:
// the recovery point (every byte below it fsynced, the rescan's start after
// a crash) and the log start offset.
type checkpoints struct {
	// mu serializes writes of recovery-point and high-watermark.
	mu            sync.Mutex
	recoveryPoint int64 // the offset last written to recovery-point; guarded by mu
	// dirSyncPending: recovery-point was last replaced without the
	// directory fsync (checkpointLazy); guarded by mu.
	dirSyncPending bool
	// startFile is the start offset in the partition's log-start-offset
	// file (-1: none); guarded by writeMu.
	startFile int64
}

func (c *checkpoints) init() { c.startFile = -1 }

// checkpoint writes the flushed offset to recovery-point if it moved.
func (l *Log) checkpoint() error {
	_, err := l.checkpointWrote()
	return err
}

// checkpointWrote is checkpoint, reporting whether it wrote the file (and
// so fsynced the directory).
func (l *Log) checkpointWrote() (bool, error) { return l.writeRecoveryPoint(true) }

// checkpointLazy is checkpoint without the directory fsync
// (vfs.WriteFileAtomicLazy), for the background flusher of rolled
// segments: it only moves the recovery point forward, so after a crash
// the value before is as good; the directory's next fsync (a roll's, any
// other checkpoint's, Close's) makes it durable.
func (l *Log) checkpointLazy() error {
	_, err := l.writeRecoveryPoint(false)
	return err
}

func (l *Log) writeRecoveryPoint(durable bool) (bool, error) {
	l.ckpt.mu.Lock()
	defer l.ckpt.mu.Unlock()
	if l.damaged() != nil {
		// Its end is the damage, below the recovery point on disk: a lower
		// recovery point would let the next open cut acknowledged data.
		return false, nil
	}
	v := l.commit.flushed.Load()
	if floor, ok := l.roll.floor(); ok && floor < v {
		// A rolled segment's .log is not yet fsynced (its tail's cut at
		// least): a crash must rescan it.
		v = floor
	}
	if v == l.ckpt.recoveryPoint {
		if durable && l.ckpt.dirSyncPending {
			if err := l.opts.FS.SyncDir(l.dir); err != nil {
				return false, fmt.Errorf("storage: write %s: %w", recoveryPointFile, err)
			}
			l.ckpt.dirSyncPending = false
			return true, nil
		}
		return false, nil
	}
	write := writeCheckpoint
	if !durable {
		write = writeCheckpointLazy
	}
	if err := write(l.opts.FS, l.dir, recoveryPointFile, v, l.opts.FileMode); err != nil {
		return false, err
	}
	l.ckpt.recoveryPoint = v
	l.ckpt.dirSyncPending = !durable
	return true, nil
}

// checkpointLocked is checkpoint for callers that hold writeMu.
func (l *Log) checkpointLocked() error { return l.checkpoint() }
