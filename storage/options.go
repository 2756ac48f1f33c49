package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// SyncPolicy says when appended data is fsynced. offsets.SyncPolicy has
// the same names in the same order (but every-n).
type SyncPolicy int

const (
	// SyncDefault is the zero value: SyncNever.
	SyncDefault SyncPolicy = iota
	// SyncNever leaves writing back to the OS; segments are still
	// fsynced when they roll and on Sync and Close.
	SyncNever
	// SyncEveryN fsyncs after every Options.SyncEveryRecords records.
	SyncEveryN
	// SyncInterval fsyncs every Options.SyncInterval from a background
	// goroutine.
	SyncInterval
	// SyncAlways fsyncs before an append returns. Concurrent appenders
	// share one fsync (group commit).
	SyncAlways
)

var syncNames = map[SyncPolicy]string{SyncDefault: "default", SyncNever: "never", SyncEveryN: "every-n", SyncInterval: "interval", SyncAlways: "always"}

// String returns the policy's name.
func (p SyncPolicy) String() string {
	if n, ok := syncNames[p]; ok {
		return n
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// SyncPolicyNames lists the names ParseSyncPolicy takes, in policy
// order: never, every-n, interval, always.
func SyncPolicyNames() []string {
	return []string{SyncNever.String(), SyncEveryN.String(), SyncInterval.String(), SyncAlways.String()}
}

// ParseSyncPolicy parses never, every-n, interval or always.
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	for p, n := range syncNames {
		if n == s && p != SyncDefault {
			return p, nil
		}
	}
	return 0, fmt.Errorf("storage: unknown sync policy %q (want never, every-n, interval or always)", s)
}

// Defaults.
const (
	DefaultSegmentBytes  = 1 << 30
	DefaultSyncInterval  = time.Second
	DefaultSyncEveryN    = 10000
	DefaultReadBytes     = 1 << 20
	minSegmentBytes      = segment.HeaderSize + 1
	recoveryPointFile    = "recovery-point"
	logStartOffsetFile   = "log-start-offset"
	cleanShutdownFile    = ".clean-shutdown"
	checkpointFileLimit  = 4096
	DefaultMaxRecordSize = 0
)

// MaxOffset is the largest offset a record can have: EndOffset never
// passes MaxOffset+1 (math.MaxInt64). Appends past it fail with
// ErrOffsetOverflow, and Open refuses a segment that could hold none.
const MaxOffset = math.MaxInt64 - 1

// Options configure a Log. The zero value is usable: every field has a
// default.
type Options struct {
	// FS is the filesystem; nil means the os package.
	FS vfs.FS
	// SegmentBytes rolls the active segment when a batch would take it
	// past this size. Default 1 GiB; at most segment.MaxSegmentBytes.
	SegmentBytes int64
	// SegmentAge rolls the active segment, at the next append, when its
	// first batch is older than this: the wall clock (Now) minus the first
	// batch's max timestamp, as Kafka's segment.ms. The timestamp is on
	// disk, so the age survives reopening and truncation; records with
	// timestamps far in the past roll at every batch. Zero: no age roll.
	SegmentAge time.Duration
	// IndexIntervalBytes is the log data between index entries (4096).
	IndexIntervalBytes int
	// MaxIndexBytes is the capacity of each index file (10 MiB). A full
	// index rolls the segment.
	MaxIndexBytes int
	// Limits bound the batches the log accepts and decodes.
	Limits segment.Limits
	// Compression is the codec Append uses to build batches: one of
	// Kafka's (none, gzip, snappy, lz4, zstd).
	Compression segment.Codec
	// TimestampType is the topic's timestamp type, as Kafka's
	// message.timestamp.type: CreateTime (the default) keeps the
	// producer's timestamps; LogAppendTime makes every append stamp the
	// batch's maxTimestamp with the log's clock (Now) and set its
	// timestamp-type bit, computing its CRC again, so that every record
	// reads with the time of its append.
	TimestampType segment.TimestampType
	// Sync is the durability policy (default SyncNever).
	Sync SyncPolicy
	// Logger receives what the engine reports on its own: files moved
	// into quarantine, damage found at open (nil: slog.Default()).
	Logger *slog.Logger
	// SyncEveryRecords is N for SyncEveryN (default 10000).
	SyncEveryRecords int
	// SyncInterval is the period for SyncInterval (default 1s).
	SyncInterval time.Duration
	// ValidateRecords makes AppendBatch decode every record of a
	// producer's batch before writing it, not only check its header,
	// limits and checksum. Turn it on when producers are not trusted to
	// encode well-formed records: a malformed batch with a valid checksum
	// is then refused instead of failing every consumer that reads it.
	// It costs about a third of the append throughput for small records.
	ValidateRecords bool
	// FileMode and DirMode are the permissions of what the log creates
	// (0640 and 0750).
	FileMode, DirMode os.FileMode
	// Budget caps open files across logs and the memory reads fault into
	// their maps; nil means a Budget of the log's own without a cap on
	// open files. A Store shares one budget among all its logs.
	Budget *segment.Budget
	// ProducerExpiry is how long the state of an idempotent producer is
	// kept after all its batches were deleted (default 24h).
	ProducerExpiry time.Duration
	// ReadOnly, in a Store's options, opens the store read-only: without
	// changing anything on disk and without the directory lock, to read
	// a store that another process may be writing; its partitions are
	// followers (Store.Follower) and every write returns ErrReadOnly.
	// Open refuses it (ErrReadOnly): a single log is followed with
	// OpenFollower, which sets it.
	ReadOnly bool
	// OnFsync, when set, is called after every fsync of a segment file
	// with how long it took (for a latency histogram). It must be quick:
	// appenders waiting for the fsync wait for it too.
	OnFsync func(time.Duration)
	// Now is the clock (time.Now by default).
	Now func() time.Time

	// externalFlusher: a Store drives interval syncs for its logs.
	externalFlusher bool
	// unlocked: a Store's lock covers the log; it takes none of its own.
	unlocked bool
	// startFloor: the log's start offset in its Store's
	// log-start-offset-checkpoint (0: none), durable there.
	startFloor int64
}

func (o Options) withDefaults() Options {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Budget == nil {
		// No cap on open files, but a bound on the pages that reads
		// fault into the segments' maps (see segment.Budget).
		o.Budget = segment.NewBudget(math.MaxInt)
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = segment.DefaultIndexIntervalBytes
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = index.DefaultMaxBytes
	}
	if o.Limits.MaxBatchBytes <= 0 {
		o.Limits.MaxBatchBytes = segment.DefaultMaxBatchBytes
	}
	if o.Limits.MaxRecordsBytes <= 0 {
		o.Limits.MaxRecordsBytes = segment.DefaultMaxRecordsBytes
	}
	if o.Sync == SyncDefault {
		o.Sync = SyncNever
	}
	if o.SyncEveryRecords <= 0 {
		o.SyncEveryRecords = DefaultSyncEveryN
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	if o.FileMode == 0 {
		o.FileMode = vfs.DefaultFileMode
	}
	if o.DirMode == 0 {
		o.DirMode = vfs.DefaultDirMode
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ProducerExpiry <= 0 {
		o.ProducerExpiry = 24 * time.Hour
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.SegmentBytes < minSegmentBytes || o.SegmentBytes > segment.MaxSegmentBytes {
		errs = append(errs, fmt.Errorf("SegmentBytes %d outside [%d, %d]", o.SegmentBytes, minSegmentBytes, int64(segment.MaxSegmentBytes)))
	}
	if o.MaxIndexBytes < index.TimeEntrySize*2 {
		errs = append(errs, fmt.Errorf("MaxIndexBytes %d too small", o.MaxIndexBytes))
	}
	if o.Compression > segment.CodecZstd {
		errs = append(errs, fmt.Errorf("compression codec %s is not one a v2 batch is written with", o.Compression))
	}
	if o.TimestampType > segment.LogAppendTime {
		errs = append(errs, fmt.Errorf("unknown timestamp type %d", o.TimestampType))
	}
	if o.Sync < SyncNever || o.Sync > SyncAlways {
		errs = append(errs, fmt.Errorf("unknown sync policy %d", o.Sync))
	}
	if o.SegmentAge < 0 {
		errs = append(errs, fmt.Errorf("negative SegmentAge"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return nil
}

func (o Options) segmentOptions() segment.Options {
	return segment.Options{
		FS:                 o.FS,
		IndexIntervalBytes: o.IndexIntervalBytes,
		MaxIndexBytes:      o.MaxIndexBytes,
		Limits:             o.Limits,
		FileMode:           o.FileMode,
		Budget:             o.Budget,
		MaxMapBytes:        o.SegmentBytes + int64(o.Limits.MaxBatchBytes),
		Roll:               segment.RollPolicy{Bytes: o.SegmentBytes, Age: o.SegmentAge, Now: o.Now},
		ReadOnly:           o.ReadOnly,
	}
}
