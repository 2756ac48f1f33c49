package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/consumer"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

const topicsDesc = `
List the topics of a data directory, read-only: per partition its
segments, size, log start and end offsets and the number of records
(end - start). Works beside a running producer or broker.

  seglog topics create --dir DIR --topic T --partitions N [config flags]
  seglog topics alter  --dir DIR --topic T [--partitions N] [config flags]
  seglog topics delete --dir DIR --topic T

A topic's configuration (segment size and age, index interval, fsync
policy, compression, retention) is stored with the topic and used by every
later open of its partitions; seglog describe shows it. create, alter and
delete need the data directory to themselves (no producer running).`

const topicsExample = `
seglog topics --dir /var/lib/seglog
seglog topics create --dir /var/lib/seglog --topic events --partitions 6 --segment-bytes 64MiB --retention-age 7d
seglog topics alter --dir /var/lib/seglog --topic events --retention-bytes 10GiB --compression zstd
seglog topics delete --dir /var/lib/seglog --topic scratch`

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
	cmd := command(e, "topics", "list, create, alter and delete topics", topicsDesc, topicsExample, list)
	cmd.Flags().StringVar(&dir, "dir", "", "data directory (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per partition per line instead of a table")
	_ = cmd.MarkFlagDirname("dir")

	ls := command(e, "list", "list the topics and their partitions (read-only)", "The same as seglog topics.", "seglog topics list --dir /var/lib/seglog", list)
	ls.Flags().StringVar(&dir, "dir", "", "data directory (required)")
	ls.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per partition per line instead of a table")
	_ = ls.MarkFlagDirname("dir")
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
	w := bufio.NewWriter(c.e.stdout)
	if asJSON {
		for _, r := range rows {
			_ = writeJSONLine(w, r)
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tSEGMENTS\tSIZE\tSTART\tEND\tRECORDS")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%d\n", r.Topic, r.Partition, r.Segments, humanBytes(r.Bytes), r.Start, r.End, r.End-r.Start)
		}
		tw.Flush()
	}
	if err := w.Flush(); err != nil {
		return c.fail("write output: %v", err)
	}
	return exitOK
}

const topicsCreateDesc = `
Create a topic with --partitions partitions and its configuration (the
data directory is created if needed). A setting not given takes the
default of the process that opens the topic (storage's defaults, or for
--sync and --compression, the flags of seglog produce). Creating a topic
that exists with the same partition count and configuration does nothing;
use topics alter to change it.`

func topicsCreateCommand(e *env) *cobra.Command {
	var dir, topic string
	var partitions int
	var tc topicConfigFlags
	cmd := command(e, "create", "create a topic with its configuration", topicsCreateDesc,
		"seglog topics create --dir /var/lib/seglog --topic events --partitions 6 --segment-bytes 64MiB --retention-age 7d --compression zstd --sync always",
		func(c *cli, pos []string) int {
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
					return c.fail("topic %s exists (%s, %s): change it with seglog topics alter", topic, plural(int64(n), "partition"), configSummary(old))
				}
				fmt.Fprintf(e.stdout, "topic %s exists: %s, %s\n", topic, plural(int64(n), "partition"), configSummary(old))
				return exitOK
			}
			if err := store.CreateTopic(topic, partitions, cfg); err != nil {
				return c.fail("%v", err)
			}
			if err := store.Close(); err != nil {
				return c.fail("%v", err)
			}
			fmt.Fprintf(e.stdout, "topic %s created: %s, %s\n", topic, plural(int64(partitions), "partition"), configSummary(cfg))
			return exitOK
		})
	cmd.Flags().StringVar(&dir, "dir", "", "data directory (required; created if needed)")
	cmd.Flags().StringVar(&topic, "topic", "", "topic (required)")
	cmd.Flags().IntVar(&partitions, "partitions", 1, "number of partitions")
	tc.add(cmd, false)
	_ = cmd.MarkFlagDirname("dir")
	return cmd
}

const topicsAlterDesc = `
Change a topic's configuration: each setting given replaces the topic's
(0, or "default" for --sync and --compression, returns it to the default);
the others stay. --partitions N adds partitions up to N (they cannot be
removed). Partitions opened from then on use the new configuration; the
retention settings count at the next retention run.`

func topicsAlterCommand(e *env) *cobra.Command {
	var dir, topic string
	var partitions int
	var tc topicConfigFlags
	cmd := command(e, "alter", "change a topic's configuration or add partitions", topicsAlterDesc,
		"seglog topics alter --dir /var/lib/seglog --topic events --retention-age 3d --segment-age 0\nseglog topics alter --dir /var/lib/seglog --topic events --partitions 12",
		func(c *cli, pos []string) int {
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
			fmt.Fprintf(e.stdout, "topic %s: %s, %s\n", topic, plural(int64(n), "partition"), configSummary(cfg))
			return exitOK
		})
	cmd.Flags().StringVar(&dir, "dir", "", "data directory (required)")
	cmd.Flags().StringVar(&topic, "topic", "", "topic (required)")
	cmd.Flags().IntVar(&partitions, "partitions", 0, "add partitions up to this count")
	tc.add(cmd, true)
	completeTopics(cmd, &dir)
	return cmd
}

const topicsDeleteDesc = `
Delete a topic and all its data, irrecoverably, and the committed offsets
of every consumer group on it (one atomic record of the offset store), so
that a topic created again under the name is read from its start rather
than silently skipped up to the old positions. The offsets go first: a
crash in between leaves the topic without committed offsets (its groups
read it again from --from), never stale offsets on a new topic. It needs
the data directory to itself (no producer running: it refuses, changing
nothing); stop the topic's consumers first, since a consumer still
running would commit its old position again.`

func topicsDeleteCommand(e *env) *cobra.Command {
	var dir, topic string
	cmd := command(e, "delete", "delete a topic, its data and its committed offsets", topicsDeleteDesc,
		"seglog topics delete --dir /var/lib/seglog --topic scratch",
		func(c *cli, pos []string) int {
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
	if _, err := os.Stat(offsetsPath(dir)); errors.Is(err, fs.ErrNotExist) {
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
