package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/seglog/seglog/consumer"
	"github.com/seglog/seglog/storage"
	"github.com/spf13/cobra"
)

func offsetsCommand(e *env) *cobra.Command {
	var dir, group string
	var asJSON bool
	var maxLag int64
	cmd := command(e, "offsets", "show consumer-group offsets and lag; reset or delete a group's offsets", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unknown subcommand %q: want reset or delete", "dir", dir); bad {
			return code
		}
		if maxLag < -1 {
			return c.usageErr("--max-lag %d is negative", maxLag)
		}
		if err := requireDir(dir); err != nil {
			return c.fail("%v", err)
		}
		ost, err := readOffsets(dir)
		if errors.Is(err, errNoOffsetStore) {
			if group != "" {
				return c.fail("group %s does not exist: %s has %v", group, dir, err)
			}
			c.warn("no consumer groups: %s has %v", dir, err)
			return exitOK
		}
		if err != nil {
			return c.fail("%v", err)
		}
		defer ost.Close()
		store, code := openStoreReadOnly(c, dir)
		if store == nil {
			return code
		}
		defer store.Close()
		groups := ost.Groups()
		if group != "" {
			if !slices.Contains(groups, group) {
				return c.fail("group %s does not exist (groups: %v)", group, groups)
			}
			groups = []string{group}
		}
		rows, err := consumer.Lags(store, ost, groups)
		if err != nil {
			return c.fail("%v", err)
		}
		if len(rows) == 0 {
			c.warn("no consumer group reads a topic of %s", dir)
		}
		return printLag(c, e.stdout, rows, asJSON, maxLag)
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required)")
	f.StringVar(&group, "group", "", "show only this group")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per partition per line instead of a table")
	f.Int64Var(&maxLag, "max-lag", -1, "exit 1 if any partition's lag exceeds this many records (-1: no check)")
	_ = cmd.MarkFlagDirname("dir")
	cmd.AddCommand(offsetsResetCommand(e), offsetsDeleteCommand(e))
	return cmd
}

// printLag prints rows to out, as a table or as JSON lines; with maxLag
// at least 0, it warns of every lag over maxLag and then fails.
func printLag(c *cli, out io.Writer, rows []consumer.Lag, asJSON bool, maxLag int64) int {
	code := printRows(c, out, rows, asJSON, false, "GROUP\tTOPIC\tPARTITION\tCOMMITTED\tLOG-START\tLOG-END\tLAG", func(r consumer.Lag) string {
		return fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s\t%s", r.Group, r.Topic, r.Partition, optInt(r.Committed), optInt(r.LogStart), optInt(r.LogEnd), optInt(r.Lag))
	})
	if code != exitOK || maxLag < 0 {
		return code
	}
	over := 0
	for _, r := range rows {
		if r.Lag != nil && *r.Lag > maxLag {
			over++
			c.warn("group %s lags %s on %s, more than --max-lag %d", r.Group, plural(*r.Lag, "record"), storage.PartitionDir(r.Topic, r.Partition), maxLag)
		}
	}
	if over > 0 {
		return exitFailure
	}
	return exitOK
}

func optInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}
