package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

const offsetsDesc = `
Show each consumer group's committed offset, the log start and end, and the
lag (log end - committed offset) per partition of every topic the group
reads. A partition the group reads but has not committed on shows "-" as
its committed offset; its lag is then everything in the log (log end -
log start), since such a group holds the whole partition for retention.
--max-lag N exits 1 when any lag exceeds N (for monitoring scripts).

  seglog offsets reset --dir DIR --group G --topic T --to earliest|latest|OFFSET [--partition P]

sets the group's committed offset on every partition of the topic (or on
P): earliest is the log start, latest the log end; an OFFSET outside
[start, end] of a partition is an error, nothing is changed.`

const offsetsExample = `
seglog offsets --dir /var/lib/seglog
seglog offsets --dir /var/lib/seglog --group audit --json
seglog offsets --dir /var/lib/seglog --max-lag 100000 || alert "consumers are behind"
seglog offsets reset --dir /var/lib/seglog --group audit --topic events --to earliest`

const resetDesc = `
Set a consumer group's committed offset on every partition of a topic (or
on --partition P): earliest is the log start, latest the log end, OFFSET
an offset within [log start, log end] of every partition reset (otherwise
an error, and nothing is changed). Prints the new positions.`

const resetExample = `
seglog offsets reset --dir /var/lib/seglog --group audit --topic events --to latest
seglog offsets reset --dir /var/lib/seglog --group audit --topic events --partition 2 --to 1500`

type lagRow struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed *int64 `json:"committed"` // null: no commit on this partition
	LogStart  *int64 `json:"log_start"` // null: the partition does not exist
	LogEnd    *int64 `json:"log_end"`
	Lag       *int64 `json:"lag"`
}

func runOffsets(e *env, args []string) int {
	if len(args) > 0 && args[0] == "reset" {
		return runOffsetsReset(e, args[1:])
	}
	c := newCLI(e, "seglog offsets", "seglog offsets --dir DIR [--group G] [--json] [--max-lag N]\n       seglog offsets reset --dir DIR --group G --topic T --to earliest|latest|OFFSET", offsetsDesc, offsetsExample)
	dir := c.fs.String("dir", "", "data directory (required)")
	group := c.fs.String("group", "", "show only this group")
	asJSON := c.fs.Bool("json", false, "print one JSON object per partition per line instead of a table")
	maxLag := c.fs.Int64("max-lag", -1, "exit 1 if any partition's lag exceeds this (-1: no check)")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, bad := c.required(pos, "unexpected argument %q (the subcommand is \"reset\")", "dir", *dir); bad {
		return code
	}
	switch {
	case *maxLag < -1:
		return c.usageErr("--max-lag %d is negative", *maxLag)
	}
	if err := requireDir(*dir); err != nil {
		return c.fail("%v", err)
	}
	if _, err := os.Stat(filepath.Join(*dir, "offsets")); errors.Is(err, os.ErrNotExist) {
		if *group != "" {
			return c.fail("group %s: %s has no offset store (no group has committed)", *group, *dir)
		}
		fmt.Fprintln(e.stderr, "seglog offsets: no consumer groups (no offset store in "+*dir+")")
		return exitOK
	}
	ost, err := openOffsets(*dir)
	if err != nil {
		return c.fail("%v", err)
	}
	defer ost.Close()
	store, err := storage.OpenStore(*dir, storage.StoreOptions{})
	if err != nil {
		return c.fail("%v", err)
	}
	defer store.Close()

	groups := ost.Groups()
	if *group != "" {
		if !slices.Contains(groups, *group) {
			return c.fail("group %s does not exist (groups: %v)", *group, groups)
		}
		groups = []string{*group}
	}
	rows, err := lagRows(store, ost, groups)
	if err != nil {
		return c.fail("%v", err)
	}
	w := bufio.NewWriter(e.stdout)
	if *asJSON {
		for _, r := range rows {
			_ = writeJSONLine(w, r)
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCOMMITTED\tLOG-START\tLOG-END\tLAG")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Group, r.Topic, r.Partition, optInt(r.Committed), optInt(r.LogStart), optInt(r.LogEnd), optInt(r.Lag))
		}
		tw.Flush()
	}
	if err := w.Flush(); err != nil {
		return c.fail("write output: %v", err)
	}
	if *maxLag >= 0 {
		over := 0
		for _, r := range rows {
			if r.Lag != nil && *r.Lag > *maxLag {
				over++
				c.warn("group %s lags %d records on %s, more than --max-lag %d", r.Group, *r.Lag, storage.PartitionDir(r.Topic, r.Partition), *maxLag)
			}
		}
		if over > 0 {
			return exitFailure
		}
	}
	return exitOK
}

func optInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

func ptr[T any](v T) *T { return &v }

// lagRows lists, per group, every partition of every topic the group reads
// (has committed on or subscribed to), with the log's offsets and the lag.
func lagRows(store *storage.Store, ost *offsets.Store, groups []string) ([]lagRow, error) {
	var rows []lagRow
	for _, g := range groups {
		committed := map[string]map[int32]int64{}
		var topics []string
		for _, p := range ost.Positions(g) {
			if committed[p.Topic] == nil {
				committed[p.Topic] = map[int32]int64{}
				topics = append(topics, p.Topic)
			}
			committed[p.Topic][p.Partition] = p.Offset
		}
		for _, t := range store.Topics() {
			if committed[t.Name] == nil && slices.Contains(ost.Readers(t.Name), g) {
				committed[t.Name] = map[int32]int64{}
				topics = append(topics, t.Name)
			}
		}
		slices.Sort(topics)
		for _, topic := range topics {
			n, err := store.Partitions(topic)
			if err != nil {
				// A topic that was deleted (or never existed here).
				var ps []int32
				for p := range committed[topic] {
					ps = append(ps, p)
				}
				slices.Sort(ps)
				for _, p := range ps {
					rows = append(rows, lagRow{Group: g, Topic: topic, Partition: p, Committed: ptr(committed[topic][p])})
				}
				continue
			}
			for p := int32(0); p < int32(n); p++ {
				l, err := store.Log(topic, p)
				if err != nil {
					return nil, err
				}
				start, end := l.StartOffset(), l.EndOffset()
				row := lagRow{Group: g, Topic: topic, Partition: p, LogStart: ptr(start), LogEnd: ptr(end)}
				if off, ok := committed[topic][p]; ok {
					row.Committed = ptr(off)
					row.Lag = ptr(max(0, end-max(off, start)))
					if off < start {
						row.Lag = ptr(end - start)
					}
				} else {
					row.Lag = ptr(end - start)
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

func runOffsetsReset(e *env, args []string) int {
	c := newCLI(e, "seglog offsets reset", "seglog offsets reset --dir DIR --group G --topic T --to earliest|latest|OFFSET [--partition P]", resetDesc, resetExample)
	dir := c.fs.String("dir", "", "data directory (required)")
	group := c.fs.String("group", "", "consumer group (required)")
	topic := c.fs.String("topic", "", "topic (required)")
	partition := c.fs.Int("partition", -1, "reset only this partition (-1: all)")
	to := c.fs.String("to", "", "earliest, latest or an OFFSET (required)")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, bad := c.required(pos, "unexpected argument %q", "dir", *dir, "group", *group, "topic", *topic, "to", *to); bad {
		return code
	}
	switch {
	case *partition < -1:
		return c.usageErr("--partition %d: want a partition number", *partition)
	}
	var spec fromSpec
	switch *to {
	case "earliest":
		spec = fromSpec{kind: fromEarliest}
	case "latest":
		spec = fromSpec{kind: fromLatest}
	default:
		v, err := strconv.ParseInt(*to, 10, 64)
		if err != nil || v < 0 {
			return c.usageErr("--to %q: want earliest, latest or an offset", *to)
		}
		spec = fromSpec{kind: fromOffset, v: v}
	}
	store, code := openStore(c, *dir, false, storage.StoreOptions{})
	if store == nil {
		return code
	}
	defer store.Close()
	n, code, ok := topicPartitions(c, store, *dir, *topic)
	if !ok {
		return code
	}
	parts := []int32{}
	if *partition >= 0 {
		if *partition >= n {
			return c.fail("--partition %d: topic %s has partitions 0 to %d", *partition, *topic, n-1)
		}
		parts = append(parts, int32(*partition))
	} else {
		for p := range n {
			parts = append(parts, int32(p))
		}
	}
	var commits []offsets.Commit
	for _, p := range parts {
		l, err := store.Log(*topic, p)
		if err != nil {
			return c.fail("%v", err)
		}
		off, err := spec.resolve(l)
		if err != nil {
			return c.fail("%v", err)
		}
		if off < l.StartOffset() || off > l.EndOffset() {
			return c.fail("--to %d is outside %s's offsets [%d, %d]: nothing was changed", off, storage.PartitionDir(*topic, p), l.StartOffset(), l.EndOffset())
		}
		commits = append(commits, offsets.Commit{Topic: *topic, Partition: p, Offset: off})
	}
	ost, err := openOffsets(*dir)
	if err != nil {
		return c.fail("%v", err)
	}
	defer ost.Close()
	if err := ost.CommitBatch(*group, commits); err != nil {
		return c.fail("commit: %v", err)
	}
	w := bufio.NewWriter(e.stdout)
	for _, cm := range commits {
		fmt.Fprintf(w, "group %s: %s reset to offset %d\n", *group, storage.PartitionDir(cm.Topic, cm.Partition), cm.Offset)
	}
	if err := w.Flush(); err != nil {
		return c.fail("write output: %v", err)
	}
	if err := ost.Close(); err != nil {
		return c.fail("close offset store: %v", err)
	}
	return exitOK
}
