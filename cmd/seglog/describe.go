package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/consumer"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

type describeSegment struct {
	BaseOffset     int64 `json:"base_offset"`
	NextOffset     int64 `json:"next_offset"`
	Records        int64 `json:"records"`
	Bytes          int64 `json:"bytes"`
	FirstTimestamp int64 `json:"first_timestamp"`
	MaxTimestamp   int64 `json:"max_timestamp"`
	Active         bool  `json:"active"`
}

type describePartition struct {
	Partition     int32               `json:"partition"`
	Dir           string              `json:"dir"`
	StartOffset   int64               `json:"start_offset"`
	EndOffset     int64               `json:"end_offset"`
	HighWatermark int64               `json:"high_watermark"`
	RecoveryPoint *int64              `json:"recovery_point"`
	Bytes         int64               `json:"bytes"`
	Segments      []describeSegment   `json:"segments"`
	Groups        []consumer.GroupLag `json:"groups"`
}

type describeTopic struct {
	Topic      string              `json:"topic"`
	Partitions int                 `json:"partitions"`
	Config     []configEntry       `json:"config"`
	Info       []describePartition `json:"partition_info"`
}

func describeCommand(e *env) *cobra.Command {
	var dir, topic string
	var partition int
	var asJSON bool
	cmd := command(e, "describe", "show a topic's configuration, partitions, segments and consumer groups (read-only)", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q", "dir", dir, "topic", topic); bad {
			return code
		}
		if partition < -1 {
			return c.usageErr("--partition %d: want a partition number", partition)
		}
		if err := storage.ValidateTopic(topic); err != nil {
			return c.usageErr("%v", err)
		}
		store, code := openStoreReadOnly(c, dir)
		if store == nil {
			return code
		}
		defer store.Close()
		n, code, ok := topicPartitions(c, store, dir, topic)
		if !ok {
			return code
		}
		parts, code, ok := partitionsOf(c, topic, n, partition)
		if !ok {
			return code
		}
		cfg, err := store.TopicConfig(topic)
		if err != nil {
			return c.fail("%v", err)
		}
		ost, err := readOffsets(dir)
		if err != nil && !errors.Is(err, errNoOffsetStore) {
			return c.fail("%v", err)
		}
		if ost != nil {
			defer ost.Close()
		}
		d := describeTopic{Topic: topic, Partitions: n, Config: configEntries(cfg)}
		for _, p := range parts {
			dp, err := describePart(store, ost, topic, p)
			if err != nil {
				return c.fail("%s: %v", storage.PartitionDir(topic, p), err)
			}
			d.Info = append(d.Info, dp)
		}
		w := bufio.NewWriter(e.stdout)
		if asJSON {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			_ = enc.Encode(d)
		} else {
			writeDescribe(w, &d)
		}
		if err := w.Flush(); err != nil {
			return c.fail("write output: %v", err)
		}
		return exitOK
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required)")
	f.StringVar(&topic, "topic", "", "topic (required)")
	f.IntVar(&partition, "partition", -1, "only this partition (-1: all)")
	f.BoolVar(&asJSON, "json", false, "print one JSON document instead of text")
	completeTopics(cmd, &dir)
	return cmd
}

// describePart gathers what describe shows of one partition.
func describePart(store *storage.Store, ost *offsets.Store, topic string, p int32) (describePartition, error) {
	l, err := store.Follower(topic, p)
	if err != nil {
		return describePartition{}, err
	}
	d, err := l.Describe()
	if err != nil {
		return describePartition{}, err
	}
	dp := describePartition{Partition: p, Dir: l.Dir(), StartOffset: d.StartOffset, EndOffset: d.EndOffset, HighWatermark: d.HighWatermark,
		Bytes: d.Bytes, Segments: []describeSegment{}, Groups: []consumer.GroupLag{}}
	if d.RecoveryPoint >= 0 {
		dp.RecoveryPoint = &d.RecoveryPoint
	}
	for _, s := range d.Segments {
		dp.Segments = append(dp.Segments, describeSegment{BaseOffset: s.BaseOffset, NextOffset: s.NextOffset, Records: s.Records, Bytes: s.Size,
			FirstTimestamp: s.FirstTimestamp, MaxTimestamp: s.MaxTimestamp, Active: s.Active})
	}
	if ost != nil {
		dp.Groups = append(dp.Groups, consumer.GroupLags(ost, topic, p, dp.StartOffset, dp.EndOffset)...)
	}
	return dp, nil
}

func writeDescribe(w io.Writer, d *describeTopic) {
	fmt.Fprintf(w, "Topic %s: %s\n\nConfiguration:\n", d.Topic, plural(int64(d.Partitions), "partition"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range d.Config {
		if e.Value != "" {
			fmt.Fprintf(tw, "  %s\t%s\n", e.Name, e.Value)
		} else {
			fmt.Fprintf(tw, "  %s\t-\t(default: %s)\n", e.Name, e.Default)
		}
	}
	tw.Flush()
	for _, p := range d.Info {
		rp := "none"
		if p.RecoveryPoint != nil {
			rp = fmt.Sprint(*p.RecoveryPoint)
		}
		fmt.Fprintf(w, "\nPartition %d (%s)\n", p.Partition, filepath.Base(p.Dir))
		fmt.Fprintf(w, "  offsets [%d, %d), %s, high watermark %d, recovery point %s, %s in %s\n",
			p.StartOffset, p.EndOffset, plural(p.EndOffset-p.StartOffset, "record"), p.HighWatermark, rp, humanBytes(p.Bytes), plural(int64(len(p.Segments)), "segment"))
		if len(p.Segments) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  SEGMENT\tRECORDS\tSIZE\tFIRST-TIMESTAMP\tMAX-TIMESTAMP")
			for _, s := range p.Segments {
				active := ""
				if s.Active {
					active = "  (active)"
				}
				fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s%s\n", s.BaseOffset, s.Records, humanBytes(s.Bytes), msTime(s.FirstTimestamp), msTime(s.MaxTimestamp), active)
			}
			tw.Flush()
		}
		if len(p.Groups) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  GROUP\tCOMMITTED\tLAG")
			for _, g := range p.Groups {
				fmt.Fprintf(tw, "  %s\t%s\t%d\n", g.Group, optInt(g.Committed), g.Lag)
			}
			tw.Flush()
		} else {
			fmt.Fprintln(w, "  no consumer group reads it")
		}
	}
}

// msTime prints milliseconds since the epoch as an RFC 3339 time in UTC,
// "-" for none (-1).
func msTime(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
