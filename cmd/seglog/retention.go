package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/seglog/seglog/retention"
	"github.com/seglog/seglog/storage"
)

const retentionDesc = `
Run the retention cleaner once over every partition of every topic and
print each segment it deleted (or, with --dry-run, would delete): topic,
partition, its offsets [base, next), bytes and the policy that chose it.
Policies combine with OR; at least one of --consumed, --max-age and
--max-bytes is required:
  --consumed       delete segments that every consumer group reading the
                   topic has committed past (a topic no group reads keeps
                   everything)
  --max-age D      delete segments whose newest record is older than D
  --max-bytes N    delete the oldest segments while a partition is over N bytes
Only a prefix of each partition goes, the active segment never does, and
--min-segments keeps at least that many. A partition that fails is
reported on stderr and the exit code is 1; the others are still cleaned.`

const retentionExample = `
seglog retention --dir /var/lib/seglog --dry-run --max-age 168h
seglog retention --dir /var/lib/seglog --consumed --max-bytes 10737418240 --min-segments 2`

func runRetention(e *env, args []string) int {
	c := newCLI(e, "seglog retention", "seglog retention --dir DIR [--dry-run] [--consumed] [--max-age D] [--max-bytes N] [--min-segments N]", retentionDesc, retentionExample)
	dir := c.fs.String("dir", "", "data directory (required)")
	dryRun := c.fs.Bool("dry-run", false, "print what would be deleted; delete nothing")
	var p retention.Policy
	c.fs.BoolVar(&p.Consumed, "consumed", false, "delete segments every reading consumer group has consumed")
	c.fs.DurationVar(&p.MaxAge, "max-age", 0, "delete segments whose newest record is older than this (e.g. 168h)")
	c.fs.Int64Var(&p.MaxBytes, "max-bytes", 0, "per partition byte budget: delete the oldest segments while over it")
	c.fs.IntVar(&p.MinSegments, "min-segments", 0, "keep at least this many segments per partition (the active one always stays)")
	asJSON := c.fs.Bool("json", false, "print one JSON object per deletion per line instead of a table")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, bad := c.required(pos, "unexpected argument %q", "dir", *dir); bad {
		return code
	}
	switch {
	case p.MaxAge < 0 || p.MaxBytes < 0 || p.MinSegments < 0:
		return c.usageErr("--max-age, --max-bytes and --min-segments must not be negative")
	case !p.Enabled():
		return c.usageErr("no policy: give --consumed, --max-age or --max-bytes")
	}
	store, code := openStore(c, *dir, false, storage.StoreOptions{})
	if store == nil {
		return code
	}
	defer store.Close()
	var consumed retention.Consumed
	if p.Consumed {
		if _, err := os.Stat(filepath.Join(*dir, "offsets")); errors.Is(err, os.ErrNotExist) {
			c.warn("%s has no offset store: no group reads any topic, so nothing counts as consumed", *dir)
		}
		ost, err := openOffsets(*dir)
		if err != nil {
			return c.fail("%v", err)
		}
		defer ost.Close()
		consumed = ost
	}
	cl, err := retention.New(store, consumed, retention.Options{Default: p, DryRun: *dryRun})
	if err != nil {
		return c.fail("%v", err)
	}
	defer cl.Close()
	rep, err := cl.RunOnce(e.ctx)
	if err != nil {
		return c.fail("%v", err)
	}
	w := bufio.NewWriter(e.stdout)
	verb := "deleted"
	if rep.DryRun {
		verb = "would delete"
	}
	if *asJSON {
		for _, d := range rep.Deletions {
			_ = writeJSONLine(w, struct {
				Topic      string `json:"topic"`
				Partition  int32  `json:"partition"`
				BaseOffset int64  `json:"base_offset"`
				NextOffset int64  `json:"next_offset"`
				Bytes      int64  `json:"bytes"`
				Reason     string `json:"reason"`
				DryRun     bool   `json:"dry_run"`
			}{d.Topic, d.Partition, d.BaseOffset, d.NextOffset, d.Bytes, string(d.Reason), rep.DryRun})
		}
	} else {
		if len(rep.Deletions) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tOFFSETS\tBYTES\tREASON")
			for _, d := range rep.Deletions {
				fmt.Fprintf(tw, "%s\t%d\t[%d, %d)\t%d\t%s\n", d.Topic, d.Partition, d.BaseOffset, d.NextOffset, d.Bytes, d.Reason)
			}
			tw.Flush()
		}
		fmt.Fprintf(w, "%s %d segments, %s, in %d partitions examined\n", verb, len(rep.Deletions), humanBytes(rep.Bytes()), rep.Partitions)
	}
	if err := w.Flush(); err != nil {
		return c.fail("write output: %v", err)
	}
	for _, f := range rep.Failures {
		c.warn("%s: %v", storage.PartitionDir(f.Topic, f.Partition), f.Err)
	}
	if len(rep.Failures) > 0 {
		return exitFailure
	}
	return exitOK
}
