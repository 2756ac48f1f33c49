package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// inUse reports whether a process holds a flock on a lock file or
// directory (the offset store's LOCK, a store's or a log's directory).
// It reads /proc/locks rather than probing with a lock of its own: a
// probe, however short, could make a writer that starts at that moment
// fail to take its lock. Where /proc/locks is missing it probes.
func inUse(lockPath string) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(lockPath, &st); err != nil {
		return false
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return probeLock(lockPath)
	}
	defer f.Close()
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 fd:01:567 0 EOF"; a waiting
		// lock has "->" after the number.
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && fields[1] == "FLOCK" && fields[5] == want {
			return true
		}
	}
	return false
}

// probeLock reports whether a lock is held by taking and releasing a
// shared one on a read-only descriptor.
func probeLock(lockPath string) bool {
	f, err := os.Open(lockPath)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// writerHolds reports whether a writer holds the partition directory dir:
// a Log holds its directory's lock, a Store the data directory above it.
// The lock belongs to the directory, so the path is made absolute and its
// symbolic links resolved first ("." inside a partition, or a link to it,
// names the same directory as the writer's path).
func writerHolds(dir string) bool {
	real, err := vfs.RealPath(dir)
	if err != nil {
		return false
	}
	if inUse(real) {
		return true
	}
	// The data root's lock covers the partitions of the store, not every
	// directory in it (an operator's copy, orders-0.bak).
	_, _, ok := storage.ParsePartitionDir(filepath.Base(real))
	return ok && inUse(filepath.Dir(real))
}
