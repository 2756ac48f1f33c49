package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seglog/seglog/vfs"
)

// readCheckpoint returns the offset in dir/name; ok is false when the file
// does not exist. A damaged file is an error wrapping ErrCorrupt.
func readCheckpoint(fs vfs.FS, dir, name string) (offset int64, ok bool, err error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, name), checkpointFileLimit)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		if errors.Is(err, vfs.ErrTooLarge) {
			return 0, false, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return 0, false, err
	}
	v, err := decodeCheckpoint(name, b)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return v, true, nil
}

func writeCheckpoint(fs vfs.FS, dir, name string, offset int64, perm os.FileMode) error {
	if err := vfs.WriteFileAtomic(fs, filepath.Join(dir, name), encodeCheckpoint(name, offset), perm); err != nil {
		return fmt.Errorf("storage: write %s: %w", name, err)
	}
	return nil
}

// writeCheckpointLazy is writeCheckpoint without the directory fsync
// (vfs.WriteFileAtomicLazy).
func writeCheckpointLazy(fs vfs.FS, dir, name string, offset int64, perm os.FileMode) error {
	if err := vfs.WriteFileAtomicLazy(fs, filepath.Join(dir, name), encodeCheckpoint(name, offset), perm); err != nil {
		return fmt.Errorf("storage: write %s: %w", name, err)
	}
	return nil
}

// ReadCheckpoint reads a partition directory's recovery-point or
// log-start-offset file, for tools. ok is false when it does not exist.
func ReadCheckpoint(dir, name string) (offset int64, ok bool, err error) {
	return readCheckpoint(vfs.Default, dir, name)
}

// Names of a partition directory's checkpoint files.
const (
	RecoveryPointFile  = recoveryPointFile
	LogStartOffsetFile = logStartOffsetFile
)
