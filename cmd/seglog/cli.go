package main

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// cli is one run of one command: where it reports, and its flags.
type cli struct {
	name string // "seglog dump"
	cmd  *cobra.Command
	e    *env
}

// command builds a cobra command whose run reports its own errors and
// returns an exit code. Flags are added to the returned command's Flags()
// by the caller, bound to variables that run reads. Its description and
// examples are its help file (attachHelp).
func command(e *env, use, short string, run func(c *cli, args []string) int) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := &cli{name: cmd.CommandPath(), cmd: cmd, e: e}
		if code := run(c, args); code != exitOK {
			return exitError(code)
		}
		return nil
	}
	cmd.Flags().SortFlags = false
	return cmd
}

// helpFiles holds each command's help: help/seglog.txt for the root,
// help/queue-put.txt for seglog queue put. A file is the description, a
// line "Examples:", then one example per line; {workloads} is replaced
// by the benchmark workloads.
//
//go:embed help/*.txt
var helpFiles embed.FS

// attachHelp sets the description and examples of root and of every
// command below it from their help files. cobra's own commands (help,
// completion) keep theirs.
func attachHelp(root *cobra.Command) error {
	vars := strings.NewReplacer("{workloads}", strings.Join(benchGroups(), ", "))
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		path := strings.Fields(c.CommandPath())
		if len(path) > 1 && (path[1] == "help" || path[1] == "completion") {
			return nil
		}
		if len(path) > 1 {
			path = path[1:]
		}
		name := "help/" + strings.Join(path, "-") + ".txt"
		b, err := helpFiles.ReadFile(name)
		if err != nil {
			return fmt.Errorf("the help of %s: %w", c.CommandPath(), err)
		}
		long, example, ok := strings.Cut(vars.Replace(string(b)), "\nExamples:\n")
		if !ok {
			return fmt.Errorf("%s has no line \"Examples:\"", name)
		}
		c.Long = strings.TrimSpace(long)
		c.Example = indent(strings.TrimSpace(example), "  ")
		return nil
	}
	return walk(root)
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// sizeFlag adds a size flag (storage.ParseSize's syntax) to fs.
func sizeFlag(fs *pflag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fs.Var(unitValue[int64]{p, "size", storage.ParseSize, storage.FormatSize}, name, usage)
}

// durationFlag adds a duration flag (storage.ParseDuration's syntax) to fs.
func durationFlag(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(unitValue[time.Duration]{p, "duration", storage.ParseDuration, storage.FormatDuration}, name, usage)
}

// usageErr reports bad usage and returns exit code 2.
func (c *cli) usageErr(format string, args ...any) int {
	fmt.Fprintf(c.e.stderr, "%s: %s\nRun '%s --help' for usage.\n", c.name, fmt.Sprintf(format, args...), c.name)
	return exitUsage
}

// fail reports a failure on stderr and returns exit code 1.
func (c *cli) fail(format string, args ...any) int {
	fmt.Fprintf(c.e.stderr, "%s: %s\n", c.name, fmt.Sprintf(format, args...))
	return exitFailure
}

// warn writes a note on stderr.
func (c *cli) warn(format string, args ...any) {
	fmt.Fprintf(c.e.stderr, "%s: %s\n", c.name, fmt.Sprintf(format, args...))
}

// isSet reports whether the flag was given on the command line.
func (c *cli) isSet(name string) bool { return c.cmd.Flags().Changed(name) }

// required checks what most commands check first: no positional argument
// (unexpected is the message, with %q for the argument), then the
// required flags, given as name and value pairs. bad is true when it
// reported a usage error; code is then the exit code.
func (c *cli) required(pos []string, unexpected string, flags ...string) (code int, bad bool) {
	if len(pos) > 0 {
		return c.usageErr(unexpected, pos[0]), true
	}
	for i := 0; i+1 < len(flags); i += 2 {
		if flags[i+1] == "" {
			return c.usageErr("--%s is required", flags[i]), true
		}
	}
	return exitOK, false
}

// dirArg returns the one data directory given as an argument or with
// --dir (dirFlag), checked to exist; else it reports and returns the exit
// code.
func (c *cli) dirArg(dirFlag string, pos []string) (string, int) {
	if dirFlag != "" {
		pos = append([]string{dirFlag}, pos...)
	}
	if len(pos) != 1 {
		return "", c.usageErr("want one DIR (or --dir DIR), got %d", len(pos))
	}
	if err := requireDir(pos[0]); err != nil {
		return "", c.fail("%v", err)
	}
	return pos[0], exitOK
}

// requireDir checks that a data directory given with --dir exists, so that
// a typo is an error rather than a new empty store.
func requireDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, unwrapPathErr(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s: not a directory", dir)
	}
	return nil
}

// unwrapPathErr drops the *os.PathError wrapper whose path the caller
// already prints.
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// openStore opens the data directory's Store with opts, creating the
// directory when create is set (durably: the parent of every directory
// created is fsynced). A writable store takes an exclusive lock on the
// directory; a read-only one (opts.Log.ReadOnly) takes none and changes
// nothing. On failure it reports and returns a nil store and the exit
// code.
func openStore(c *cli, dir string, create bool, opts storage.StoreOptions) (*storage.Store, int) {
	if create {
		if err := vfs.MkdirAllDurable(c.e.fs, dir, vfs.DefaultDirMode); err != nil {
			return nil, c.fail("data directory %s: %v", dir, unwrapPathErr(err))
		}
	} else if err := requireDir(dir); err != nil {
		return nil, c.fail("%v", err)
	}
	store, err := storage.OpenStore(dir, opts)
	if errors.Is(err, storage.ErrLocked) {
		return nil, c.fail("%s is in use by another process (a producer, a broker or another seglog command that writes): stop it first (listing commands, consume and retention --dry-run work beside it)", dir)
	}
	if err != nil {
		return nil, c.fail("%v", err)
	}
	return store, exitOK
}

// openStoreReadOnly opens the data directory's Store read-only: no lock,
// no recovery, no byte changed (beside a running writer too).
func openStoreReadOnly(c *cli, dir string) (*storage.Store, int) {
	return openStore(c, dir, false, storage.StoreOptions{Log: storage.Options{ReadOnly: true}})
}

// topicPartitions returns a topic's partition count, reporting an unknown
// topic clearly; ok is false after a reported failure.
func topicPartitions(c *cli, store *storage.Store, dir, topic string) (n int, code int, ok bool) {
	n, err := store.Partitions(topic)
	if err != nil {
		if errors.Is(err, storage.ErrUnknownTopic) {
			return 0, c.fail("topic %s does not exist in %s", topic, dir), false
		}
		return 0, c.fail("%v", err), false
	}
	return n, exitOK, true
}

// partitionsOf returns the partitions a command works on: only p when p
// is not -1 (after checking it exists), else all n.
func partitionsOf(c *cli, topic string, n, p int) ([]int32, int, bool) {
	if p >= 0 {
		if p >= n {
			return nil, c.fail("--partition %d: topic %s has partitions 0 to %d", p, topic, n-1), false
		}
		return []int32{int32(p)}, exitOK, true
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out, exitOK, true
}
