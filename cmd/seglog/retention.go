package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/seglog/seglog/retention"
	"github.com/seglog/seglog/storage"
	"github.com/spf13/cobra"
)

func retentionCommand(e *env) *cobra.Command {
	var dir string
	var dryRun, asJSON bool
	var p retention.Policy
	cmd := command(e, "retention", "run the retention cleaner once", func(c *cli, pos []string) int {
		return runRetention(c, pos, dir, dryRun, asJSON, p)
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required)")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be deleted; delete nothing (read-only)")
	f.BoolVar(&p.Consumed, "consumed", false, "delete segments every reading consumer group has consumed")
	durationFlag(f, &p.MaxAge, "max-age", 0, "delete segments whose newest record is older than this (e.g. 7d)")
	sizeFlag(f, &p.MaxBytes, "max-bytes", 0, "per partition size budget: delete the oldest segments while over it (e.g. 10GiB)")
	f.IntVar(&p.MinSegments, "min-segments", 0, "keep at least this many segments per partition (the active one always stays)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per deletion per line instead of a table")
	_ = cmd.MarkFlagDirname("dir")
	return cmd
}

func runRetention(c *cli, pos []string, dir string, dryRun, asJSON bool, p retention.Policy) int {
	if code, bad := c.required(pos, "unexpected argument %q", "dir", dir); bad {
		return code
	}
	if p.MinSegments < 0 {
		return c.usageErr("--min-segments %d is negative", p.MinSegments)
	}
	opts := storage.StoreOptions{Log: storage.Options{FS: c.e.fs, ReadOnly: dryRun}}
	store, code := openStore(c, dir, false, opts)
	if store == nil {
		return code
	}
	defer store.Close()
	anyPolicy, needOffsets, err := retention.Applies(store, p)
	if err != nil {
		return c.fail("%v", err)
	}
	if !anyPolicy {
		return c.usageErr("no policy: no topic has its own retention; give --consumed, --max-age or --max-bytes")
	}
	var consumed retention.Consumed
	if needOffsets {
		ost, err := readOffsets(dir)
		switch {
		case errors.Is(err, errNoOffsetStore):
			c.warn("%s has no offset store: no group reads any topic, so nothing counts as consumed", dir)
			consumed = retention.NoConsumers{}
		case err != nil:
			return c.fail("%v", err)
		default:
			defer ost.Close()
			consumed = ost
		}
	}
	e := c.e
	ropts := retention.Options{Default: p, DryRun: dryRun}
	// Beside a writer (a dry run is read-only), the writer's own
	// retention may delete a segment that this listed: it looks again
	// with a fresh open.
	reopen := func() (*storage.Store, error) { return storage.OpenStore(dir, opts) }
	rep, err := retention.RunOnceBeside(e.ctx, store, reopen, consumed, ropts)
	if err != nil {
		return c.fail("%v", err)
	}
	return printRetention(c, e.stdout, rep, asJSON)
}

// printRetention prints the deletions and a summary of rep to out, as a
// table or as JSON lines, and warns of its failures.
func printRetention(c *cli, out io.Writer, rep retention.Report, asJSON bool) int {
	w := bufio.NewWriter(out)
	verb := "deleted"
	if rep.DryRun {
		verb = "would delete"
	}
	if asJSON {
		for _, d := range rep.Deletions {
			_ = writeJSONLine(w, struct {
				retention.Deletion
				DryRun bool `json:"dry_run"`
			}{d, rep.DryRun})
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
		fmt.Fprintf(w, "%s %s, %s, in %s examined\n", verb, plural(int64(len(rep.Deletions)), "segment"), humanBytes(rep.Bytes()), plural(int64(rep.Partitions), "partition"))
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
