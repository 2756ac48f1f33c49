package index

import (
	"runtime"
	"syscall"
	"testing"
)

// cpuMeter measures the CPU time of the benchmark's thread, which on a
// loaded machine says more than the wall time: the time the benchmark was
// not running counts in ns/op, not in cpu-ns/op.
type cpuMeter struct{ start int64 }

func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// startCPU locks the goroutine to its thread and starts measuring.
func startCPU() cpuMeter {
	runtime.LockOSThread()
	return cpuMeter{start: threadCPU()}
}

// report adds cpu-ns/op to the benchmark's results, after its loop.
func (m cpuMeter) report(b *testing.B) {
	end := threadCPU()
	runtime.UnlockOSThread()
	if m.start >= 0 && end >= 0 && b.N > 0 {
		b.ReportMetric(float64(end-m.start)/float64(b.N), "cpu-ns/op")
	}
}
