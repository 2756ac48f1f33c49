package main

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/storage"
)

func repairCommand(e *env) *cobra.Command {
	var apply, truncate bool
	var dirFlag string
	cmd := command(e, "repair [flags] DIR", "repair what verify finds (a dry run unless --apply)", func(c *cli, pos []string) int {
		dir, code := c.dirArg(dirFlag, pos)
		if code != exitOK {
			return code
		}
		rep, err := storage.Repair(dir, storage.RepairOptions{DryRun: !apply, TruncateAtDamage: truncate})
		if err != nil {
			return c.fail("%v", err)
		}
		w := bufio.NewWriter(e.stdout)
		printRepair(w, rep)
		if err := w.Flush(); err != nil {
			return c.fail("write output: %v", err)
		}
		if len(rep.Left) > 0 {
			return exitFailure
		}
		return exitOK
	})
	cmd.Flags().StringVar(&dirFlag, "dir", "", "the data directory (or partition directory) to repair; the same as the DIR argument")
	cmd.Flags().BoolVar(&apply, "apply", false, "act (without it: a dry run that changes nothing)")
	cmd.Flags().BoolVar(&truncate, "truncate-at-damage", false, "cut a partition at damage below its recovery point, losing the offsets from there on (listed)")
	cmd.MarkFlagDirname("dir")
	return cmd
}

// printRepair writes the problems found, the actions, and what is left.
func printRepair(w *bufio.Writer, rep storage.RepairReport) {
	mode := "dry run (nothing changed; --apply acts)"
	if !rep.DryRun {
		mode = "applied"
	}
	fmt.Fprintf(w, "repair %s: %s, %s\n", rep.Dir, plural(int64(len(rep.Before.Partitions)), "partition"), mode)
	for _, p := range rep.Before.Problems {
		fmt.Fprintf(w, "  found: %s\n", p)
	}
	for _, a := range rep.Actions {
		if len(rep.Before.Problems) == 0 {
			break
		}
		fmt.Fprintf(w, "  %s\n", a)
	}
	for _, p := range rep.Left {
		hint := ""
		if p.CutAtDamage() {
			hint = " (--truncate-at-damage cuts the partition there)"
		}
		fmt.Fprintf(w, "  left: %s%s\n", p, hint)
	}
	fmt.Fprintf(w, "%s found, %s left\n", plural(int64(len(rep.Before.Problems)), "problem"), plural(int64(len(rep.Left)), "problem"))
}
