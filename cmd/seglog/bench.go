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

const benchDesc = `
Measure seglog on this machine's disk, each figure beside what a plain
file does with the same work in the same run ("vs base": 100% is as fast
as the disk and page cache allow with plain files). With no WORKLOAD it
runs the default suite (about a minute) in a temporary directory that it
removes afterwards. Choose workloads as arguments or with --workloads
(comma-separated); both together run the union.

Workloads: %s (e2e and random are accepted too).

broker runs the Kafka broker (seglog serve) with franz-go's client over
loopback, beside the in-process append, a plain loopback copy and
franz-go's in-memory fake cluster.

The report ends with the targets: figures seglog is designed to reach on
a typical server (appending 1 KiB records at 2 GB/s, reading a record in
under a microsecond, ...), each met or NOT MET with what this run
measured. NOT MET on a laptop, a shared VM or with small sizes is no
error: compare "vs base" instead. --full uses the sizes the targets are
stated for.`

const benchExample = `
seglog bench                          # the default suite in $TMPDIR
seglog bench --dir /data              # on the disk under /data
seglog bench produce consume --size 1GiB
seglog bench --workloads durable-sync,point-read --full
seglog bench --full --json > bench.json
seglog bench recovery --keep --dir .  # keep the logs for seglog dump`

func benchCommand(e *env) *cobra.Command {
	var c bench.Config
	var o bench.CommandOptions
	var workloads []string
	cmd := command(e, "bench [WORKLOAD...] [flags]", "measure the storage engine on this disk", strings.Replace(benchDesc, "%s", strings.Join(benchGroups(), ", "), 1), benchExample,
		func(cl *cli, pos []string) int {
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
