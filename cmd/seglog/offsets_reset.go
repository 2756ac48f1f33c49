package main

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/consumer"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

// resetFlags are the offsets reset command's flags.
type resetFlags struct {
	dir, group, topic, toDatetime                    string
	partition                                        int
	allTopics, execute, toEarliest, toLatest, asJSON bool
	toOffset, shiftBy                                int64
	byDuration                                       time.Duration
}

func offsetsResetCommand(e *env) *cobra.Command {
	var o resetFlags
	cmd := command(e, "reset", "set a group's committed offsets (a dry run unless --execute)", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q", "dir", o.dir, "group", o.group); bad {
			return code
		}
		if (o.topic == "") == !o.allTopics {
			return c.usageErr("give --topic T or --all-topics")
		}
		if o.allTopics && o.partition >= 0 {
			return c.usageErr("--partition needs --topic")
		}
		spec, code, ok := o.spec(c)
		if !ok {
			return code
		}
		return o.reset(e, c, spec)
	})
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "data directory (required)")
	f.StringVar(&o.group, "group", "", "consumer group (required)")
	f.StringVar(&o.topic, "topic", "", "the topic to reset")
	f.IntVar(&o.partition, "partition", -1, "only this partition of --topic (-1: all)")
	f.BoolVar(&o.allTopics, "all-topics", false, "every topic the group reads")
	f.BoolVar(&o.toEarliest, "to-earliest", false, "to the log start")
	f.BoolVar(&o.toLatest, "to-latest", false, "to the log end")
	f.Int64Var(&o.toOffset, "to-offset", 0, "to this offset")
	f.StringVar(&o.toDatetime, "to-datetime", "", "to the first record at or after this time (RFC 3339, local 2024-05-01T14:00:00, or ms:MILLIS)")
	durationFlag(f, &o.byDuration, "by-duration", 0, "to the first record at or after this long ago")
	f.Int64Var(&o.shiftBy, "shift-by", 0, "by this many records from the committed offset (negative: back)")
	f.BoolVar(&o.execute, "execute", false, "commit the new offsets (without it: a dry run)")
	f.BoolVar(&o.asJSON, "json", false, "print the plan as one JSON object per partition per line")
	completeTopics(cmd, &o.dir)
	return cmd
}

// spec returns where the one given --to-*, --by-duration or --shift-by
// flag moves the offsets; ok is false after a usage error, with its exit
// code.
func (o *resetFlags) spec(c *cli) (spec consumer.Position, code int, ok bool) {
	n := 0
	for _, t := range []struct {
		flag string
		spec func() (consumer.Position, error)
	}{
		{"to-earliest", func() (consumer.Position, error) { return consumer.Earliest(), nil }},
		{"to-latest", func() (consumer.Position, error) { return consumer.Latest(), nil }},
		{"to-offset", func() (consumer.Position, error) {
			if o.toOffset < 0 {
				return consumer.Position{}, fmt.Errorf("--to-offset %d is negative", o.toOffset)
			}
			return consumer.AtOffset(o.toOffset), nil
		}},
		{"to-datetime", func() (consumer.Position, error) {
			ms, err := consumer.ParseTime(o.toDatetime)
			if err != nil {
				return consumer.Position{}, fmt.Errorf("--to-datetime %w", err)
			}
			return consumer.AtTime(ms), nil
		}},
		{"by-duration", func() (consumer.Position, error) {
			if o.byDuration < 0 {
				return consumer.Position{}, fmt.Errorf("--by-duration %s is negative", storage.FormatDuration(o.byDuration))
			}
			return consumer.AtTime(time.Now().Add(-o.byDuration).UnixMilli()), nil
		}},
		{"shift-by", func() (consumer.Position, error) { return consumer.ShiftBy(o.shiftBy), nil }},
	} {
		if !c.isSet(t.flag) {
			continue
		}
		n++
		s, err := t.spec()
		if err != nil {
			return spec, c.usageErr("%v", err), false
		}
		spec = s
	}
	if n != 1 {
		return spec, c.usageErr("give one of --to-earliest, --to-latest, --to-offset, --to-datetime, --by-duration, --shift-by"), false
	}
	return spec, 0, true
}

// reset plans the move of the group's offsets to spec, prints the plan
// and, with --execute, commits it.
func (o *resetFlags) reset(e *env, c *cli, spec consumer.Position) int {
	store, code := openStoreReadOnly(c, o.dir)
	if store == nil {
		return code
	}
	defer store.Close()
	// The plan reads the offsets read-only; --execute opens the
	// store to write only to commit.
	cur, err := readOffsets(o.dir)
	if err != nil && !errors.Is(err, errNoOffsetStore) {
		return c.fail("%v", err)
	}
	if cur != nil {
		defer cur.Close()
	}
	topics, code, ok := o.topics(c, store, cur)
	if !ok {
		return code
	}
	rows, code, ok := planReset(c, store, o.dir, cur, o.group, topics, o.partition, spec)
	if !ok {
		return code
	}
	code = printRows(c, e.stdout, rows, o.asJSON, false, "GROUP\tTOPIC\tPARTITION\tCURRENT\tNEW", func(r consumer.Reset) string {
		note := ""
		if r.Note != "" {
			note = "  " + r.Note
		}
		return fmt.Sprintf("%s\t%s\t%d\t%s\t%d%s", r.Group, r.Topic, r.Partition, optInt(r.Current), r.New, note)
	})
	if code != exitOK {
		return code
	}
	if !o.execute {
		c.warn("dry run: nothing was changed; add --execute to commit these offsets")
		return exitOK
	}
	if cur != nil {
		cur.Close() // commit opens the store to write; the deferred Close is then a no-op
	}
	return o.commit(c, rows)
}

// topics returns the topics to reset: --topic, or with --all-topics those
// the group reads; ok is false after an error, with its exit code.
func (o *resetFlags) topics(c *cli, store *storage.Store, cur *offsets.Store) (topics []string, code int, ok bool) {
	if o.allTopics {
		if cur != nil {
			topics = consumer.GroupTopics(store, cur, o.group)
		}
		if len(topics) == 0 {
			return nil, c.fail("group %s reads no topic of %s", o.group, o.dir), false
		}
		return topics, 0, true
	}
	if err := storage.ValidateTopic(o.topic); err != nil {
		return nil, c.usageErr("%v", err), false
	}
	return []string{o.topic}, 0, true
}

// commit opens the offset store and commits the new offsets of rows for
// the group in one batch.
func (o *resetFlags) commit(c *cli, rows []consumer.Reset) int {
	ost, err := openOffsets(o.dir)
	if err != nil {
		return c.fail("%v: nothing was changed", err)
	}
	defer ost.Close()
	if err := consumer.ApplyReset(ost, o.group, rows); err != nil {
		return c.fail("commit: %v: nothing was changed", err)
	}
	if err := ost.Close(); err != nil {
		return c.fail("close the offset store: %v", err)
	}
	c.warn("group %s: committed %s", o.group, plural(int64(len(rows)), "offset"))
	return exitOK
}

// planReset computes the new offset of every partition of topics (or
// only partition) for group.
func planReset(c *cli, store *storage.Store, dir string, cur *offsets.Store, group string, topics []string, partition int, to consumer.Position) ([]consumer.Reset, int, bool) {
	var rows []consumer.Reset
	for _, t := range topics {
		n, code, ok := topicPartitions(c, store, dir, t)
		if !ok {
			return nil, code, false
		}
		parts, code, ok := partitionsOf(c, t, n, partition)
		if !ok {
			return nil, code, false
		}
		more, err := consumer.PlanReset(store, cur, group, t, parts, to)
		if err != nil {
			return nil, c.fail("%v", err), false
		}
		rows = append(rows, more...)
	}
	return rows, exitOK, true
}

func offsetsDeleteCommand(e *env) *cobra.Command {
	var dir, group, topic string
	cmd := command(e, "delete", "delete a group, or its offsets on one topic", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q", "dir", dir, "group", group); bad {
			return code
		}
		if err := requireDir(dir); err != nil {
			return c.fail("%v", err)
		}
		ost, err := openOffsetsIfAny(dir)
		if err != nil {
			return c.fail("%v", err)
		}
		if ost == nil {
			return c.fail("group %s does not exist: %s has %v", group, dir, errNoOffsetStore)
		}
		defer ost.Close()
		if !slices.Contains(ost.Groups(), group) {
			return c.fail("group %s does not exist (groups: %v)", group, ost.Groups())
		}
		if topic == "" {
			err = ost.DeleteGroup(group)
		} else {
			if !slices.Contains(ost.Readers(topic), group) {
				return c.fail("group %s has no offsets on topic %s", group, topic)
			}
			err = ost.Unsubscribe(group, topic)
		}
		if err == nil {
			err = ost.Close()
		}
		if err != nil {
			return c.fail("%v", err)
		}
		if topic == "" {
			fmt.Fprintf(e.stdout, "group %s deleted\n", group)
		} else {
			fmt.Fprintf(e.stdout, "group %s: offsets on topic %s deleted\n", group, topic)
		}
		return exitOK
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required)")
	f.StringVar(&group, "group", "", "consumer group (required)")
	f.StringVar(&topic, "topic", "", "delete only the group's offsets on this topic")
	completeTopics(cmd, &dir)
	return cmd
}
