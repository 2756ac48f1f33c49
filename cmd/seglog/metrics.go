package main

import (
	"bufio"
	"errors"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/metrics"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

const metricsDesc = `
Print the metrics of a data directory in the Prometheus text format, as the
metrics package's Collector exposes them in a running broker, read-only
(also beside a running producer or broker): the store opened with
ReadOnly, every partition's log opened read-only (no recovery, no byte
changed), the offset store with offsets.OpenReadOnly.

Per partition: start, end and flushed offsets, segments, bytes; per
consumer group and partition: the committed offset and the lag (log end -
committed); the offset store's counts. Counters of appends, reads and
fsyncs count since the log was opened, so they are 0 here (a broker's
/metrics has them); the fsync histogram, which only a writer feeds, and
the retention metrics, which need a running cleaner, are left out. A
partition that does not open is reported on stderr, the others are
printed, and the exit code is 1.`

const metricsExample = `
seglog metrics --dir /var/lib/seglog
seglog metrics --dir /var/lib/seglog | grep '^seglog_group_lag'`

func metricsCommand(e *env) *cobra.Command {
	var dir string
	cmd := command(e, "metrics", "print the Prometheus metrics of a data directory (read-only)", metricsDesc, metricsExample,
		func(c *cli, pos []string) int {
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
			ost, closeOst, err := readOffsets(dir)
			switch {
			case err == nil:
				defer closeOst()
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
