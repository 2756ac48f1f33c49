package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
)

// buildBinary builds the seglog command into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "seglog")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func runBinary(t *testing.T, bin, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	noStackTrace(t, errb.String())
	return code, out.String(), errb.String()
}

func TestBinary(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "data")

	code, out, _ := runBinary(t, bin, "", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Usage:")
	assert.Contains(t, out, "seglog [command]")
	code, _, errOut := runBinary(t, bin, "", "nonsense")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "unknown command")
	code, _, errOut = runBinary(t, bin, "", "dump", "--nope", "x.log")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "unknown flag: --nope")
	missing := filepath.Join(dir, "t-0", "00000000000000000000.log")
	code, _, errOut = runBinary(t, bin, "", "dump", missing)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, missing+": missing (no such file or directory)")

	code, out, errOut = runBinary(t, bin, "k1=a\nk2=b\nk3=c\n", "produce", "--dir", dir, "--topic", "t", "--key-separator", "=", "--sync", "always")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "0 0\n0 1\n0 2\n", out)
	code, out, errOut = runBinary(t, bin, "", "consume", "--dir", dir, "--topic", "t", "--key-separator", "=")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "k1=a\nk2=b\nk3=c\n", out)
	code, _, errOut = runBinary(t, bin, "", "verify", dir)
	assert.Equal(t, 0, code, errOut)

	// consume --follow: prints what is there, waits, and on SIGINT exits 0
	// after committing.
	cmd := exec.Command(bin, "consume", "--dir", dir, "--topic", "t", "--group", "g", "--follow")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	var got []string
	for len(got) < 3 && sc.Scan() {
		got = append(got, sc.Text())
	}
	assert.Equal(t, []string{"a", "b", "c"}, got)
	// It follows what another process produces meanwhile.
	code, out, errOut = runBinary(t, bin, "d\n", "produce", "--dir", dir, "--topic", "t")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "0 3\n", out)
	require.True(t, sc.Scan(), "the follower prints the new record")
	assert.Equal(t, "d", sc.Text())

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		assert.NoError(t, err, "exit after SIGINT: %s", stderr.String())
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("consume --follow did not exit on SIGINT")
	}
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	noStackTrace(t, stderr.String())
	st, err := offsets.Open(filepath.Join(dir, "offsets"), offsets.Options{})
	require.NoError(t, err)
	pos, err := st.Fetch("g", "t", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(4), pos.Offset)
	require.NoError(t, st.Close())

	// Resuming the group prints nothing new.
	code, out, errOut = runBinary(t, bin, "", "consume", "--dir", dir, "--topic", "t", "--group", "g")
	assert.Equal(t, 0, code, errOut)
	assert.Empty(t, out)
	_ = os.Remove(bin)
}
