package storage

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seglog/seglog/segment"
)

// TopicSetting is one setting of a topic's configuration, under the two
// names users give it: seglog's (the seglog command's flag, with sizes in
// ParseSize's syntax and durations in ParseDuration's) and Kafka's topic
// config name (bytes and milliseconds as whole numbers, -1 for no limit).
// TopicConfig.Set and TopicConfig.Get take seglog's names and values,
// SetKafka and GetKafka Kafka's.
//
//	seglog name         Kafka name                 field
//	segment-bytes       segment.bytes              SegmentBytes
//	segment-age         segment.ms                 SegmentAge
//	index-interval      index.interval.bytes       IndexIntervalBytes
//	sync                seglog.sync                Sync
//	sync-every          flush.messages             SyncEveryRecords (Kafka: also Sync every-n, or always for 1)
//	sync-interval       flush.ms                   SyncInterval (Kafka: also Sync interval)
//	compression         compression.type           Compression (Kafka: producer is the default, uncompressed is none)
//	                    message.timestamp.type     TimestampType
//	retention-age       retention.ms               RetentionAge
//	retention-bytes     retention.bytes            RetentionBytes
//	retention-consumed  seglog.retention.consumed  RetentionConsumed
//	                    cleanup.policy             only delete (no compaction)
type TopicSetting struct {
	// Name is seglog's name; "" for a setting only Kafka names.
	Name string
	// KafkaName is Kafka's topic config name.
	KafkaName string
	// Kind is the kind of value seglog's name takes: size, duration, int,
	// string or bool.
	Kind string
	// Default says what applies when a topic does not set it, in seglog's
	// syntax or in words.
	Default string

	get, kafkaGet func(TopicConfig) (value string, own bool)
	set, kafkaSet func(*TopicConfig, string) error
}

// A SettingError is a value that a topic setting does not take, or a
// setting that does not exist. It matches ErrInvalidOptions.
type SettingError struct {
	Name  string // the setting's name as given
	Value string // the value as given
	Err   error  // why it is refused
}

// Error says which setting and why.
func (e *SettingError) Error() string {
	return fmt.Sprintf("%v: %s: %v", ErrInvalidOptions, e.Name, e.Err)
}

// Unwrap returns ErrInvalidOptions and the reason.
func (e *SettingError) Unwrap() []error { return []error{ErrInvalidOptions, e.Err} }

// TopicSettings lists a topic's settings, seglog's first (in the order
// the seglog command describes them), then those only Kafka names.
func TopicSettings() []TopicSetting { return append([]TopicSetting(nil), topicSettings...) }

// lookupSetting finds a setting by seglog's name, or by Kafka's.
func lookupSetting(name string, kafka bool) (TopicSetting, bool) {
	for _, s := range topicSettings {
		if !kafka && s.Name != "" && s.Name == name || kafka && s.KafkaName == name {
			return s, true
		}
	}
	return TopicSetting{}, false
}

// Set sets one setting by seglog's name from a value in seglog's syntax;
// 0 returns a size, duration or count to its default, as "default" does
// for sync and compression. It checks the value, not the whole config:
// Validate does that. Its errors are *SettingError.
func (c *TopicConfig) Set(name, value string) error {
	s, ok := lookupSetting(name, false)
	return setSetting(c, name, value, ok, s.set)
}

// SetKafka sets one setting by Kafka's name from a value in Kafka's
// syntax; -1 returns a size or duration to its default (no limit). Its
// errors are *SettingError.
func (c *TopicConfig) SetKafka(name, value string) error {
	s, ok := lookupSetting(name, true)
	return setSetting(c, name, value, ok, s.kafkaSet)
}

func setSetting(c *TopicConfig, name, value string, ok bool, set func(*TopicConfig, string) error) error {
	err := errors.New("unknown topic config")
	if ok {
		err = set(c, value)
	}
	if err != nil {
		return &SettingError{Name: name, Value: value, Err: err}
	}
	return nil
}

// Get returns one setting by seglog's name, in seglog's syntax, and
// whether the topic sets it (own); a setting the topic does not set
// returns its Default. An unknown name returns "", false.
func (c TopicConfig) Get(name string) (value string, own bool) {
	s, ok := lookupSetting(name, false)
	if !ok {
		return "", false
	}
	if v, own := s.get(c); own {
		return v, true
	}
	return s.Default, false
}

// GetKafka returns one setting by Kafka's name, in Kafka's syntax, and
// whether the topic sets it (own); a setting the topic does not set
// returns Kafka's default (-1 for no limit, "default" for the store's).
// An unknown name returns "", false.
func (c TopicConfig) GetKafka(name string) (value string, own bool) {
	s, ok := lookupSetting(name, true)
	if !ok {
		return "", false
	}
	return s.kafkaGet(c)
}

// String lists the settings the topic sets, in seglog's names and
// syntax, then those only Kafka names in Kafka's ("segment-bytes=64MiB
// sync=always"), or "defaults" when it sets none.
func (c TopicConfig) String() string {
	var parts []string
	for _, s := range topicSettings {
		v, own := c.Get(s.Name)
		if s.Name == "" {
			v, own = c.GetKafka(s.KafkaName)
			s.Name = s.KafkaName
		}
		if own {
			parts = append(parts, s.Name+"="+v)
		}
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, " ")
}

// topicSettings is the table of topic settings.
var topicSettings = []TopicSetting{
	{Name: "segment-bytes", KafkaName: "segment.bytes", Kind: "size", Default: FormatSize(DefaultSegmentBytes),
		get: func(c TopicConfig) (string, bool) { return sizeSetting(c.SegmentBytes) },
		set: func(c *TopicConfig, v string) (err error) { c.SegmentBytes, err = ParseSize(v); return err },
		kafkaGet: func(c TopicConfig) (string, bool) {
			return kafkaCountOr(c.SegmentBytes, "default") // the store's, which the broker's options set
		},
		kafkaSet: func(c *TopicConfig, v string) (err error) { c.SegmentBytes, err = parseKafkaCount(v); return err }},
	{Name: "segment-age", KafkaName: "segment.ms", Kind: "duration", Default: "none",
		get:      func(c TopicConfig) (string, bool) { return durationSetting(c.SegmentAge) },
		set:      func(c *TopicConfig, v string) (err error) { c.SegmentAge, err = parseSettingDuration(v); return err },
		kafkaGet: func(c TopicConfig) (string, bool) { return kafkaMillis(c.SegmentAge) },
		kafkaSet: func(c *TopicConfig, v string) (err error) { c.SegmentAge, err = parseKafkaMillis(v); return err }},
	{Name: "index-interval", KafkaName: "index.interval.bytes", Kind: "size", Default: FormatSize(segment.DefaultIndexIntervalBytes),
		get: func(c TopicConfig) (string, bool) { return sizeSetting(int64(c.IndexIntervalBytes)) },
		set: func(c *TopicConfig, v string) error {
			n, err := ParseSize(v)
			if err == nil && n > 1<<30 {
				err = fmt.Errorf("%s: at most 1GiB", FormatSize(n))
			}
			c.IndexIntervalBytes = int(n)
			return err
		},
		kafkaGet: func(c TopicConfig) (string, bool) {
			return kafkaCountOr(int64(c.IndexIntervalBytes), strconv.Itoa(segment.DefaultIndexIntervalBytes))
		},
		kafkaSet: func(c *TopicConfig, v string) error {
			n, err := parseKafkaCount(v)
			if n > 1<<30 {
				err = fmt.Errorf("%s is too large", v)
			}
			c.IndexIntervalBytes = int(n)
			return err
		}},
	{Name: "sync", KafkaName: "seglog.sync", Kind: "string", Default: "the writer's",
		get:      func(c TopicConfig) (string, bool) { return c.Sync, c.Sync != "" },
		set:      func(c *TopicConfig, v string) (err error) { c.Sync, err = parseSettingSync(v); return err },
		kafkaGet: func(c TopicConfig) (string, bool) { return nameOr(c.Sync, "default") },
		kafkaSet: func(c *TopicConfig, v string) error { c.Sync = v; return nil }},
	{Name: "sync-every", KafkaName: "flush.messages", Kind: "int", Default: strconv.Itoa(DefaultSyncEveryN),
		get: func(c TopicConfig) (string, bool) {
			return strconv.Itoa(c.SyncEveryRecords), c.SyncEveryRecords > 0
		},
		set: func(c *TopicConfig, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not a whole number", v)
			}
			if n < 0 {
				return fmt.Errorf("%d is negative", n)
			}
			c.SyncEveryRecords = n
			return nil
		},
		kafkaGet: func(c TopicConfig) (string, bool) { return kafkaCountOr(int64(c.SyncEveryRecords), "-1") },
		kafkaSet: func(c *TopicConfig, v string) error {
			n, err := parseKafkaCount(v)
			if err == nil && n > 0 && n < 1<<31 {
				c.SyncEveryRecords, c.Sync = int(n), SyncEveryN.String()
				if n == 1 {
					c.Sync = SyncAlways.String()
				}
			}
			return err
		}},
	{Name: "sync-interval", KafkaName: "flush.ms", Kind: "duration", Default: FormatDuration(DefaultSyncInterval),
		get: func(c TopicConfig) (string, bool) { return durationSetting(c.SyncInterval) },
		set: func(c *TopicConfig, v string) (err error) {
			c.SyncInterval, err = parseSettingDuration(v)
			return err
		},
		kafkaGet: func(c TopicConfig) (string, bool) { return kafkaMillis(c.SyncInterval) },
		kafkaSet: func(c *TopicConfig, v string) (err error) {
			if c.SyncInterval, err = parseKafkaMillis(v); err == nil && c.SyncInterval > 0 {
				c.Sync = SyncInterval.String()
			}
			return err
		}},
	{Name: "compression", KafkaName: "compression.type", Kind: "string", Default: "the writer's",
		get: func(c TopicConfig) (string, bool) { return c.Compression, c.Compression != "" },
		set: func(c *TopicConfig, v string) (err error) {
			c.Compression, err = parseSettingCodec(v)
			return err
		},
		kafkaGet: func(c TopicConfig) (string, bool) { return nameOr(c.Compression, "producer") },
		kafkaSet: func(c *TopicConfig, v string) error {
			switch v {
			case "producer":
				c.Compression = ""
			case "uncompressed":
				c.Compression = segment.CodecNone.String()
			default:
				c.Compression = v
			}
			return nil
		}},
	{Name: "retention-age", KafkaName: "retention.ms", Kind: "duration", Default: "none",
		get: func(c TopicConfig) (string, bool) { return durationSetting(c.RetentionAge) },
		set: func(c *TopicConfig, v string) (err error) {
			c.RetentionAge, err = parseSettingDuration(v)
			return err
		},
		kafkaGet: func(c TopicConfig) (string, bool) { return kafkaMillis(c.RetentionAge) },
		kafkaSet: func(c *TopicConfig, v string) (err error) { c.RetentionAge, err = parseKafkaMillis(v); return err }},
	{Name: "retention-bytes", KafkaName: "retention.bytes", Kind: "size", Default: "none",
		get:      func(c TopicConfig) (string, bool) { return sizeSetting(c.RetentionBytes) },
		set:      func(c *TopicConfig, v string) (err error) { c.RetentionBytes, err = ParseSize(v); return err },
		kafkaGet: func(c TopicConfig) (string, bool) { return kafkaCountOr(c.RetentionBytes, "-1") },
		kafkaSet: func(c *TopicConfig, v string) (err error) { c.RetentionBytes, err = parseKafkaCount(v); return err }},
	{Name: "retention-consumed", KafkaName: "seglog.retention.consumed", Kind: "bool", Default: "false",
		get: func(c TopicConfig) (string, bool) {
			return strconv.FormatBool(c.RetentionConsumed), c.RetentionConsumed
		},
		set: func(c *TopicConfig, v string) (err error) {
			c.RetentionConsumed, err = strconv.ParseBool(v)
			return err
		},
		kafkaGet: func(c TopicConfig) (string, bool) {
			return strconv.FormatBool(c.RetentionConsumed), c.RetentionConsumed
		},
		kafkaSet: func(c *TopicConfig, v string) (err error) {
			c.RetentionConsumed, err = strconv.ParseBool(v)
			return err
		}},
	{KafkaName: "message.timestamp.type", Kind: "string", Default: segment.CreateTime.String(),
		kafkaGet: func(c TopicConfig) (string, bool) { return nameOr(c.TimestampType, segment.CreateTime.String()) },
		kafkaSet: func(c *TopicConfig, v string) error { c.TimestampType = v; return nil }},
	{KafkaName: "cleanup.policy", Kind: "string", Default: "delete",
		kafkaGet: func(TopicConfig) (string, bool) { return "delete", false },
		kafkaSet: func(_ *TopicConfig, v string) error {
			if v != "delete" {
				return errors.New("only cleanup.policy=delete is supported (no compaction)")
			}
			return nil
		}},
}

// sizeSetting is a size in seglog's syntax, set when it is not 0.
func sizeSetting(v int64) (string, bool) { return FormatSize(v), v > 0 }

// durationSetting is a duration in seglog's syntax, set when it is not 0.
func durationSetting(d time.Duration) (string, bool) { return FormatDuration(d), d > 0 }

// nameOr is a name, or def when it is "".
func nameOr(v, def string) (string, bool) {
	if v == "" {
		return def, false
	}
	return v, true
}

// parseSettingDuration parses a duration that is not negative.
func parseSettingDuration(v string) (time.Duration, error) {
	d, err := ParseDuration(v)
	if err == nil && d < 0 {
		err = fmt.Errorf("%s is negative", FormatDuration(d))
	}
	return d, err
}

// parseSettingSync parses a sync policy name; "" or default is "".
func parseSettingSync(v string) (string, error) {
	if v == "" || v == "default" {
		return "", nil
	}
	if _, err := ParseSyncPolicy(v); err != nil {
		return "", fmt.Errorf("want %s", strings.Join(SyncPolicyNames(), ", "))
	}
	return v, nil
}

// parseSettingCodec parses a codec name; "" or default is "".
func parseSettingCodec(v string) (string, error) {
	if v == "" || v == "default" {
		return "", nil
	}
	if _, err := segment.ParseCodec(v); err != nil {
		return "", fmt.Errorf("want %s", strings.Join(segment.CodecNames(), ", "))
	}
	return v, nil
}

// parseKafkaMillis parses Kafka's milliseconds; -1 (no limit) is 0.
func parseKafkaMillis(v string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < -1 || n > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, fmt.Errorf("%q is not a count of milliseconds", v)
	}
	return time.Duration(max(n, 0)) * time.Millisecond, nil
}

// parseKafkaCount parses Kafka's count of bytes or records; -1 (no
// limit) is 0.
func parseKafkaCount(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < -1 {
		return 0, fmt.Errorf("%q is not a count", v)
	}
	return max(n, 0), nil
}

// kafkaMillis is a duration in Kafka's milliseconds, -1 for none.
func kafkaMillis(d time.Duration) (string, bool) {
	if d == 0 {
		return "-1", false
	}
	return strconv.FormatInt(d.Milliseconds(), 10), true
}

// kafkaCountOr is a count in Kafka's terms, or def when it is 0.
func kafkaCountOr(n int64, def string) (string, bool) {
	if n == 0 {
		return def, false
	}
	return strconv.FormatInt(n, 10), true
}
