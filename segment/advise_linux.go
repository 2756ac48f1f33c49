package segment

import "syscall"

// dropMapPages releases the pages of a read-only file map from the
// process (they stay in the page cache; the next read faults them back).
func dropMapPages(m []byte) error { return syscall.Madvise(m, syscall.MADV_DONTNEED) }
