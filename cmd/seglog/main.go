// Command seglog is the operator's tool for a seglog data directory: list
// and describe topics, dump and verify segment files, produce and consume
// records, show and reset consumer-group offsets, run retention once,
// manage topics and their configuration, work Kestrel-style queues, serve
// them over Kestrel's memcache protocol (serve), and benchmark the engine
// on this disk.
//
// One front end (github.com/spf13/cobra) defines every command and flag,
// prints the help, and generates shell completion (seglog completion bash).
// Each command's description and examples are its file in help/.
// Every size flag takes one syntax (1GiB, 64MiB, 512KiB, 1MB, bytes) and
// every duration flag another (7d, 90m, 1h30m, 500ms): units.go.
//
// Exit codes: 0 success, 1 a failure found (corruption, lag over a
// threshold, an I/O error), 2 bad usage. Errors go to stderr and name the
// file and byte position involved.
//
// The tool stays thin: it decodes with the library's own decoders
// (segment.Walk, segment.RecordIter, segment.ReadIndexFile), reads as a consumer through package consumer,
// and prints what the library's checks return (storage.Check,
// offsets.Check, storage.Repair). Listing commands (topics,
// describe, offsets, dump, verify) open everything read-only: they change
// no byte of a data directory, also beside a running producer or broker.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/vfs"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// env is what every command gets: its context (cancelled by a test; the
// commands that wait install their own SIGINT handling on top of it), the
// standard streams, and the filesystem that the commands creating a data
// directory create it through (vfs.Default; tests inject faults).
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	fs     vfs.FS
}

// run is main without os.Exit: tests call it directly.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdin, stdout, stderr)
}

// runContext is run with a context, so that tests can stop a command that
// waits (consume --follow) without sending the process a signal.
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(&env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, fs: vfs.Default}, args)
}

// exitError is returned by a command that has reported what went wrong:
// only its exit code is left to pass on.
type exitError int

// Error says which exit code it carries.
func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is bad usage that has not been reported yet.
type usageError struct{ msg string }

// Error returns the message.
func (e usageError) Error() string { return e.msg }

// runEnv runs the command line args in e.
func runEnv(e *env, args []string) (code int) {
	defer func() {
		// A bug must not greet an operator with a stack trace.
		if r := recover(); r != nil {
			fmt.Fprintf(e.stderr, "seglog: internal error: %v (please report this, with the command line)\n", r)
			code = exitFailure
		}
	}()
	root := newRoot(e)
	root.SetArgs(append([]string{}, args...)) // never nil: cobra would read os.Args
	cmd, err := root.ExecuteContextC(e.ctx)
	if err == nil {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return int(ee)
	}
	if cmd == nil {
		cmd = root
	}
	msg := err.Error()
	var ue usageError
	if errors.As(err, &ue) {
		msg = ue.msg
	}
	fmt.Fprintf(e.stderr, "%s: %s\nRun '%s --help' for usage.\n", cmd.CommandPath(), strings.TrimRight(msg, "\n"), cmd.CommandPath())
	return exitUsage
}

// newRoot builds the command tree for one run in e.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "seglog",
		Short:         "operate a seglog data directory",
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		// Without a command: the help on stderr, and bad usage.
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(e.stderr)
			_ = cmd.Help()
			return exitError(exitUsage)
		},
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.AddGroup(
		&cobra.Group{ID: "data", Title: "Records:"},
		&cobra.Group{ID: "admin", Title: "Topics and consumer groups:"},
		&cobra.Group{ID: "files", Title: "Files on disk:"},
		&cobra.Group{ID: "other", Title: "Other:"},
	)
	root.SetHelpCommandGroupID("other")
	root.SetCompletionCommandGroupID("other")
	for _, c := range []struct {
		group string
		cmd   *cobra.Command
	}{
		{"data", produceCommand(e)},
		{"data", consumeCommand(e)},
		{"data", queueCommand(e)},
		{"data", serveCommand(e)},
		{"admin", topicsCommand(e)},
		{"admin", describeCommand(e)},
		{"admin", offsetsCommand(e)},
		{"admin", metricsCommand(e)},
		{"admin", retentionCommand(e)},
		{"files", dumpCommand(e)},
		{"files", verifyCommand(e)},
		{"files", repairCommand(e)},
		{"other", benchCommand(e)},
		{"other", versionCommand(e)},
	} {
		c.cmd.GroupID = c.group
		root.AddCommand(c.cmd)
	}
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "completion":
			c.Short = "print a shell completion script: seglog completion bash|zsh|fish|powershell"
		case "help":
			c.Short = "show the help of seglog or of a command"
		}
	}
	if err := attachHelp(root); err != nil {
		// The help files are compiled in: every test builds this tree.
		panic(err)
	}
	return root
}

var (
	// intSyntax is strconv's wording in pflag's messages about a number.
	intSyntax = regexp.MustCompile(`strconv\.Parse\w+: parsing "[^"]*": (invalid syntax|value out of range)`)
	// oneDash finds a long flag written with one dash, which pflag reads
	// as a cluster of one-letter flags.
	oneDash = regexp.MustCompile(`unknown shorthand flag: '.' in (-[a-zA-Z][a-zA-Z-]+)`)
)

// flagError turns pflag's error about a flag into a usage error worded
// for an operator.
func flagError(_ *cobra.Command, err error) error {
	msg := intSyntax.ReplaceAllStringFunc(err.Error(), func(m string) string {
		if strings.HasSuffix(m, "out of range") {
			return "out of range"
		}
		return "not a whole number"
	})
	if m := oneDash.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("unknown flag %s: long flags take two dashes (-%s)", m[1], m[1])
	}
	return usageError{msg}
}
