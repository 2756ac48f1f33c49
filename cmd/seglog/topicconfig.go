package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// syncNames are storage.ParseSyncPolicy's names, in storage's order: the
// only values every --sync flag takes.
var syncNames = storage.SyncPolicyNames()

// codecNames are segment.ParseCodec's names: the values of --compression.
var codecNames = segment.CodecNames()

// parseSync parses a --sync value with storage.ParseSyncPolicy.
func parseSync(s string) (storage.SyncPolicy, error) {
	p, err := storage.ParseSyncPolicy(s)
	if err != nil {
		return 0, fmt.Errorf("--sync %q: want %s", s, strings.Join(syncNames, ", "))
	}
	return p, nil
}

// topicConfigFlags are the flags of topics create and topics alter, one
// per setting of storage.TopicSettings that seglog names.
type topicConfigFlags []*settingValue

// settingValue is a topic setting's flag (pflag.Value) that keeps the
// value as given. Sizes, durations, numbers and booleans are checked with
// storage.TopicConfig.Set when the flag is parsed; names (sync,
// compression) when apply sets them.
type settingValue struct {
	setting storage.TopicSetting
	value   string
}

// String returns the value as given.
func (v *settingValue) String() string { return v.value }

// Set keeps the value, and checks it unless it is a name.
func (v *settingValue) Set(s string) error {
	if v.setting.Kind != "string" {
		var scratch storage.TopicConfig
		var se *storage.SettingError
		if err := scratch.Set(v.setting.Name, s); errors.As(err, &se) {
			return se.Err
		} else if err != nil {
			return err
		}
	}
	v.value = s
	return nil
}

// Type names the value in help: size, duration, int, string or bool.
func (v *settingValue) Type() string { return v.setting.Kind }

// topicFlagUsage is each setting flag's help; %s is what 0 (or "default")
// and a missing flag mean.
var topicFlagUsage = map[string]string{
	"segment-bytes":      "roll a segment when it would pass this size (%s, 1GiB)",
	"segment-age":        "roll a segment when its first record is this old (%s, no age roll)",
	"index-interval":     "log bytes between index entries (%s, 4KiB)",
	"sync":               "fsync policy: " + strings.Join(syncNames, ", ") + " %s",
	"sync-every":         "records between fsyncs of --sync every-n (%s, 10000)",
	"sync-interval":      "period of --sync interval (%s, 1s)",
	"compression":        "codec of the batches appended: " + strings.Join(codecNames, ", ") + " %s",
	"retention-age":      "retention deletes segments whose newest record is older than this (0: no age limit)",
	"retention-bytes":    "retention deletes a partition's oldest segments while it is over this size (0: no size limit)",
	"retention-consumed": "retention deletes segments every consumer group reading the topic has committed past",
}

// add adds the flags to cmd. alter words the help for changing a topic:
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
	for _, s := range storage.TopicSettings() {
		if s.Name == "" {
			continue
		}
		v := &settingValue{setting: s}
		*t = append(*t, v)
		usage := topicFlagUsage[s.Name]
		switch {
		case s.Kind == "string":
			usage = fmt.Sprintf(usage, name)
		case strings.Contains(usage, "%s"):
			usage = fmt.Sprintf(usage, unset)
		}
		fs.Var(v, s.Name, usage)
		if s.Kind == "bool" {
			fs.Lookup(s.Name).NoOptDefVal = "true"
		}
	}
	completeValues(cmd, "sync", append(syncNames[:len(syncNames):len(syncNames)], "default"))
	completeValues(cmd, "compression", append(codecNames[:len(codecNames):len(codecNames)], "default"))
}

// apply returns cfg with the flags that were given in place of its
// values, and checks it.
func (t topicConfigFlags) apply(fs *pflag.FlagSet, cfg storage.TopicConfig) (storage.TopicConfig, error) {
	for _, v := range t {
		if fs.Changed(v.setting.Name) {
			var se *storage.SettingError
			if err := cfg.Set(v.setting.Name, v.value); errors.As(err, &se) {
				return cfg, fmt.Errorf("--%s %q: %v", se.Name, se.Value, se.Err)
			} else if err != nil {
				return cfg, err
			}
		}
	}
	return cfg, cfg.Validate()
}

// configEntry is one setting of a topic as describe shows it.
type configEntry struct {
	Name    string `json:"name"`    // the flag's name
	Value   string `json:"value"`   // the topic's value, "" when not set
	Default string `json:"default"` // what applies when it is not set
}

// writerDefaults says, beside storage's "the writer's", what seglog
// produce writes with.
var writerDefaults = map[string]string{"sync": "; seglog produce: never", "compression": "; seglog produce: none"}

// configEntries lists a topic's configuration, every setting seglog
// names with its value (or "") and what applies without one.
func configEntries(cfg storage.TopicConfig) []configEntry {
	var out []configEntry
	for _, s := range storage.TopicSettings() {
		if s.Name == "" {
			continue
		}
		v, own := cfg.Get(s.Name)
		if !own {
			v = ""
		}
		out = append(out, configEntry{s.Name, v, s.Default + writerDefaults[s.Name]})
	}
	return out
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
