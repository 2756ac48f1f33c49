package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"time"
)

const usage = `usage: seglog bench [workload...] [flags]

Measures seglog on this machine's disk, each figure beside what a plain
file does with the same work in the same run. With no workload it runs
the default suite (about a minute) in a temporary directory that it
removes afterwards.

Workloads: %s (e2e and random are accepted too).

Examples:
  seglog bench                          # the default suite in $TMPDIR
  seglog bench --dir /data              # on the disk under /data
  seglog bench produce consume --size 1GiB
  seglog bench --full --json > bench.json
  seglog bench recovery --keep --dir .  # keep the logs for seglog dump

Flags:
`

// Command runs "seglog bench" with args (the arguments after "bench"),
// printing the table (or JSON) on stdout and progress and errors on
// stderr. It returns the exit status: 0 on success and for --help, 2 for
// bad usage, 1 when a workload fails.
func Command(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seglog bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c Config
	var size, logSize string
	var asJSON, quiet bool
	var cpuProfile string
	fs.StringVar(&c.Dir, "dir", "", "make the working directory under `DIR` (default: the system temporary directory)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the data afterwards (for seglog dump)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON instead of a table")
	fs.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `FILE` (go tool pprof reads it)")
	fs.StringVar(&size, "size", "", "payload of each produce workload and of what consume reads (default 256MiB, 2GiB with --full)")
	fs.StringVar(&logSize, "log-size", "", "log size of random-read and recovery (default 64MiB, 512MiB with --full)")
	fs.DurationVar(&c.Duration, "duration", 0, "length of each durable, offsets and end-to-end variant (default 2s, 5s with --full)")
	fs.IntVar(&c.Producers, "producers", 8, "goroutines of the durable group-commit and concurrent-offsets variants")
	fs.BoolVar(&c.Full, "full", false, "the storage issue's target sizes (2GiB produce, 512MiB logs, 5s variants; a few minutes)")
	help := false
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
			help = true
		}
	}
	fs.Usage = func() {
		if !help {
			fmt.Fprintln(stderr, "run seglog bench --help for usage")
			return
		}
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, usage, strings.Join(Groups, ", "))
		fs.PrintDefaults()
	}

	// Flags may come before, between and after workload names.
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		c.Workloads = append(c.Workloads, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	var err error
	if size != "" {
		if c.Size, err = ParseBytes(size); err != nil || c.Size < 1<<20 {
			fmt.Fprintf(stderr, "seglog bench: --size %q: want a size of at least 1MiB\n", size)
			return 2
		}
	}
	if logSize != "" {
		if c.LogSize, err = ParseBytes(logSize); err != nil || c.LogSize < 1<<20 {
			fmt.Fprintf(stderr, "seglog bench: --log-size %q: want a size of at least 1MiB\n", logSize)
			return 2
		}
	}
	if c.Duration < 0 || c.Producers < 1 {
		fmt.Fprintln(stderr, "seglog bench: --duration and --producers must be positive")
		return 2
	}
	if c.Duration > 0 && c.Duration < 10*time.Millisecond {
		fmt.Fprintln(stderr, "seglog bench: --duration must be at least 10ms")
		return 2
	}
	if _, err := Suite(c); err != nil {
		fmt.Fprintf(stderr, "seglog bench: %v\n", err)
		return 2
	}

	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "seglog bench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "seglog bench: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var pw io.Writer = stderr
	if quiet {
		pw = nil
	}
	rep, runErr := Run(ctx, c, pw)
	if rep != nil && len(rep.Results) > 0 {
		var err error
		if asJSON {
			err = rep.WriteJSON(stdout)
		} else {
			err = rep.WriteTable(stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "seglog bench: %v\n", err)
			return 1
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "seglog bench: %v\n", runErr)
		return 1
	}
	return 0
}
