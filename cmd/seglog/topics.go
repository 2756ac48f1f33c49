package main

import (
	"bufio"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/seglog/seglog/storage"
)

const topicsDesc = `
List the topics of a data directory: per partition its segments, size,
log start and end offsets, and the number of records (end - start).

  seglog topics create --dir DIR --topic T --partitions N
  seglog topics delete --dir DIR --topic T

create makes a topic (creating it again with the same count does nothing;
more partitions than it has adds the missing ones); delete removes a topic
and all its data, irrecoverably (committed consumer offsets are kept).`

const topicsExample = `
seglog topics --dir /var/lib/seglog
seglog topics create --dir /var/lib/seglog --topic events --partitions 6
seglog topics delete --dir /var/lib/seglog --topic scratch`

type topicRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Segments  int    `json:"segments"`
	Bytes     int64  `json:"bytes"`
	Start     int64  `json:"start_offset"`
	End       int64  `json:"end_offset"`
}

func runTopics(e *env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "create":
			return runTopicsCreate(e, args[1:])
		case "delete":
			return runTopicsDelete(e, args[1:])
		}
	}
	c := newCLI(e, "seglog topics", "seglog topics --dir DIR [--json]\n       seglog topics create --dir DIR --topic T --partitions N\n       seglog topics delete --dir DIR --topic T", topicsDesc, topicsExample)
	dir := c.fs.String("dir", "", "data directory (required)")
	asJSON := c.fs.Bool("json", false, "print one JSON object per partition per line instead of a table")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.usageErr("unknown subcommand %q: want create or delete", pos[0])
	}
	if *dir == "" {
		return c.usageErr("--dir is required")
	}
	store, code := openStore(c, *dir, false, storage.StoreOptions{})
	if store == nil {
		return code
	}
	defer store.Close()
	var rows []topicRow
	for _, t := range store.Topics() {
		for p := int32(0); p < int32(t.Partitions); p++ {
			l, err := store.Log(t.Name, p)
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
	w := bufio.NewWriter(e.stdout)
	if *asJSON {
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

func runTopicsCreate(e *env, args []string) int {
	c := newCLI(e, "seglog topics create", "seglog topics create --dir DIR --topic T --partitions N", "Create a topic with N partitions (the data directory is created if needed).", "seglog topics create --dir /var/lib/seglog --topic events --partitions 6")
	dir := c.fs.String("dir", "", "data directory (required)")
	topic := c.fs.String("topic", "", "topic (required)")
	partitions := c.fs.Int("partitions", 1, "number of partitions")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, bad := c.required(pos, "unexpected argument %q", "dir", *dir, "topic", *topic); bad {
		return code
	}
	switch {
	case *partitions < 1:
		return c.usageErr("--partitions %d: want at least 1", *partitions)
	}
	if err := storage.ValidateTopic(*topic); err != nil {
		return c.usageErr("%v", err)
	}
	store, code := openStore(c, *dir, true, storage.StoreOptions{})
	if store == nil {
		return code
	}
	defer store.Close()
	if n, err := store.Partitions(*topic); err == nil && n > *partitions {
		return c.fail("topic %s exists with %d partitions; partitions cannot be removed", *topic, n)
	}
	if err := store.CreateTopic(*topic, *partitions, storage.TopicConfig{}); err != nil {
		return c.fail("%v", err)
	}
	if err := store.Close(); err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintf(e.stdout, "topic %s: %d partitions\n", *topic, *partitions)
	return exitOK
}

func runTopicsDelete(e *env, args []string) int {
	c := newCLI(e, "seglog topics delete", "seglog topics delete --dir DIR --topic T", "Delete a topic and all its data, irrecoverably. Committed consumer offsets on it are kept.", "seglog topics delete --dir /var/lib/seglog --topic scratch")
	dir := c.fs.String("dir", "", "data directory (required)")
	topic := c.fs.String("topic", "", "topic (required)")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, bad := c.required(pos, "unexpected argument %q", "dir", *dir, "topic", *topic); bad {
		return code
	}
	if err := storage.ValidateTopic(*topic); err != nil {
		return c.usageErr("%v", err)
	}
	store, code := openStore(c, *dir, false, storage.StoreOptions{})
	if store == nil {
		return code
	}
	defer store.Close()
	if err := store.DeleteTopic(*topic); err != nil {
		if errors.Is(err, storage.ErrUnknownTopic) {
			return c.fail("topic %s does not exist in %s", *topic, *dir)
		}
		return c.fail("%v", err)
	}
	fmt.Fprintf(e.stdout, "topic %s deleted\n", *topic)
	return exitOK
}
