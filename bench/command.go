package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"
)

// CommandOptions say how seglog bench reports a run; Config says what it
// runs. cmd/seglog parses both from the command line.
type CommandOptions struct {
	JSON       bool   // the report as JSON instead of a table
	Quiet      bool   // no progress on stderr
	CPUProfile string // write a CPU profile of the whole run here
}

// ErrUsage wraps the errors of Validate: the command line asked for
// something the suite cannot run.
var ErrUsage = errors.New("bench: bad usage")

// Validate checks a Config as a command line gives it: sizes of at least
// 1 MiB, a duration of at least 10 ms, at least one producer, and known
// workload names.
func (c Config) Validate() error {
	switch {
	case c.Size != 0 && c.Size < 1<<20:
		return fmt.Errorf("%w: --size %d: want at least 1MiB", ErrUsage, c.Size)
	case c.LogSize != 0 && c.LogSize < 1<<20:
		return fmt.Errorf("%w: --log-size %d: want at least 1MiB", ErrUsage, c.LogSize)
	case c.Duration < 0 || (c.Duration > 0 && c.Duration < 10*time.Millisecond):
		return fmt.Errorf("%w: --duration %v: want at least 10ms", ErrUsage, c.Duration)
	case c.Producers < 1:
		return fmt.Errorf("%w: --producers %d: want at least 1", ErrUsage, c.Producers)
	}
	if _, err := Suite(c); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return nil
}

// RunCommand runs seglog bench: the suite c, with progress on stderr
// (unless o.Quiet), then the report on stdout, as a table (at most 100
// columns wide) or JSON. It returns an error wrapping ErrUsage for a
// Config that Validate refuses, and the first failure of a workload (the
// report of those that ran is printed first).
func RunCommand(ctx context.Context, c Config, o CommandOptions, stdout, stderr io.Writer) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var pw io.Writer = stderr
	if o.Quiet {
		pw = nil
	}
	rep, runErr := Run(ctx, c, pw)
	if rep != nil && len(rep.Results) > 0 {
		var err error
		if o.JSON {
			err = rep.WriteJSON(stdout)
		} else {
			err = rep.WriteTable(stdout)
		}
		if err != nil {
			return err
		}
	}
	return runErr
}
