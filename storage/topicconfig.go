package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// TopicConfig is a topic's own configuration, stored with the topic (in
// each of its partition directories) and used by every later open of its
// partitions. A zero field takes the store's default (StoreOptions.Log);
// the retention fields are read by the retention package's cleaner.
type TopicConfig struct {
	SegmentBytes       int64         // roll size (Options.SegmentBytes)
	SegmentAge         time.Duration // roll age (Options.SegmentAge)
	IndexIntervalBytes int           // Options.IndexIntervalBytes
	// Sync is a SyncPolicy name (never, every-n, interval, always); ""
	// keeps the store's.
	Sync             string
	SyncEveryRecords int           // Options.SyncEveryRecords
	SyncInterval     time.Duration // Options.SyncInterval
	// Compression is a codec name (none, gzip, snappy, lz4, zstd) that
	// Append and Store.Produce encode batches with; "" keeps the store's.
	// "s2", which configs written before the v2 batch format may hold,
	// is read as snappy: s2 is not a Kafka codec.
	Compression string
	// TimestampType is CreateTime or LogAppendTime (Kafka's
	// message.timestamp.type, Options.TimestampType); "" keeps the
	// store's.
	TimestampType     string
	RetentionAge      time.Duration // delete segments older than this; 0: no age limit
	RetentionBytes    int64         // per partition; 0: no size limit
	RetentionConsumed bool          // delete what every reading group has consumed
}

// topicConfigFile is the file in each partition directory that holds its
// topic's configuration.
const topicConfigFile = "topic-config"

// Validate checks the values (not whether they differ from a default).
func (c TopicConfig) Validate() error {
	var errs []error
	if c.SegmentBytes < 0 || c.SegmentAge < 0 || c.IndexIntervalBytes < 0 || c.SyncEveryRecords < 0 || c.SyncInterval < 0 || c.RetentionAge < 0 || c.RetentionBytes < 0 {
		errs = append(errs, errors.New("negative size or duration"))
	}
	if c.SegmentBytes > segment.MaxSegmentBytes {
		errs = append(errs, fmt.Errorf("segment bytes %d over the most a segment holds (%d)", c.SegmentBytes, int64(segment.MaxSegmentBytes)))
	}
	if c.SegmentBytes > 0 && c.SegmentBytes < minSegmentBytes {
		errs = append(errs, fmt.Errorf("segment bytes %d under %d", c.SegmentBytes, minSegmentBytes))
	}
	if c.Sync != "" {
		if _, err := ParseSyncPolicy(c.Sync); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Compression != "" {
		if _, err := topicCodec(c.Compression); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TimestampType != "" {
		if _, err := ParseTimestampType(c.TimestampType); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: topic config: %w", ErrInvalidOptions, err)
	}
	return nil
}

// apply returns opts with the topic's values in place of the defaults.
// The config is valid.
func (c TopicConfig) apply(opts Options) Options {
	if c.SegmentBytes > 0 {
		opts.SegmentBytes = c.SegmentBytes
	}
	if c.SegmentAge > 0 {
		opts.SegmentAge = c.SegmentAge
	}
	if c.IndexIntervalBytes > 0 {
		opts.IndexIntervalBytes = c.IndexIntervalBytes
	}
	if p, err := ParseSyncPolicy(c.Sync); err == nil {
		opts.Sync = p
	}
	if c.SyncEveryRecords > 0 {
		opts.SyncEveryRecords = c.SyncEveryRecords
	}
	if c.SyncInterval > 0 {
		opts.SyncInterval = c.SyncInterval
	}
	if codec, err := topicCodec(c.Compression); err == nil && c.Compression != "" {
		opts.Compression = codec
	}
	if t, err := ParseTimestampType(c.TimestampType); err == nil && c.TimestampType != "" {
		opts.TimestampType = t
	}
	return opts
}

// topicCodec parses a topic's codec name: segment.ParseCodec, and "s2"
// (a codec of the version-1 batch format) as snappy.
func topicCodec(name string) (segment.Codec, error) {
	if name == segment.CodecS2.String() {
		return segment.CodecSnappy, nil
	}
	return segment.ParseCodec(name)
}

// ParseTimestampType parses CreateTime or LogAppendTime.
func ParseTimestampType(name string) (segment.TimestampType, error) {
	for _, t := range []segment.TimestampType{segment.CreateTime, segment.LogAppendTime} {
		if t.String() == name {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown timestamp type %q (want CreateTime or LogAppendTime)", name)
}

// readTopicConfig reads a partition directory's topic config; a directory
// without one has the zero config.
func readTopicConfig(fsys vfs.FS, dir string) (TopicConfig, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, topicConfigFile), checkpointFileLimit)
	if errors.Is(err, os.ErrNotExist) {
		return TopicConfig{}, nil
	}
	if err != nil {
		return TopicConfig{}, err
	}
	c, err := decodeTopicConfig(b)
	if err != nil {
		return TopicConfig{}, fmt.Errorf("%s: %w", dir, err)
	}
	return c, nil
}

// ReadTopicConfig reads the topic configuration stored in a partition
// directory, for tools (the zero config when there is none).
func ReadTopicConfig(partitionDir string) (TopicConfig, error) {
	return readTopicConfig(vfs.Default, partitionDir)
}

// writeTopicConfigs writes c into the first n partition directories of a
// topic, each durably, the first partition's last: the first partition's
// file is the topic's configuration (Store.TopicConfig), and every
// partition opens with it (partitionConfig), so a crash part-way leaves
// the topic with its old configuration or its new one, never some
// partitions with each. The zero config removes the files.
func (s *Store) writeTopicConfigs(topic string, n int, c TopicConfig) error {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	for p := n - 1; p >= 0; p-- {
		if err := s.writeTopicConfig(filepath.Join(s.root, PartitionDir(topic, int32(p))), c); err != nil {
			return err
		}
	}
	return nil
}

// writeTopicConfig writes c into a partition directory, durably; the zero
// config removes the file.
func (s *Store) writeTopicConfig(dir string, c TopicConfig) error {
	fsys := s.opts.Log.FS
	path := filepath.Join(dir, topicConfigFile)
	if c != (TopicConfig{}) {
		return vfs.WriteFileAtomic(fsys, path, encodeTopicConfig(c), s.opts.Log.FileMode)
	}
	if err := fsys.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return fsys.SyncDir(dir)
}

// partitionConfig returns the configuration a partition opens with: its
// topic's, the first partition's file. A writable store makes the
// partition's own copy the same when a crash interrupted the
// writeTopicConfigs that was changing it.
func (s *Store) partitionConfig(name string) (TopicConfig, error) {
	fsys, dir := s.opts.Log.FS, filepath.Join(s.root, name)
	topic, p, ok := ParsePartitionDir(name)
	if !ok || p == 0 {
		return readTopicConfig(fsys, dir)
	}
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	cfg, err := readTopicConfig(fsys, filepath.Join(s.root, PartitionDir(topic, 0)))
	if err != nil || s.opts.Log.ReadOnly {
		return cfg, err
	}
	own, err := readTopicConfig(fsys, dir)
	if err != nil || own != cfg {
		err = s.writeTopicConfig(dir, cfg)
	}
	return cfg, err
}

// TopicConfig returns a topic's configuration (stored in its first
// partition's directory).
func (s *Store) TopicConfig(topic string) (TopicConfig, error) {
	if _, err := s.Partitions(topic); err != nil {
		return TopicConfig{}, err
	}
	return readTopicConfig(s.opts.Log.FS, filepath.Join(s.root, PartitionDir(topic, 0)))
}

// AlterTopic replaces a topic's configuration. Partitions opened from then
// on use it; those already open keep theirs until the store is reopened
// (the retention fields count at the cleaner's next run).
func (s *Store) AlterTopic(topic string, c TopicConfig) error {
	if s.opts.Log.ReadOnly {
		return ErrReadOnly
	}
	if err := c.Validate(); err != nil {
		return err
	}
	n, err := s.Partitions(topic)
	if err != nil {
		return err
	}
	if err := s.writeTopicConfigs(topic, n, c); err != nil {
		return fmt.Errorf("storage: alter topic %s: %w", topic, err)
	}
	return nil
}
