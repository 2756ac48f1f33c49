package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"

	"github.com/seglog/seglog/internal/vfs"
	"github.com/seglog/seglog/storage"
)

// cli is one command's flag set, help text and error reporting.
type cli struct {
	name    string // "seglog dump"
	usage   string // "seglog dump [flags] FILE..."
	desc    string
	example string
	fs      *flag.FlagSet
	e       *env
}

func newCLI(e *env, name, usage, desc, example string) *cli {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // we print errors and help ourselves
	fs.Usage = func() {}
	return &cli{name: name, usage: usage, desc: desc, example: example, fs: fs, e: e}
}

// help writes the command's full help.
func (c *cli) help(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", c.usage, strings.TrimSpace(c.desc))
	var b strings.Builder
	c.fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			typ = " " + typ
		}
		fmt.Fprintf(&b, "  --%s%s\n", f.Name, typ)
		fmt.Fprintf(&b, "        %s", strings.ReplaceAll(usage, "\n", "\n        "))
		if !isZeroDefault(f) {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteString("\n")
	})
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", b.String())
	}
	fmt.Fprintf(w, "\nExample:\n%s\n", indent(strings.TrimSpace(c.example), "  "))
}

func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	// A Value type's zero: compare with a fresh one.
	t := reflect.TypeOf(f.Value)
	if t.Kind() == reflect.Pointer {
		z := reflect.New(t.Elem()).Interface().(flag.Value)
		return z.String() == f.DefValue
	}
	return false
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

// parse parses flags and positional arguments, which may be mixed
// (flags after a file name work, as operators expect); "--" ends flags.
// ok is false when the command must stop and return code: after --help
// (0, help on stdout) or a bad flag (2, the error and help on stderr).
func (c *cli) parse(args []string) (pos []string, code int, ok bool) {
	for {
		err := c.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.help(c.e.stdout)
			return nil, exitOK, false
		}
		if err != nil {
			return nil, c.usageErr("%s", dashDash(err.Error())), false
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagNameInMessage finds the flag name in the flag package's error
// messages, which write it with one dash.
var flagNameInMessage = regexp.MustCompile(`^(flag provided but not defined: |invalid value ".*" for flag |invalid boolean value ".*" for |flag needs an argument: )-([^-])`)

// dashDash rewrites a flag package error message to name the flag with
// two dashes, as the help and every other message do.
func dashDash(msg string) string {
	return flagNameInMessage.ReplaceAllString(msg, "$1--$2")
}

// usageErr reports bad usage: the message, then the help, on stderr; it
// returns exit code 2.
// required checks what every command checks first: no positional
// argument (unexpected is the message, with %q for the argument), then the
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

func (c *cli) usageErr(format string, args ...any) int {
	fmt.Fprintf(c.e.stderr, "%s: %s\n\n", c.name, fmt.Sprintf(format, args...))
	c.help(c.e.stderr)
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
func (c *cli) isSet(name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
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
// created is fsynced). The store takes an exclusive lock on the directory
// (storage.ErrLocked names a second process). On failure it reports and
// returns a nil store and the exit code.
func openStore(c *cli, dir string, create bool, opts storage.StoreOptions) (*storage.Store, int) {
	if create {
		if err := vfs.MkdirAllDurable(c.e.fs, dir, vfs.DefaultDirMode); err != nil {
			return nil, c.fail("data directory %s: %v", dir, unwrapPathErr(err))
		}
	} else if err := requireDir(dir); err != nil {
		return nil, c.fail("%v", err)
	}
	store, err := storage.OpenStore(dir, opts)
	if err != nil {
		return nil, c.fail("%v", err)
	}
	return store, exitOK
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
