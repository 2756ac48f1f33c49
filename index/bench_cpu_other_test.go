//go:build !linux

package index

import "testing"

// cpuMeter measures nothing off Linux (see bench_cpu_linux_test.go).
type cpuMeter struct{}

func startCPU() cpuMeter { return cpuMeter{} }

func (cpuMeter) report(*testing.B) {}
