//go:build !linux

package vfs

import "errors"

func prefetch(string, int64, int64) {}

func cachedPages(string) ([]bool, error) { return nil, errors.New("mincore is not offered here") }
