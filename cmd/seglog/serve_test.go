package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/kestrel/kestrelbench"
)

// serveChild is a seglog serve process.
type serveChild struct {
	cmd  *exec.Cmd
	addr string
	errc chan struct{} // closed when its stderr ends
	log  *strings.Builder
	mu   *sync.Mutex
}

// startServe runs bin serve with args and waits for its Kestrel address.
func startServe(t *testing.T, bin string, args ...string) *serveChild {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &serveChild{cmd: cmd, errc: make(chan struct{}), log: &strings.Builder{}, mu: &sync.Mutex{}}
	addrc := make(chan string, 1)
	go func() {
		defer close(c.errc)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l := sc.Text()
			c.mu.Lock()
			c.log.WriteString(l + "\n")
			c.mu.Unlock()
			if _, a, ok := strings.Cut(l, "listening on kestrel "); ok {
				addrc <- a
			}
		}
	}()
	select {
	case c.addr = <-addrc:
	case <-c.errc:
		_ = cmd.Wait()
		t.Fatalf("seglog serve exited before listening:\n%s", c.stderr())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("seglog serve did not listen within 30s")
	}
	return c
}

func (c *serveChild) stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.String()
}

// wait waits for the process to exit and returns its exit code.
func (c *serveChild) wait(t *testing.T) int {
	t.Helper()
	<-c.errc
	err := c.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

// crashLedger is what the clients of one run know for sure.
type crashLedger struct {
	mu        sync.Mutex
	stored    map[string]bool // a set answered STORED
	sent      map[string]bool // a set was sent (maybe stored)
	confirmed map[string]bool // a close of it was answered
	closing   map[string]bool // a close of it was sent, unanswered
	again     []string        // confirmed items handed out again
}

func TestServeKestrelSurvivesSIGKILL(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "data")
	led := &crashLedger{stored: map[string]bool{}, sent: map[string]bool{}, confirmed: map[string]bool{}, closing: map[string]bool{}}
	const rounds, setters, readers = 3, 4, 4
	next := 0
	for round := range rounds {
		child := startServe(t, bin, "--dir", dir, "--kestrel=127.0.0.1:0", "--sync", "always")
		var wg sync.WaitGroup
		progress := make(chan struct{}, 1<<16)
		for s := range setters {
			base := next + s*1_000_000
			wg.Go(func() {
				m, err := kestrelbench.Dial(child.addr)
				if err != nil {
					return
				}
				defer m.Close()
				for i := base; ; i++ {
					v := fmt.Sprintf("r%d-v%d", round, i)
					led.mu.Lock()
					led.sent[v] = true
					led.mu.Unlock()
					if _, _, err := m.RoundTrip(fmt.Sprintf("set jobs 0 0 %d\r\n%s\r\n", len(v), v)); err != nil {
						return
					}
					led.mu.Lock()
					led.stored[v] = true
					led.mu.Unlock()
					progress <- struct{}{}
				}
			})
		}
		next += setters * 1_000_000
		for range readers {
			wg.Go(func() {
				m, err := kestrelbench.Dial(child.addr)
				if err != nil {
					return
				}
				defer m.Close()
				for {
					b, ok, err := m.RoundTrip("get jobs/open/t=100\r\n")
					if err != nil {
						return
					}
					if !ok {
						continue
					}
					v := string(b)
					led.mu.Lock()
					if led.confirmed[v] {
						led.again = append(led.again, v)
					}
					led.closing[v] = true
					led.mu.Unlock()
					if _, _, err := m.RoundTrip("get jobs/close\r\n"); err != nil {
						return
					}
					led.mu.Lock()
					delete(led.closing, v)
					led.confirmed[v] = true
					led.mu.Unlock()
				}
			})
		}
		// Kill after some hundreds of stored items, at a point that
		// differs by round.
		for range 200 + round*150 {
			<-progress
		}
		require.NoError(t, child.cmd.Process.Signal(syscall.SIGKILL))
		wg.Wait()
		child.wait(t)
	}

	// A clean start: drain what is left.
	child := startServe(t, bin, "--dir", dir, "--kestrel=127.0.0.1:0")
	m, err := kestrelbench.Dial(child.addr)
	require.NoError(t, err)
	left := map[string]int{}
	for {
		v, ok, err := m.RoundTrip("get jobs\r\n")
		require.NoError(t, err)
		if !ok {
			break
		}
		left[string(v)]++
	}
	m.Close()
	require.NoError(t, child.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, child.wait(t), child.stderr())

	led.mu.Lock()
	defer led.mu.Unlock()
	require.NotEmpty(t, led.confirmed, "the workload confirmed items before the kills")
	assert.Empty(t, led.again, "confirmed items handed out again after a SIGKILL")
	for v, n := range left {
		assert.Equal(t, 1, n, "%s is in the queue once", v)
		assert.True(t, led.sent[v], "%s was set", v)
		assert.False(t, led.confirmed[v], "%s was confirmed, and is handed out again", v)
	}
	lost := 0
	for v := range led.stored {
		if !led.confirmed[v] && !led.closing[v] && left[v] == 0 {
			lost++
			t.Errorf("%s got STORED, was never confirmed, and is gone", v)
		}
	}
	t.Logf("%d stored, %d confirmed, %d left after %d SIGKILLs; %d lost", len(led.stored), len(led.confirmed), len(left), rounds, lost)
}

func TestServeUsageAndSignals(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "data")
	code, _, errOut := runBinary(t, bin, "", "serve", "--dir", dir, "--listen", "")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no listener")
	code, _, errOut = runBinary(t, bin, "", "serve", "--dir", dir, "--kestrel", "127.0.0.1:1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--kestrel=ADDR", "a space-separated address is an argument: the error says to use =")
	code, _, errOut = runBinary(t, bin, "", "serve", "--kestrel")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--dir is required")
	code, _, errOut = runBinary(t, bin, "", "serve", "--dir", dir, "--kestrel", "--kestrel-max-open-reads", "0")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--kestrel-max-open-reads 0")
	code, _, errOut = runBinary(t, bin, "", "serve", "--dir", dir, "--kestrel", "--sync", "sometimes")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--sync")

	// SIGINT: a clean stop, exit 0, and the data directory closed cleanly.
	child := startServe(t, bin, "--dir", dir, "--kestrel=127.0.0.1:0")
	m, err := kestrelbench.Dial(child.addr)
	require.NoError(t, err)
	_, _, err = m.RoundTrip("set q 0 0 1\r\nx\r\n")
	require.NoError(t, err)
	v, ok, err := m.RoundTrip("get q/open\r\n")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "x", string(v))
	require.NoError(t, child.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 0, child.wait(t), child.stderr())
	assert.Contains(t, child.stderr(), "seglog serve: stopped")
	m.Close()

	// The shutdown command, when enabled; the open read was handed back.
	child = startServe(t, bin, "--dir", dir, "--kestrel=127.0.0.1:0", "--kestrel-shutdown")
	m, err = kestrelbench.Dial(child.addr)
	require.NoError(t, err)
	v, ok, err = m.RoundTrip("get q\r\n")
	require.NoError(t, err)
	require.True(t, ok, "the item open at SIGINT is back")
	assert.Equal(t, "x", string(v))
	err = m.Send("shutdown\r\n")
	require.NoError(t, err)
	assert.Equal(t, 0, child.wait(t), child.stderr())
	m.Close()
}
