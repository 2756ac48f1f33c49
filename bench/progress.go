package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// progress shows what the suite is doing on w (stderr): on a terminal a
// live line rewritten a few times a second; otherwise one quiet line when
// each workload starts and ends. A nil *progress shows nothing.
type progress struct {
	w    io.Writer
	live bool

	mu    sync.Mutex
	name  string
	step  int
	steps int
	start time.Time
	done  atomic.Int64 // work done in the current step
	total atomic.Int64 // work in the current step; 0 when unknown
	stop  chan struct{}
	wg    sync.WaitGroup
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, steps int) *progress {
	if w == nil {
		return nil
	}
	p := &progress{w: w, live: isTerminal(w), steps: steps}
	if p.live {
		p.stop = make(chan struct{})
		p.wg.Add(1)
		go p.loop()
	}
	return p
}

func (p *progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

func (p *progress) drawLocked() {
	if p.name == "" {
		return
	}
	line := fmt.Sprintf("[%d/%d] %s %.1fs", p.step, p.steps, p.name, time.Since(p.start).Seconds())
	if t := p.total.Load(); t > 0 {
		line += fmt.Sprintf(" %3.0f%%", 100*float64(min(p.done.Load(), t))/float64(t))
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
}

// begin starts a step (a workload).
func (p *progress) begin(name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step++
	p.name, p.start = name, time.Now()
	p.done.Store(0)
	p.total.Store(0)
	if p.live {
		p.drawLocked()
	} else {
		fmt.Fprintf(p.w, "bench: [%d/%d] %s ...\n", p.step, p.steps, name)
	}
}

// setTotal sets the amount of work of the current step.
func (p *progress) setTotal(n int64) {
	if p != nil {
		p.done.Store(0)
		p.total.Store(n)
	}
}

// add records work done.
func (p *progress) add(n int64) {
	if p != nil {
		p.done.Add(n)
	}
}

// set records the work done so far.
func (p *progress) set(n int64) {
	if p != nil {
		p.done.Store(n)
	}
}

// end finishes the current step.
func (p *progress) end(err error) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	status := fmt.Sprintf("done in %.1fs", time.Since(p.start).Seconds())
	if err != nil {
		status = "failed: " + err.Error()
	}
	if p.live {
		fmt.Fprintf(p.w, "\r\033[K[%d/%d] %s %s\n", p.step, p.steps, p.name, status)
	} else {
		fmt.Fprintf(p.w, "bench: [%d/%d] %s %s\n", p.step, p.steps, p.name, status)
	}
	p.name = ""
}

// close stops the live line.
func (p *progress) close() {
	if p == nil || !p.live {
		return
	}
	close(p.stop)
	p.wg.Wait()
}
