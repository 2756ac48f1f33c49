package storage

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopicConfigSetTakesSeglogAndKafkaNames(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        TopicConfig
	}{
		{"segment-bytes", "64MiB", TopicConfig{SegmentBytes: 64 << 20}},
		{"segment.bytes", "1048576", TopicConfig{SegmentBytes: 1 << 20}},
		{"segment.bytes", "-1", TopicConfig{}},
		{"segment-age", "1h", TopicConfig{SegmentAge: time.Hour}},
		{"segment.ms", "3600000", TopicConfig{SegmentAge: time.Hour}},
		{"index-interval", "4KiB", TopicConfig{IndexIntervalBytes: 4096}},
		{"index.interval.bytes", "8192", TopicConfig{IndexIntervalBytes: 8192}},
		{"sync", "always", TopicConfig{Sync: "always"}},
		{"sync", "default", TopicConfig{}},
		{"seglog.sync", "interval", TopicConfig{Sync: "interval"}},
		{"sync-every", "100", TopicConfig{SyncEveryRecords: 100}},
		{"flush.messages", "1", TopicConfig{SyncEveryRecords: 1, Sync: "always"}},
		{"flush.messages", "50", TopicConfig{SyncEveryRecords: 50, Sync: "every-n"}},
		{"flush.messages", "-1", TopicConfig{}},
		{"sync-interval", "500ms", TopicConfig{SyncInterval: 500 * time.Millisecond}},
		{"flush.ms", "250", TopicConfig{SyncInterval: 250 * time.Millisecond, Sync: "interval"}},
		{"compression", "zstd", TopicConfig{Compression: "zstd"}},
		{"compression", "default", TopicConfig{}},
		{"compression.type", "uncompressed", TopicConfig{Compression: "none"}},
		{"compression.type", "producer", TopicConfig{}},
		{"message.timestamp.type", "LogAppendTime", TopicConfig{TimestampType: "LogAppendTime"}},
		{"retention-age", "7d", TopicConfig{RetentionAge: 7 * 24 * time.Hour}},
		{"retention.ms", "-1", TopicConfig{}},
		{"retention-bytes", "1GiB", TopicConfig{RetentionBytes: 1 << 30}},
		{"retention.bytes", "1000", TopicConfig{RetentionBytes: 1000}},
		{"retention-consumed", "true", TopicConfig{RetentionConsumed: true}},
		{"seglog.retention.consumed", "true", TopicConfig{RetentionConsumed: true}},
		{"cleanup.policy", "delete", TopicConfig{}},
	} {
		var c TopicConfig
		set := c.Set
		if strings.Contains(tc.name, ".") {
			set = c.SetKafka
		}
		require.NoError(t, set(tc.name, tc.value), "%s=%s", tc.name, tc.value)
		assert.Equal(t, tc.want, c, "%s=%s", tc.name, tc.value)
	}
}

func TestTopicConfigSetRefusesWithTheSettingAndWhy(t *testing.T) {
	for _, tc := range []struct{ name, value, why string }{
		{"segment-bytes", "64K", "want a size"},
		{"segment-age", "-1s", "-1s is negative"},
		{"segment-age", "60", "want a duration"},
		{"index-interval", "2GiB", "2GiB: at most 1GiB"},
		{"index.interval.bytes", "2147483648", "too large"},
		{"sync", "sometimes", "want never, every-n, interval, always"},
		{"sync-every", "-3", "-3 is negative"},
		{"compression", "s2", "want none, gzip, snappy, lz4, zstd"},
		{"retention.ms", "-2", "not a count of milliseconds"},
		{"segment.bytes", "1MiB", "not a count"},
		{"cleanup.policy", "compact", "no compaction"},
		{"max.message.bytes", "1", "unknown topic config"},
		{"segment.bytes", "x", "not a count"},
	} {
		var c TopicConfig
		set := c.Set
		if strings.Contains(tc.name, ".") {
			set = c.SetKafka
		}
		err := set(tc.name, tc.value)
		require.Error(t, err, "%s=%s", tc.name, tc.value)
		assert.ErrorIs(t, err, ErrInvalidOptions)
		var se *SettingError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, tc.name, se.Name)
		assert.Contains(t, se.Err.Error(), tc.why, "%s=%s", tc.name, tc.value)
	}
}

func TestTopicConfigGetAnswersInTheNamesSyntax(t *testing.T) {
	c := TopicConfig{SegmentBytes: 64 << 20, RetentionAge: 7 * 24 * time.Hour, Sync: "always", Compression: "zstd"}
	for _, tc := range []struct {
		name, want string
		own        bool
	}{
		{"segment-bytes", "64MiB", true},
		{"segment.bytes", "67108864", true},
		{"retention-age", "7d", true},
		{"retention.ms", "604800000", true},
		{"sync", "always", true},
		{"seglog.sync", "always", true},
		{"compression.type", "zstd", true},
		{"segment-age", "none", false},
		{"segment.ms", "-1", false},
		{"index-interval", "4KiB", false},
		{"index.interval.bytes", "4096", false},
		{"sync-every", "10000", false},
		{"flush.messages", "-1", false},
		{"sync-interval", "1s", false},
		{"retention-bytes", "none", false},
		{"retention.bytes", "-1", false},
		{"retention-consumed", "false", false},
		{"message.timestamp.type", "CreateTime", false},
		{"cleanup.policy", "delete", false},
		{"no.such.setting", "", false},
		{"no-such-setting", "", false},
	} {
		get := c.Get
		if strings.Contains(tc.name, ".") {
			get = c.GetKafka
		}
		v, own := get(tc.name)
		assert.Equal(t, tc.want, v, tc.name)
		assert.Equal(t, tc.own, own, tc.name)
	}
}

func TestTopicSettingsReadBackWhatTheyPrint(t *testing.T) {
	c := TopicConfig{SegmentBytes: 3 << 20, SegmentAge: 90 * time.Minute, IndexIntervalBytes: 8192, Sync: "every-n",
		SyncEveryRecords: 7, SyncInterval: 2 * time.Second, Compression: "lz4", TimestampType: "LogAppendTime",
		RetentionAge: 36 * time.Hour, RetentionBytes: 5 << 30, RetentionConsumed: true}
	require.NoError(t, c.Validate())
	var fromSeglog, fromKafka TopicConfig
	for _, s := range TopicSettings() {
		require.NotEmpty(t, s.KafkaName)
		if s.Name != "" {
			v, own := c.Get(s.Name)
			require.True(t, own, s.Name)
			require.NoError(t, fromSeglog.Set(s.Name, v), s.Name)
		}
		v, _ := c.GetKafka(s.KafkaName)
		require.NoError(t, fromKafka.SetKafka(s.KafkaName, v), s.KafkaName)
	}
	fromSeglog.TimestampType = c.TimestampType // Kafka's name only
	assert.Equal(t, c, fromSeglog)
	fromKafka.Sync = c.Sync // flush.messages and flush.ms, after seglog.sync, set Sync too
	assert.Equal(t, c, fromKafka)
}

func TestTopicConfigSetTakesOnlyItsOwnNames(t *testing.T) {
	var c TopicConfig
	assert.ErrorIs(t, c.Set("segment.bytes", "1048576"), ErrInvalidOptions, "Set takes seglog's names")
	assert.ErrorIs(t, c.SetKafka("segment-bytes", "1MiB"), ErrInvalidOptions, "SetKafka takes Kafka's names")
	assert.Equal(t, TopicConfig{}, c)
}

func TestTopicConfigStringListsWhatTheTopicSets(t *testing.T) {
	for _, tc := range []struct {
		cfg  TopicConfig
		want string
	}{
		{TopicConfig{}, "defaults"},
		{TopicConfig{SegmentBytes: 64 << 20, Sync: "always"}, "segment-bytes=64MiB sync=always"},
		{TopicConfig{RetentionAge: 7 * 24 * time.Hour, TimestampType: "LogAppendTime"}, "retention-age=7d message.timestamp.type=LogAppendTime"},
	} {
		assert.Equal(t, tc.want, tc.cfg.String())
	}
}
