package main

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
)

// update regenerates the golden files: go test ./cmd/seglog -run Golden
// -update (or SEGLOG_UPDATE_GOLDEN=1).
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// checkGolden compares out with testdata/name.golden, or writes it there
// when updating. A mismatch names the first line that differs.
func checkGolden(t *testing.T, name, out string) {
	t.Helper()
	golden := filepath.Join("testdata", name+".golden")
	if *update || os.Getenv("SEGLOG_UPDATE_GOLDEN") == "1" {
		require.NoError(t, os.WriteFile(golden, []byte(out), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -update (or SEGLOG_UPDATE_GOLDEN=1) to create it")
	if string(want) == out {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(out, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Fatalf("output differs from %s at line %d (-update regenerates it):\nwant: %s\n got: %s", golden, i+1, w, g)
		}
	}
}

// step is one command line of a golden transcript.
type step struct {
	stdin string
	args  []string
}

func run1(args ...string) step { return step{args: args} }

// transcript runs the steps in order and writes what each printed: the
// command line, stdout, then stderr and the exit code when there are any.
// NUL bytes show as \0; the data directory as DATA.
func transcript(t *testing.T, data string, steps []step) string {
	t.Helper()
	var b strings.Builder
	for _, s := range steps {
		args := make([]string, len(s.args))
		for i, a := range s.args {
			args[i] = strings.ReplaceAll(a, data, "DATA")
			if strings.ContainsAny(args[i], " \t\\'%") {
				args[i] = "'" + args[i] + "'"
			}
		}
		b.WriteString("$ ")
		if s.stdin != "" {
			b.WriteString("printf " + strconv.Quote(s.stdin) + " | ")
		}
		b.WriteString("seglog " + strings.Join(args, " ") + "\n")
		r := seglog(t, s.stdin, s.args...)
		b.WriteString(r.stdout)
		if r.stderr != "" {
			b.WriteString("[stderr]\n" + r.stderr)
		}
		if r.code != 0 {
			b.WriteString("[exit " + strconv.Itoa(r.code) + "]\n")
		}
		b.WriteString("\n")
	}
	out := strings.ReplaceAll(b.String(), data, "DATA")
	out = strings.ReplaceAll(out, "\x00", `\0`)
	out = strings.ReplaceAll(out, runtime.Version(), "GOVERSION")
	return out
}

// goldenData makes the data directory of the golden transcripts: topic
// orders (2 partitions of 50 records, segments of about 1 KiB, fixed
// timestamps), and group billing's commit of offset 45 on orders-0.
func goldenData(t *testing.T) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	makeLog(t, data, "orders", 2, 5, 10, 1024)
	st, err := offsets.Open(filepath.Join(data, "offsets"), offsets.Options{})
	require.NoError(t, err)
	require.NoError(t, st.Commit("billing", "orders", 0, 45, ""))
	require.NoError(t, st.Close())
	return data
}

// TestGolden runs every command on a fixed data directory and compares
// what it prints with testdata/COMMAND.golden.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func(data string) []step
	}{
		{"help", func(string) []step {
			return []step{run1(), run1("--help"), run1("frobnicate"), run1("consume", "-dir", "x")}
		}},
		{"version", func(string) []step { return []step{run1("version"), run1("--version")} }},
		{"completion", func(d string) []step {
			// What a shell asks: the subcommands, a topic of the data
			// directory (read-only), the values of --sync.
			return []step{
				run1("__complete", "topics", ""),
				run1("__complete", "describe", "--dir", d, "--topic", ""),
				run1("__complete", "produce", "--sync", ""),
				run1("__complete", "consume", "--format", ""),
			}
		}},
		{"topics", func(d string) []step {
			return []step{
				run1("topics", "--dir", d),
				run1("topics", "create", "--dir", d, "--topic", "events", "--partitions", "3", "--segment-bytes", "64MiB", "--segment-age", "1h",
					"--index-interval", "4KiB", "--retention-age", "7d", "--retention-bytes", "1GiB", "--retention-consumed", "--compression", "zstd", "--sync", "always"),
				run1("topics", "create", "--dir", d, "--topic", "events", "--partitions", "3"),
				run1("topics", "alter", "--dir", d, "--topic", "events", "--retention-age", "3d", "--segment-age", "0", "--compression", "default", "--partitions", "4"),
				run1("topics", "--dir", d, "--json"),
				run1("topics", "alter", "--dir", d, "--topic", "events", "--partitions", "2"),
				run1("topics", "delete", "--dir", d, "--topic", "orders"),
				run1("topics", "list", "--dir", d),
				run1("offsets", "--dir", d),
			}
		}},
		{"describe", func(d string) []step {
			return []step{
				run1("describe", "--dir", d, "--topic", "orders"),
				run1("describe", "--dir", d, "--topic", "orders", "--partition", "1", "--json"),
				run1("describe", "--dir", d, "--topic", "orders", "--partition", "2"),
				run1("describe", "--dir", d, "--topic", "nope"),
			}
		}},
		{"offsets", func(d string) []step {
			return []step{
				run1("offsets", "--dir", d),
				run1("offsets", "--dir", d, "--group", "billing", "--json"),
				run1("offsets", "--dir", d, "--max-lag", "10"),
				run1("offsets", "reset", "--dir", d, "--group", "billing", "--topic", "orders", "--to-datetime", "ms:1700000000200"),
				run1("offsets", "reset", "--dir", d, "--group", "billing", "--topic", "orders", "--partition", "1", "--shift-by", "60", "--execute"),
				run1("offsets", "reset", "--dir", d, "--group", "audit", "--topic", "orders", "--to-earliest", "--execute"),
				run1("offsets", "reset", "--dir", d, "--group", "billing", "--all-topics", "--to-offset", "10"),
				run1("offsets", "--dir", d),
				run1("offsets", "delete", "--dir", d, "--group", "audit"),
				run1("offsets", "delete", "--dir", d, "--group", "billing", "--topic", "orders"),
				run1("offsets", "--dir", d),
			}
		}},
		{"consume", func(d string) []step {
			return []step{
				run1("consume", "--dir", d, "--topic", "orders", "--partition", "0", "--max", "3"),
				run1("consume", "--dir", d, "--topic", "orders", "--from", "-2", "--print-key", "--print-timestamp", "--print-headers"),
				run1("consume", "--dir", d, "--topic", "orders", "--from", "ms:1700000000480", "--format", `%t/%p/%o %T %k=%v (%K, %S) [%h]\n`),
				run1("consume", "--dir", d, "--topic", "orders", "--partition", "1", "--from", "48", "--format", "json"),
				run1("consume", "--dir", d, "--topic", "orders", "--partition", "1", "--from", "-2", "--delimiter", `\0`, "--key-separator", ":"),
				run1("consume", "--dir", d, "--topic", "orders", "--group", "billing", "--max", "2", "--key-separator", "="),
				run1("consume", "--dir", d, "--topic", "orders", "--group", "new", "--from", "latest"),
				run1("offsets", "--dir", d, "--group", "new"),
				run1("consume", "--dir", d, "--topic", "orders", "--from", "2000-01-01T00:00:00Z", "--max", "1"),
				run1("consume", "--dir", d, "--topic", "orders", "--from", "-1x"),
			}
		}},
		{"produce", func(d string) []step {
			return []step{
				{stdin: "k1:v1\nk2:v2\nk3:v3\n", args: []string{"produce", "--dir", d, "--topic", "new", "--partitions", "2", "--key-separator", ":", "--sync", "always"}},
				{stdin: `{"key":"a","value":"json","headers":[{"key":"h","value":"1"}],"timestamp":1700000000000}` + "\n" + `{"value":"AAE=","value_encoding":"base64","timestamp":"2023-11-14T22:13:20Z"}` + "\n",
					args: []string{"produce", "--dir", d, "--topic", "new", "--partition", "0", "--format", "json"}},
				{stdin: "one\x00two\x00three", args: []string{"produce", "--dir", d, "--topic", "new", "--partition", "1", "--delimiter", `\0`}},
				run1("consume", "--dir", d, "--topic", "new", "--format", "%p/%o %k=%v [%h]\\n"),
				{stdin: "a\nb\n{bad\n", args: []string{"produce", "--dir", d, "--topic", "new", "--format", "json"}},
				{stdin: "x:1\nno separator\n", args: []string{"produce", "--dir", d, "--topic", "new", "--key-separator", ":", "--partition", "1"}},
				{stdin: "x\n", args: []string{"produce", "--dir", d, "--topic", "new", "--sync", "none"}},
			}
		}},
		{"retention", func(d string) []step {
			return []step{
				run1("retention", "--dir", d, "--dry-run", "--max-bytes", "2KiB"),
				run1("retention", "--dir", d, "--max-bytes", "2KiB", "--json"),
				run1("retention", "--dir", d, "--consumed"),
				run1("topics", "alter", "--dir", d, "--topic", "orders", "--retention-bytes", "1KiB"),
				run1("retention", "--dir", d),
				run1("topics", "--dir", d),
			}
		}},
		{"verify", func(d string) []step {
			return []step{run1("verify", d), run1("verify", "--dir", filepath.Join(d, "orders-1"), "--deep"), run1("verify")}
		}},
		{"dump-dir", func(d string) []step {
			return []step{run1("dump", "--dir", d, "--topic", "orders", "--partition", "1", "--verify-index"), run1("dump", "--dir", filepath.Join(d, "orders-0")), run1("dump", "--dir", d)}
		}},
		{"queue", func(d string) []step {
			return []step{
				{stdin: "job-1\njob-2\njob-3\n", args: []string{"queue", "put", "--dir", d, "--queue", "jobs", "--sync", "always"}},
				run1("queue", "peek", "--dir", d, "--queue", "jobs"),
				run1("queue", "get", "--dir", d, "--queue", "jobs", "--max", "2"),
				run1("queue", "stats", "--dir", d),
			}
		}},
		{"bench", func(string) []step {
			return []step{run1("bench", "--help"), run1("bench", "nope"), run1("bench", "--size", "1KiB")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := goldenData(t)
			checkGolden(t, tc.name, transcript(t, data, tc.steps(data)))
		})
	}
}
