// Command seglog is the operator's tool for a seglog data directory: dump
// and verify segment files (read-only), produce and consume records, show
// and reset consumer offsets, run retention once, and manage topics.
//
// Exit codes: 0 success, 1 a failure found (corruption, lag over a
// threshold, an I/O error), 2 bad usage. Errors go to stderr and name the
// file and byte position involved.
//
// The tool stays thin: every decoder it uses is the library's own
// (segment.ParseHeader, segment.Verify, segment.RecordIter,
// index.DecodeOffsetEntries, index.DecodeTimeEntries,
// storage.ReadCheckpoint).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/seglog/seglog/internal/vfs"
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

type command struct {
	name    string
	summary string
	run     func(e *env, args []string) int
}

func commands() []command {
	return []command{
		{"dump", "print the batches, records or entries of .log, .index and .timeindex files", runDump},
		{"verify", "check every partition of a data directory (read-only)", runVerify},
		{"produce", "append records read from stdin, one per line", runProduce},
		{"consume", "print records of a topic, optionally as a consumer group", runConsume},
		{"offsets", "show consumer-group offsets and lag; reset a group's offsets", runOffsets},
		{"retention", "run the retention cleaner once", runRetention},
		{"topics", "list, create and delete topics", runTopics},
		{"queue", "put, get and peek items of a Kestrel-style queue", runQueue},
		{"bench", "measure the storage engine on this disk", runBench},
	}
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

// runEnv runs the command line args in e.
func runEnv(e *env, args []string) (code int) {
	stdout, stderr := e.stdout, e.stderr
	defer func() {
		// A bug must not greet an operator with a stack trace.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "seglog: internal error: %v (please report this, with the command line)\n", r)
			code = exitFailure
		}
	}()
	if len(args) == 0 {
		mainUsage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			if c, ok := findCommand(args[1]); ok {
				return c.run(e, []string{"--help"})
			}
			fmt.Fprintf(stderr, "seglog help: unknown command %q\n\n", args[1])
			mainUsage(stderr)
			return exitUsage
		}
		mainUsage(stdout)
		return exitOK
	}
	c, ok := findCommand(name)
	if !ok {
		if strings.HasPrefix(name, "-") {
			fmt.Fprintf(stderr, "seglog: unknown flag %s: flags go after the command\n\n", name)
		} else {
			fmt.Fprintf(stderr, "seglog: unknown command %q\n\n", name)
		}
		mainUsage(stderr)
		return exitUsage
	}
	return c.run(e, args[1:])
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func mainUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: seglog COMMAND [flags] [args]

seglog inspects and operates a seglog data directory:
  <dir>/<topic>-<partition>/   partition logs
  <dir>/offsets/               consumer-group offsets

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `  help       show this help, or "seglog help COMMAND"

Exit codes: 0 success, 1 a failure was found (corruption, lag over a
threshold, an unreadable file), 2 bad usage.

Example:
  seglog verify /var/lib/seglog && seglog dump --records /var/lib/seglog/orders-0/00000000000000000000.log

Run "seglog COMMAND --help" for a command's flags and an example.
`)
}
