package bench

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
)

// resetPeakRSS returns freed heap to the OS and, on Linux, resets the
// process's peak resident set size (VmHWM) to the current RSS by writing
// 5 to /proc/self/clear_refs, so that the next peakRSS reads the peak of
// what runs in between. It reports whether the reset worked; when it did
// not, peakRSS is the peak of the whole process so far.
func resetPeakRSS() bool {
	debug.FreeOSMemory()
	f, err := os.OpenFile("/proc/self/clear_refs", os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Write([]byte("5"))
	return err == nil
}

// peakRSS returns the process's peak resident set size in bytes: VmHWM of
// /proc/self/status, or getrusage's maxrss where there is no /proc.
func peakRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if v, ok := statusField(b, "VmHWM:"); ok {
			return v
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		return ru.Maxrss * 1024 // kilobytes on Linux
	}
	return 0
}

// statusField parses a "Name:   123 kB" line of /proc/<pid>/status into
// bytes.
func statusField(status []byte, name string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(name)) {
			continue
		}
		fields := bytes.Fields(line[len(name):])
		if len(fields) == 0 {
			return 0, false
		}
		v, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			return 0, false
		}
		if len(fields) > 1 && string(fields[1]) == "kB" {
			v *= 1024
		}
		return v, true
	}
	return 0, false
}

// rssSample is the process's resident set size now, from /proc/self/status
// (zero where there is none): in all (VmRSS), and its anonymous (heap,
// stacks) and file-backed (pages of mapped files, such as a segment's
// .log) parts. File-backed pages are the page cache's, shared and
// reclaimable, but they count in the process's RSS as long as it maps
// them.
type rssSample struct {
	Total, Anon, File int64
}

// currentRSS returns freed heap to the OS, then samples the RSS.
func currentRSS() rssSample {
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return rssSample{}
	}
	var s rssSample
	s.Total, _ = statusField(b, "VmRSS:")
	s.Anon, _ = statusField(b, "RssAnon:")
	s.File, _ = statusField(b, "RssFile:")
	return s
}

// sub returns s minus o, field by field: the growth from o to s.
func (s rssSample) sub(o rssSample) rssSample {
	return rssSample{Total: s.Total - o.Total, Anon: s.Anon - o.Anon, File: s.File - o.File}
}
