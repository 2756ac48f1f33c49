//go:build !linux

package vfs

func prefetch(string, int64, int64) {}
