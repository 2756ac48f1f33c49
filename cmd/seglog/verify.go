package main

import (
	"bufio"
	"fmt"
	"path/filepath"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
	"github.com/spf13/cobra"
)

func verifyCommand(e *env) *cobra.Command {
	var dirFlag string
	var deep bool
	cmd := command(e, "verify [flags] DIR", "check every partition of a data directory, read-only", func(c *cli, pos []string) int {
		dir, code := c.dirArg(dirFlag, pos)
		if code != exitOK {
			return code
		}
		rep, err := storage.Check(dir, storage.CheckOptions{Records: deep})
		if err != nil {
			return c.fail("%v", err)
		}
		w := bufio.NewWriter(e.stdout)
		errs, warns := printCheck(w, c, rep)
		if root := len(rep.Partitions) != 1 || rep.Partitions[0] != dir; root {
			orep, err := offsets.Check(offsets.Dir(dir))
			if err != nil {
				return c.fail("%v", err)
			}
			oe, ow := printOffsetsCheck(w, c, orep)
			errs, warns = errs+oe, warns+ow
		}
		fmt.Fprintf(w, "verified %s: %s: %s, %s\n", dir, plural(int64(len(rep.Partitions)), "partition"),
			plural(int64(errs), "error"), plural(int64(warns), "warning"))
		if err := w.Flush(); err != nil {
			return c.fail("write output: %v", err)
		}
		if errs > 0 {
			return exitFailure
		}
		return exitOK
	})
	cmd.Flags().StringVar(&dirFlag, "dir", "", "the data directory (or partition directory) to check; the same as the DIR argument")
	cmd.Flags().BoolVar(&deep, "deep", false, "also decode every record of every batch (slower: decompresses)")
	cmd.MarkFlagDirname("dir")
	return cmd
}

// printCheck prints a storage.Check report: its problems on stderr, a
// line per partition on w; it returns the errors and warnings.
func printCheck(w *bufio.Writer, c *cli, rep storage.Report) (errs, warns int) {
	writing := map[string]int64{}
	for _, t := range rep.Writing {
		writing[t.Partition] = t.From
	}
	byPart := map[string][2]int{}
	for _, p := range rep.Problems {
		n := byPart[p.Partition]
		if p.Severity == storage.SeverityError {
			n[0]++
			errs++
		} else {
			n[1]++
			warns++
		}
		byPart[p.Partition] = n
		c.warn("%s", p)
	}
	for i, part := range rep.Partitions {
		status := checkStatus(byPart[part][0], byPart[part][1])
		if from, ok := writing[part]; ok {
			status += fmt.Sprintf(" (held by a writer: checked up to offset %d; the tail being written is not judged)", from)
		}
		fmt.Fprintf(w, "%s: %s: %s\n", filepath.Base(part), partitionStats(rep.Stats[i]), status)
	}
	return errs, warns
}

// printOffsetsCheck prints an offsets.Check report like printCheck.
func printOffsetsCheck(w *bufio.Writer, c *cli, rep offsets.CheckReport) (errs, warns int) {
	if !rep.Exists {
		fmt.Fprintln(w, "offsets: no offset store (no consumer group has committed)")
		return 0, 0
	}
	for _, p := range rep.Problems {
		if p.Err {
			errs++
		} else {
			warns++
		}
		c.warn("%s", p)
	}
	fmt.Fprintf(w, "offsets: %s, %s: %s\n", plural(int64(rep.Groups), "group"), plural(int64(rep.Positions), "committed position"), checkStatus(errs, warns))
	return errs, warns
}

// checkStatus words what a check found: ok, ok with warnings, or errors
// (and warnings).
func checkStatus(errs, warns int) string {
	switch {
	case errs > 0:
		return fmt.Sprintf("%s, %s", plural(int64(errs), "error"), plural(int64(warns), "warning"))
	case warns > 0:
		return "ok, " + plural(int64(warns), "warning")
	}
	return "ok"
}

// partitionStats words what Check read of a partition.
func partitionStats(st storage.PartitionStats) string {
	if st.Segments == 0 {
		return "empty (never written)"
	}
	rp, shutdown := "none", "unclean"
	if st.RecoveryPoint >= 0 {
		rp = fmt.Sprint(st.RecoveryPoint)
	}
	if st.Clean {
		shutdown = "clean"
	}
	return fmt.Sprintf("%s, %s, %s, end offset %d, %s, recovery point %s, %s shutdown", plural(st.Segments, "segment"), plural(st.Batches, "batch"),
		plural(st.Records, "record"), st.End, humanBytes(st.Bytes), rp, shutdown)
}
