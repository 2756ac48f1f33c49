//go:build unix

package bench

import "syscall"

// syncAll is sync(2): every file system's dirty data and metadata.
func syncAll() { syscall.Sync() }
