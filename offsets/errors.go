package offsets

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by operations on a closed Store.
	ErrClosed = errors.New("offsets: store is closed")
	// ErrNoCommit is returned by Fetch when the group has no commit on the
	// partition (distinct from a commit of offset 0).
	ErrNoCommit = errors.New("offsets: no committed offset")
	// ErrInvalid is wrapped by errors about bad arguments or options, and
	// by Open's refusal of a symbolic link (or a non-regular file) where
	// the store expects its directory or one of its files.
	ErrInvalid = errors.New("offsets: invalid argument")
	// ErrCorrupt is wrapped by *CorruptError.
	ErrCorrupt = errors.New("offsets: corrupt data")
	// ErrLocked is returned by Open while a seglog from before the shared
	// journal holds the directory (it locked it exclusively; Stores of
	// this version share it, and such a seglog gets its own ErrLocked
	// while one is open).
	ErrLocked = errors.New("offsets: directory is locked by another store")
	// ErrReadOnly is returned by the write methods of a Store opened by
	// OpenReadOnly.
	ErrReadOnly = errors.New("offsets: store is read-only")
)

// CorruptError is a journal or snapshot that fails to decode: File is its
// path, Pos the byte position of the bad record (journal) or of the first
// byte that fails to decode (snapshot).
type CorruptError struct {
	File   string
	Pos    int64
	Reason string
}

// Error says which file, where, and why.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("offsets: corrupt %s at byte %d: %s", e.File, e.Pos, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
