package broker

import (
	"fmt"
	"strconv"
	"time"

	"github.com/seglog/seglog/storage"
)

// Kafka's topic config names onto storage.TopicConfig, for CreateTopics
// and DescribeConfigs. The engine's zero value means "the store's
// default"; Kafka's -1 (no limit) maps to the engine's 0 (no limit).
//
//	segment.bytes             SegmentBytes
//	segment.ms                SegmentAge
//	index.interval.bytes      IndexIntervalBytes
//	flush.messages            SyncEveryRecords (1: Sync "always", else "every-n")
//	flush.ms                  SyncInterval, Sync "interval"
//	seglog.sync               Sync by name: never, every-n, interval, always
//	compression.type          Compression ("producer": keep the batch's; "uncompressed": none)
//	message.timestamp.type    TimestampType (CreateTime, LogAppendTime)
//	retention.ms              RetentionAge (-1: none)
//	retention.bytes           RetentionBytes (-1: none)
//	seglog.retention.consumed RetentionConsumed (true/false)
//	cleanup.policy            only "delete" (no compaction)
//
// Any other name is INVALID_CONFIG.

// topicConfigNames lists the names DescribeConfigs answers, in order.
var topicConfigNames = []string{
	"cleanup.policy", "compression.type", "flush.messages", "flush.ms", "index.interval.bytes", "message.timestamp.type",
	"retention.bytes", "retention.ms", "segment.bytes", "segment.ms", "seglog.retention.consumed", "seglog.sync",
}

func parseMillis(v string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < -1 || n > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, fmt.Errorf("%q is not a count of milliseconds", v)
	}
	if n == -1 {
		return 0, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

func parseCount(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < -1 {
		return 0, fmt.Errorf("%q is not a count", v)
	}
	return max(n, 0), nil
}

// setTopicConfig applies one Kafka config to c.
func setTopicConfig(c *storage.TopicConfig, name, value string) error {
	var err error
	switch name {
	case "segment.bytes":
		c.SegmentBytes, err = parseCount(value)
	case "segment.ms":
		c.SegmentAge, err = parseMillis(value)
	case "index.interval.bytes":
		var n int64
		n, err = parseCount(value)
		if n > 1<<30 {
			err = fmt.Errorf("%s is too large", value)
		}
		c.IndexIntervalBytes = int(n)
	case "flush.messages":
		var n int64
		if n, err = parseCount(value); err == nil && n > 0 && n < 1<<31 {
			c.SyncEveryRecords, c.Sync = int(n), "every-n"
			if n == 1 {
				c.Sync = "always"
			}
		}
	case "flush.ms":
		if c.SyncInterval, err = parseMillis(value); err == nil && c.SyncInterval > 0 {
			c.Sync = "interval"
		}
	case "seglog.sync":
		c.Sync = value
	case "compression.type":
		switch value {
		case "producer":
			c.Compression = ""
		case "uncompressed":
			c.Compression = "none"
		default:
			c.Compression = value
		}
	case "message.timestamp.type":
		c.TimestampType = value
	case "retention.ms":
		c.RetentionAge, err = parseMillis(value)
	case "retention.bytes":
		c.RetentionBytes, err = parseCount(value)
	case "seglog.retention.consumed":
		c.RetentionConsumed, err = strconv.ParseBool(value)
	case "cleanup.policy":
		if value != "delete" {
			err = fmt.Errorf("only cleanup.policy=delete is supported (no compaction)")
		}
	default:
		err = fmt.Errorf("unknown topic config")
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", storage.ErrInvalidOptions, name, err)
	}
	return nil
}

// topicConfigValue is a config's value in Kafka's terms, and whether it
// is the topic's own (not the default).
func topicConfigValue(c storage.TopicConfig, name string) (value string, own bool) {
	millis := func(d time.Duration) string {
		if d == 0 {
			return "-1"
		}
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	switch name {
	case "cleanup.policy":
		return "delete", false
	case "compression.type":
		if c.Compression == "" {
			return "producer", false
		}
		return c.Compression, true
	case "flush.messages":
		if c.SyncEveryRecords == 0 {
			return "-1", false
		}
		return strconv.Itoa(c.SyncEveryRecords), true
	case "flush.ms":
		return millis(c.SyncInterval), c.SyncInterval != 0
	case "message.timestamp.type":
		if c.TimestampType == "" {
			return "CreateTime", false
		}
		return c.TimestampType, true
	case "index.interval.bytes":
		if c.IndexIntervalBytes == 0 {
			return "4096", false
		}
		return strconv.Itoa(c.IndexIntervalBytes), true
	case "retention.bytes":
		if c.RetentionBytes == 0 {
			return "-1", false
		}
		return strconv.FormatInt(c.RetentionBytes, 10), true
	case "retention.ms":
		return millis(c.RetentionAge), c.RetentionAge != 0
	case "segment.bytes":
		if c.SegmentBytes == 0 {
			return "default", false
		}
		return strconv.FormatInt(c.SegmentBytes, 10), true
	case "segment.ms":
		return millis(c.SegmentAge), c.SegmentAge != 0
	case "seglog.retention.consumed":
		return strconv.FormatBool(c.RetentionConsumed), c.RetentionConsumed
	case "seglog.sync":
		if c.Sync == "" {
			return "default", false
		}
		return c.Sync, true
	}
	return "", false
}
