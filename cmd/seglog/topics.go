package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/consumer"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

type topicRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Segments  int    `json:"segments"`
	Bytes     int64  `json:"bytes"`
	Start     int64  `json:"start_offset"`
	End       int64  `json:"end_offset"`
}

func topicsCommand(e *env) *cobra.Command {
	var dir string
	var asJSON bool
	list := func(c *cli, pos []string) int {
		if len(pos) > 0 {
			return c.usageErr("unknown subcommand %q: want list, create, alter or delete", pos[0])
		}
		if dir == "" {
			return c.usageErr("--dir is required")
		}
		return listTopics(c, dir, asJSON)
	}
	cmd := command(e, "topics", "list, create, alter and delete topics", list)
	ls := command(e, "list", "list the topics and their partitions (read-only)", list)
	for _, c := range []*cobra.Command{cmd, ls} { // topics lists as topics list does
		c.Flags().StringVar(&dir, "dir", "", "data directory (required)")
		c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per partition per line instead of a table")
		_ = c.MarkFlagDirname("dir")
	}
	cmd.AddCommand(ls, topicsCreateCommand(e), topicsAlterCommand(e), topicsDeleteCommand(e))
	return cmd
}

func listTopics(c *cli, dir string, asJSON bool) int {
	store, code := openStoreReadOnly(c, dir)
	if store == nil {
		return code
	}
	defer store.Close()
	var rows []topicRow
	for _, t := range store.Topics() {
		for p := int32(0); p < int32(t.Partitions); p++ {
			l, err := store.Follower(t.Name, p)
			if err != nil {
				return c.fail("%v", err)
			}
			st, err := l.Stats()
			if err != nil {
				return c.fail("%s: %v", storage.PartitionDir(t.Name, p), err)
			}
			rows = append(rows, topicRow{Topic: t.Name, Partition: p, Segments: st.Segments, Bytes: st.Size, Start: st.StartOffset, End: st.EndOffset})
		}
	}
	return printRows(c, c.e.stdout, rows, asJSON, true, "TOPIC\tPARTITION\tSEGMENTS\tSIZE\tSTART\tEND\tRECORDS", func(r topicRow) string {
		return fmt.Sprintf("%s\t%d\t%d\t%s\t%d\t%d\t%d", r.Topic, r.Partition, r.Segments, humanBytes(r.Bytes), r.Start, r.End, r.End-r.Start)
	})
}

func topicsCreateCommand(e *env) *cobra.Command {
	var dir, topic string
	var partitions int
	var tc topicConfigFlags
	cmd := command(e, "create", "create a topic with its configuration", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q", "dir", dir, "topic", topic); bad {
			return code
		}
		if partitions < 1 {
			return c.usageErr("--partitions %d: want at least 1", partitions)
		}
		if err := storage.ValidateTopic(topic); err != nil {
			return c.usageErr("%v", err)
		}
		cfg, err := tc.apply(c.cmd.Flags(), storage.TopicConfig{})
		if err != nil {
			return c.usageErr("%v", err)
		}
		store, code := openStore(c, dir, true, storage.StoreOptions{Log: storage.Options{FS: e.fs}})
		if store == nil {
			return code
		}
		defer store.Close()
		if n, err := store.Partitions(topic); err == nil {
			old, err := store.TopicConfig(topic)
			if err != nil {
				return c.fail("%v", err)
			}
			if n != partitions || old != cfg {
				return c.fail("topic %s exists (%s, %s): change it with seglog topics alter", topic, plural(int64(n), "partition"), old)
			}
			fmt.Fprintf(e.stdout, "topic %s exists: %s, %s\n", topic, plural(int64(n), "partition"), old)
			return exitOK
		}
		if err := store.CreateTopic(topic, partitions, cfg); err != nil {
			return c.fail("%v", err)
		}
		if err := store.Close(); err != nil {
			return c.fail("%v", err)
		}
		fmt.Fprintf(e.stdout, "topic %s created: %s, %s\n", topic, plural(int64(partitions), "partition"), cfg)
		return exitOK
	})
	cmd.Flags().StringVar(&dir, "dir", "", "data directory (required; created if needed)")
	cmd.Flags().StringVar(&topic, "topic", "", "topic (required)")
	cmd.Flags().IntVar(&partitions, "partitions", 1, "number of partitions")
	tc.add(cmd, false)
	_ = cmd.MarkFlagDirname("dir")
	return cmd
}

func topicsAlterCommand(e *env) *cobra.Command {
	var dir, topic string
	var partitions int
	var tc topicConfigFlags
	cmd := command(e, "alter", "change a topic's configuration or add partitions", func(c *cli, pos []string) int {
		store, n, code := openTopicStore(c, e, pos, dir, topic)
		if store == nil {
			return code
		}
		defer store.Close()
		old, err := store.TopicConfig(topic)
		if err != nil {
			return c.fail("%v", err)
		}
		cfg, err := tc.apply(c.cmd.Flags(), old)
		if err != nil {
			return c.usageErr("%v", err)
		}
		if c.isSet("partitions") && partitions < n {
			return c.fail("--partitions %d: topic %s has %s, and partitions cannot be removed", partitions, topic, plural(int64(n), "partition"))
		}
		if cfg != old {
			if err := store.AlterTopic(topic, cfg); err != nil {
				return c.fail("%v", err)
			}
		}
		if c.isSet("partitions") && partitions > n {
			if err := store.CreateTopic(topic, partitions, cfg); err != nil {
				return c.fail("%v", err)
			}
			n = partitions
		}
		if err := store.Close(); err != nil {
			return c.fail("%v", err)
		}
		fmt.Fprintf(e.stdout, "topic %s: %s, %s\n", topic, plural(int64(n), "partition"), cfg)
		return exitOK
	})
	cmd.Flags().StringVar(&dir, "dir", "", "data directory (required)")
	cmd.Flags().StringVar(&topic, "topic", "", "topic (required)")
	cmd.Flags().IntVar(&partitions, "partitions", 0, "add partitions up to this count")
	tc.add(cmd, true)
	completeTopics(cmd, &dir)
	return cmd
}

func topicsDeleteCommand(e *env) *cobra.Command {
	var dir, topic string
	cmd := command(e, "delete", "delete a topic, its data and its committed offsets", func(c *cli, pos []string) int {
		store, _, code := openTopicStore(c, e, pos, dir, topic)
		if store == nil {
			return code
		}
		defer store.Close()
		groups, code := dropTopicOffsets(c, dir, topic)
		if code != exitOK {
			return code
		}
		if err := store.DeleteTopic(topic); err != nil {
			return c.fail("%v", err)
		}
		if len(groups) > 0 {
			fmt.Fprintf(e.stdout, "topic %s deleted, with the committed offsets of %s %v\n", topic, plural(int64(len(groups)), "group"), groups)
		} else {
			fmt.Fprintf(e.stdout, "topic %s deleted\n", topic)
		}
		return exitOK
	})
	cmd.Flags().StringVar(&dir, "dir", "", "data directory (required)")
	cmd.Flags().StringVar(&topic, "topic", "", "topic (required)")
	completeTopics(cmd, &dir)
	return cmd
}

// dropTopicOffsets removes every group's committed offsets on topic (and
// its interest in it) in one durable record; it returns the groups.
func dropTopicOffsets(c *cli, dir, topic string) ([]string, int) {
	ost, err := openOffsetsIfAny(dir)
	if err != nil {
		return nil, c.fail("%v: nothing was deleted", err)
	}
	if ost == nil {
		return nil, exitOK
	}
	defer ost.Close()
	groups := consumer.Readers(ost, topic)
	if err := ost.DeleteTopic(topic); err != nil {
		return nil, c.fail("remove the committed offsets on %s: %v: nothing was deleted", topic, err)
	}
	if err := ost.Close(); err != nil {
		return nil, c.fail("close the offset store: %v", err)
	}
	return groups, exitOK
}

// openOffsetsIfAny opens the offset store to write when the data
// directory has one; nil without one (and without creating it).
func openOffsetsIfAny(dir string) (*offsets.Store, error) {
	if _, err := os.Stat(offsets.Dir(dir)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return openOffsets(dir)
}

// openTopicStore checks the arguments of a command on an existing topic
// (--dir and --topic, no positional ones), opens the store for writing and
// finds the topic's partition count. A nil store comes with the exit code.
func openTopicStore(c *cli, e *env, pos []string, dir, topic string) (*storage.Store, int, int) {
	if code, bad := c.required(pos, "unexpected argument %q", "dir", dir, "topic", topic); bad {
		return nil, 0, code
	}
	if err := storage.ValidateTopic(topic); err != nil {
		return nil, 0, c.usageErr("%v", err)
	}
	store, code := openStore(c, dir, false, storage.StoreOptions{Log: storage.Options{FS: e.fs}})
	if store == nil {
		return nil, 0, code
	}
	n, code, ok := topicPartitions(c, store, dir, topic)
	if !ok {
		_ = store.Close()
		return nil, 0, code
	}
	return store, n, 0
}
