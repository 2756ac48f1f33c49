package vfs

// Prefetch asks the kernel to start reading, in the background, the first
// head bytes (all of it if head < 0) and the last tail bytes of the file
// at path into the page cache, and returns without waiting for the disk.
// It is a hint: a file that is missing or cannot be read is ignored, and on
// file systems other than the OS's, or without posix_fadvise, it does
// nothing. An open after a cold start (a reboot, caches dropped) reads a
// dozen small files and the ends of the active segment one after another,
// each a disk round trip; prefetched, their reads overlap.
func Prefetch(fsys FS, path string, head, tail int64) {
	if _, ok := fsys.(osFS); ok {
		prefetch(path, head, tail)
	}
}

// CachedPages reports which pages of the file at path are in the page
// cache (mincore(2) over a read-only map of it). It is for tests and
// benchmarks that check what Prefetch and eviction did; where mincore is
// not offered it returns an error.
func CachedPages(path string) ([]bool, error) { return cachedPages(path) }
