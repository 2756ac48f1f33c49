package main

import (
	"bufio"
	"errors"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/metrics"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

func metricsCommand(e *env) *cobra.Command {
	var dir string
	cmd := command(e, "metrics", "print the Prometheus metrics of a data directory (read-only)", func(c *cli, pos []string) int {
		if code, bad := c.required(pos, "unexpected argument %q", "dir", dir); bad {
			return code
		}
		store, code := openStoreReadOnly(c, dir)
		if store == nil {
			return code
		}
		defer store.Close()
		code = exitOK
		for _, t := range store.Topics() {
			for p := range int32(t.Partitions) {
				if _, err := store.Follower(t.Name, p); err != nil {
					c.warn("%s: %v", storage.PartitionDir(t.Name, p), err)
					code = exitFailure
				}
			}
		}
		var opts metrics.Options
		ost, err := readOffsets(dir)
		switch {
		case err == nil:
			defer ost.Close()
			opts.Offsets = ost
		case !errors.Is(err, errNoOffsetStore):
			return c.fail("%s: %v", offsets.Dir(dir), err)
		}
		w := bufio.NewWriter(e.stdout)
		if err := metrics.WriteText(w, metrics.New(store, opts)); err != nil {
			c.warn("%v", err)
			code = exitFailure
		}
		if err := w.Flush(); err != nil {
			return c.fail("write output: %v", err)
		}
		return code
	})
	cmd.Flags().StringVar(&dir, "dir", "", "data directory (required)")
	return cmd
}
