//go:build !linux

package bench

// dropFromPageCache is not offered here: cold opens are not measured.
func dropFromPageCache(string) (bool, error) { return false, nil }
