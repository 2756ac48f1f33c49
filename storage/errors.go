package storage

import (
	"errors"

	"github.com/seglog/seglog/segment"
)

var (
	// ErrClosed is returned by operations on a closed Log or Store.
	ErrClosed = errors.New("storage: closed")
	// ErrOffsetOutOfRange is returned by a read below StartOffset or
	// beyond EndOffset. A consumer whose position fell below StartOffset
	// (its segments were deleted) resets to StartOffset.
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrCorrupt is wrapped by errors about invalid data on disk.
	ErrCorrupt = segment.ErrCorrupt
	// ErrFailed is returned by writes after an fsync failed: the log
	// refuses to write until it is reopened, since the kernel may have
	// dropped data that was reported written.
	ErrFailed = errors.New("storage: log failed, reopen it")
	// ErrDiskFull is wrapped by write errors caused by a full disk
	// (ENOSPC, EDQUOT). Reads keep working; appends work again once
	// space is freed.
	ErrDiskFull = errors.New("storage: disk full")
	// ErrTruncated is returned to an appender waiting for its fsync when
	// a Truncate removed its records first: they were not acknowledged.
	ErrTruncated = errors.New("storage: records truncated before they were flushed")
	// ErrReadOnly is returned by writes to a log or store opened with
	// ReadOnly.
	ErrReadOnly = errors.New("storage: opened read-only")
	// ErrInvalidOptions reports Options that cannot be used.
	ErrInvalidOptions = errors.New("storage: invalid options")
	// ErrInvalidTopic reports a topic name outside [a-zA-Z0-9._-]{1,249},
	// or "." or "..".
	ErrInvalidTopic = errors.New("storage: invalid topic name")
	// ErrTopicExists is returned when creating a topic that exists with a
	// different partition count.
	ErrTopicExists = errors.New("storage: topic exists")
	// ErrUnknownTopic is returned for a topic that does not exist.
	ErrUnknownTopic = errors.New("storage: unknown topic")
	// ErrInvalidPartition is returned for a partition outside the topic.
	ErrInvalidPartition = errors.New("storage: invalid partition")
	// ErrLocked is returned by OpenStore and Open when another process
	// (or another Store in this one) has the directory open: two owners
	// would each recover and rewrite the other's active segments.
	ErrLocked = errors.New("storage: directory in use by another seglog process")
	// ErrInvalidBatch reports a batch a caller asked to append that is
	// not valid (wraps the segment error that says why).
	ErrInvalidBatch = errors.New("storage: invalid batch")
	// ErrTooLarge reports a batch over Options.Limits (MaxBatchBytes or
	// MaxRecordsBytes) that a caller asked to append; it comes with
	// ErrInvalidBatch.
	ErrTooLarge = segment.ErrTooLarge
	// ErrOffsetOverflow is returned by an append whose records would take
	// offsets past MaxOffset: the log is full for good.
	ErrOffsetOverflow = errors.New("storage: offsets exhausted")
)
