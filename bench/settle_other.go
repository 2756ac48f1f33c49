//go:build !unix

package bench

// syncAll is not offered here: settle only waits.
func syncAll() {}
