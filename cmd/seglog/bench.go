package main

import (
	"errors"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/broker/brokerbench"
	"github.com/seglog/seglog/kestrel/kestrelbench"
)

func benchCommand(e *env) *cobra.Command {
	var c bench.Config
	var o bench.CommandOptions
	var workloads []string
	cmd := command(e, "bench [WORKLOAD...] [flags]", "measure the storage engine on this disk", func(cl *cli, pos []string) int {
		c.Workloads = append(append([]string{}, workloads...), pos...)
		c.Extra = []bench.ExtraGroup{brokerbench.Group(), kestrelbench.Group()}
		ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt)
		defer stop()
		err := bench.RunCommand(ctx, c, o, e.stdout, e.stderr)
		switch {
		case errors.Is(err, bench.ErrUsage):
			return cl.usageErr("%s", strings.TrimPrefix(strings.TrimPrefix(err.Error(), bench.ErrUsage.Error()), ": "))
		case err != nil:
			return cl.fail("%v", err)
		}
		return exitOK
	})
	f := cmd.Flags()
	f.StringSliceVar(&workloads, "workloads", nil, "run only the workloads in `LIST`, comma-separated, as the arguments do")
	f.StringVar(&c.Dir, "dir", "", "make the working directory under `DIR` (default: the system temporary directory)")
	f.BoolVar(&c.Keep, "keep", false, "keep the data afterwards (for seglog dump)")
	f.BoolVar(&o.JSON, "json", false, "print the report as JSON instead of a table")
	f.BoolVar(&o.Quiet, "quiet", false, "no progress on stderr")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole run to `FILE` (go tool pprof reads it)")
	sizeFlag(f, &c.Size, "size", 0, "payload of each produce workload and of what consume reads (default 256MiB, 2GiB with --full)")
	sizeFlag(f, &c.LogSize, "log-size", 0, "log size of random-read, point-read and recovery (default 64MiB, 512MiB with --full)")
	durationFlag(f, &c.Duration, "duration", 0, "length of each durable, durable-sync, offsets and end-to-end variant (default 2s, 5s with --full)")
	f.IntVar(&c.Producers, "producers", 8, "goroutines of the durable group-commit and concurrent-offsets variants")
	f.BoolVar(&c.Full, "full", false, "the sizes the targets are stated for (2GiB produce, 512MiB logs, 5s variants; a few minutes)")
	_ = cmd.MarkFlagDirname("dir")
	cmd.ValidArgs = append(benchGroups(), "e2e", "random")
	completeValues(cmd, "workloads", benchGroups())
	return cmd
}

// benchGroups are the workload groups of seglog bench: the bench
// package's and the protocol servers'.
func benchGroups() []string {
	return append(append([]string{}, bench.Groups...), brokerbench.Group().Name, kestrelbench.Group().Name)
}
