package bench

import (
	"bytes"
	"os"
	"time"
)

// settle waits for the writeback of what came before (the last workload's
// files, a removed baseline file and, on a file system mounted with
// discard, the discard of its blocks at the journal's commit), so that
// the next measurement does not pay for it: sync(2), then, where
// /proc/meminfo says, until dirty and writeback pages are under 64 MiB or
// 5 s have passed. Without it a baseline that followed a 2 GiB workload
// ran at a tenth of its speed.
func settle() {
	syncAll()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/meminfo")
		if err != nil {
			return
		}
		dirty, ok1 := meminfoKiB(b, "Dirty:")
		wb, ok2 := meminfoKiB(b, "Writeback:")
		if !ok1 || !ok2 || dirty+wb < 64<<10 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// meminfoKiB returns the value, in KiB, of the /proc/meminfo line that
// starts with name.
func meminfoKiB(b []byte, name string) (int64, bool) {
	for line := range bytes.Lines(b) {
		if !bytes.HasPrefix(line, []byte(name)) {
			continue
		}
		f := bytes.Fields(line[len(name):])
		if len(f) == 0 {
			return 0, false
		}
		var v int64
		for _, c := range f[0] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int64(c-'0')
		}
		return v, true
	}
	return 0, false
}
