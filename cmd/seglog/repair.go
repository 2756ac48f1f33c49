package main

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/storage"
)

const repairDesc = `
Repair what seglog verify finds in a data directory (or one partition
directory), with the library's own check and repair (storage.Check,
storage.Repair). A dry run by default: it prints the problems and the plan
and changes nothing; --apply acts.

What it does:
  - rebuilds the missing or damaged .index and .timeindex of sealed
    segments from their .log (the old files move into quarantine/);
  - opens and closes each partition, as a broker would: a torn tail past
    the recovery point is cut, the engine's leftovers are removed, and
    files it cannot use (an index without its .log, a foreign temporary
    file, segments that no longer follow on) move into the partition's
    quarantine/ folder;
  - only with --truncate-at-damage: cuts a partition at damage the engine
    does not repair by itself (a bad batch or a hole below the recovery
    point, where acknowledged records were), and says exactly which
    offsets go. The bytes cut and the later segments move into quarantine/.

Nothing is deleted that is not the engine's own leftover. Stop the writer
first (a running broker or seglog produce holds the directory's lock and
repair refuses). The offset store is left alone. Exit 1 when problems are
left.`

const repairExample = `
seglog repair /var/lib/seglog
seglog repair --apply /var/lib/seglog
seglog repair --apply --truncate-at-damage /var/lib/seglog/orders-3`

func repairCommand(e *env) *cobra.Command {
	var apply, truncate bool
	var dirFlag string
	cmd := command(e, "repair [flags] DIR", "repair what verify finds (a dry run unless --apply)", repairDesc, repairExample,
		func(c *cli, pos []string) int {
			if dirFlag != "" {
				pos = append([]string{dirFlag}, pos...)
			}
			if len(pos) != 1 {
				return c.usageErr("want one DIR (or --dir DIR), got %d", len(pos))
			}
			dir := pos[0]
			if err := requireDir(dir); err != nil {
				return c.fail("%v", err)
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
		if !p.OpenRepairs && (p.Kind == storage.ProblemDamage || p.Kind == storage.ProblemHole) {
			hint = " (--truncate-at-damage cuts the partition there)"
		}
		fmt.Fprintf(w, "  left: %s%s\n", p, hint)
	}
	fmt.Fprintf(w, "%s found, %s left\n", plural(int64(len(rep.Before.Problems)), "problem"), plural(int64(len(rep.Left)), "problem"))
}
