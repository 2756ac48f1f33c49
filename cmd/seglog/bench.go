package main

import "github.com/seglog/seglog/bench"

// runBench hands over to package bench, which parses its own flags, prints
// its own help and returns the exit code.
func runBench(e *env, args []string) int {
	return bench.Command(args, e.stdout, e.stderr)
}
