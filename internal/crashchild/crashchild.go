// Package crashchild runs a test binary again as a child process and kills
// it with SIGKILL at a chosen moment: the shared runner of the SIGKILL
// crash tests (storage, queue, raftstore). The child is dispatched by the
// test binary's TestMain on an environment variable.
package crashchild

import (
	"bufio"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stuckAfter is how long a child that never starts its work may run.
const stuckAfter = 30 * time.Second

// Run runs this test binary as a child with env added, passes every line
// it prints to onLine (those still in the pipe when it died included),
// and kills it with SIGKILL d after the first line for which onLine
// returns true: the kill timer starts when the child has started its
// work, so a slow start (a loaded machine, the race detector) still leaves
// it time. A child that never starts is killed after 30 s. Run returns
// once the child has exited and every line is read.
func Run(t testing.TB, env []string, d time.Duration, onLine func(line string) (started bool)) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var deadline <-chan time.Time
	stuck := time.After(stuckAfter)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				return
			}
			if onLine(line) && deadline == nil && stuck != nil {
				deadline = time.After(d)
			}
		case <-stuck:
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			stuck, deadline = nil, nil
		case <-deadline:
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			stuck, deadline = nil, nil
		}
	}
}
