//go:build !linux

package segment

// dropMapPages is a no-op where madvise is not used: mapped reads keep
// their pages until the map is closed.
func dropMapPages(m []byte) error { return nil }
