package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// syncNames are storage.ParseSyncPolicy's names, in storage's order: the
// only values every --sync flag takes.
var syncNames = []string{storage.SyncNever.String(), storage.SyncEveryN.String(), storage.SyncInterval.String(), storage.SyncAlways.String()}

// codecNames are segment.ParseCodec's names: the values of --compression.
var codecNames = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// parseSync parses a --sync value with storage.ParseSyncPolicy.
func parseSync(s string) (storage.SyncPolicy, error) {
	p, err := storage.ParseSyncPolicy(s)
	if err != nil {
		return 0, fmt.Errorf("--sync %q: want %s", s, strings.Join(syncNames, ", "))
	}
	return p, nil
}

// parseCodec parses a --compression value with segment.ParseCodec.
func parseCodec(s string) (segment.Codec, error) {
	c, err := segment.ParseCodec(s)
	if err != nil {
		return 0, fmt.Errorf("--compression %q: want %s", s, strings.Join(codecNames, ", "))
	}
	return c, nil
}

// topicConfigFlags are the flags of topics create and topics alter, one
// per storage.TopicConfig field.
type topicConfigFlags struct {
	segmentBytes      int64
	segmentAge        time.Duration
	indexInterval     int64
	sync              string
	syncEvery         int
	syncInterval      time.Duration
	compression       string
	retentionAge      time.Duration
	retentionBytes    int64
	retentionConsumed bool
}

// topicConfigFlagNames lists the flags in the order describe shows them.
var topicConfigFlagNames = []string{"segment-bytes", "segment-age", "index-interval", "sync", "sync-every", "sync-interval", "compression", "retention-age", "retention-bytes", "retention-consumed"}

// add adds the flags to fs. alter words the help for changing a topic:
// a flag not given keeps the topic's value, 0 or "default" returns it to
// the default.
func (t *topicConfigFlags) add(cmd *cobra.Command, alter bool) {
	fs := cmd.Flags()
	unset := "0: the default"
	name := "(default: the default)"
	if alter {
		unset = "0: back to the default; not given: unchanged"
		name = "(default: back to the default; not given: unchanged)"
	}
	sizeFlag(fs, &t.segmentBytes, "segment-bytes", 0, "roll a segment when it would pass this size ("+unset+", 1GiB)")
	durationFlag(fs, &t.segmentAge, "segment-age", 0, "roll a segment when its first record is this old ("+unset+", no age roll)")
	sizeFlag(fs, &t.indexInterval, "index-interval", 0, "log bytes between index entries ("+unset+", 4KiB)")
	fs.StringVar(&t.sync, "sync", "", "fsync policy: "+strings.Join(syncNames, ", ")+" "+name)
	fs.IntVar(&t.syncEvery, "sync-every", 0, "records between fsyncs of --sync every-n ("+unset+", 10000)")
	durationFlag(fs, &t.syncInterval, "sync-interval", 0, "period of --sync interval ("+unset+", 1s)")
	fs.StringVar(&t.compression, "compression", "", "codec of the batches appended: "+strings.Join(codecNames, ", ")+" "+name)
	durationFlag(fs, &t.retentionAge, "retention-age", 0, "retention deletes segments whose newest record is older than this (0: no age limit)")
	sizeFlag(fs, &t.retentionBytes, "retention-bytes", 0, "retention deletes a partition's oldest segments while it is over this size (0: no size limit)")
	fs.BoolVar(&t.retentionConsumed, "retention-consumed", false, "retention deletes segments every consumer group reading the topic has committed past")
	completeValues(cmd, "sync", append(syncNames[:len(syncNames):len(syncNames)], "default"))
	completeValues(cmd, "compression", append(codecNames[:len(codecNames):len(codecNames)], "default"))
}

// apply returns cfg with the flags that were given (all of them when all
// is set) in place of its values, and checks it.
func (t *topicConfigFlags) apply(fs *pflag.FlagSet, cfg storage.TopicConfig, all bool) (storage.TopicConfig, error) {
	set := func(name string) bool { return all || fs.Changed(name) }
	if set("segment-bytes") {
		cfg.SegmentBytes = t.segmentBytes
	}
	if set("segment-age") {
		cfg.SegmentAge = t.segmentAge
	}
	if set("index-interval") {
		if t.indexInterval > 1<<30 {
			return cfg, fmt.Errorf("--index-interval %s: at most 1GiB", formatSize(t.indexInterval))
		}
		cfg.IndexIntervalBytes = int(t.indexInterval)
	}
	if set("sync") {
		cfg.Sync = t.sync
		if t.sync == "default" {
			cfg.Sync = ""
		} else if t.sync != "" {
			if _, err := parseSync(t.sync); err != nil {
				return cfg, err
			}
		}
	}
	if set("sync-every") {
		if t.syncEvery < 0 {
			return cfg, fmt.Errorf("--sync-every %d is negative", t.syncEvery)
		}
		cfg.SyncEveryRecords = t.syncEvery
	}
	if set("sync-interval") {
		cfg.SyncInterval = t.syncInterval
	}
	if set("compression") {
		cfg.Compression = t.compression
		if t.compression == "default" {
			cfg.Compression = ""
		} else if t.compression != "" {
			if _, err := parseCodec(t.compression); err != nil {
				return cfg, err
			}
		}
	}
	if set("retention-age") {
		cfg.RetentionAge = t.retentionAge
	}
	if set("retention-bytes") {
		cfg.RetentionBytes = t.retentionBytes
	}
	if set("retention-consumed") {
		cfg.RetentionConsumed = t.retentionConsumed
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"segment-age", cfg.SegmentAge}, {"sync-interval", cfg.SyncInterval}, {"retention-age", cfg.RetentionAge}} {
		if d.v < 0 {
			return cfg, fmt.Errorf("--%s %s is negative", d.name, formatDuration(d.v))
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// configEntry is one setting of a topic as describe shows it.
type configEntry struct {
	Name    string `json:"name"`    // the flag's name
	Value   string `json:"value"`   // the topic's value, "" when not set
	Default string `json:"default"` // what applies when it is not set
}

// configEntries lists a topic's configuration, every setting with its
// value (or "") and what applies without one: storage's defaults; for
// sync and compression, those of the process that opens the topic.
func configEntries(cfg storage.TopicConfig) []configEntry {
	opt := func(set bool, v string) string {
		if set {
			return v
		}
		return ""
	}
	return []configEntry{
		{"segment-bytes", opt(cfg.SegmentBytes > 0, formatSize(cfg.SegmentBytes)), formatSize(storage.DefaultSegmentBytes)},
		{"segment-age", opt(cfg.SegmentAge > 0, formatDuration(cfg.SegmentAge)), "none"},
		{"index-interval", opt(cfg.IndexIntervalBytes > 0, formatSize(int64(cfg.IndexIntervalBytes))), formatSize(segment.DefaultIndexIntervalBytes)},
		{"sync", cfg.Sync, "the writer's; seglog produce: never"},
		{"sync-every", opt(cfg.SyncEveryRecords > 0, strconv.Itoa(cfg.SyncEveryRecords)), strconv.Itoa(storage.DefaultSyncEveryN)},
		{"sync-interval", opt(cfg.SyncInterval > 0, formatDuration(cfg.SyncInterval)), formatDuration(storage.DefaultSyncInterval)},
		{"compression", cfg.Compression, "the writer's; seglog produce: none"},
		{"retention-age", opt(cfg.RetentionAge > 0, formatDuration(cfg.RetentionAge)), "none"},
		{"retention-bytes", opt(cfg.RetentionBytes > 0, formatSize(cfg.RetentionBytes)), "none"},
		{"retention-consumed", opt(cfg.RetentionConsumed, "true"), "false"},
	}
}

// configSummary writes the settings a topic sets, "key=value ...", or
// "defaults".
func configSummary(cfg storage.TopicConfig) string {
	var parts []string
	for _, e := range configEntries(cfg) {
		if e.Value != "" {
			parts = append(parts, e.Name+"="+e.Value)
		}
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, " ")
}

// completeValues completes a flag's value from a fixed list.
func completeValues(cmd *cobra.Command, flag string, values []string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// completeTopics completes --topic with the topics of the data directory
// that --dir names (read-only), and --dir with directories.
func completeTopics(cmd *cobra.Command, dir *string) {
	_ = cmd.MarkFlagDirname("dir")
	if cmd.Flags().Lookup("topic") == nil {
		return
	}
	_ = cmd.RegisterFlagCompletionFunc("topic", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		if *dir == "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		s, err := storage.OpenStore(*dir, storage.StoreOptions{Log: storage.Options{ReadOnly: true}})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer s.Close()
		var names []string
		for _, t := range s.Topics() {
			names = append(names, t.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}
