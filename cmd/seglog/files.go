package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/seglog/seglog/segment"
)

// siblingPath returns the path of the segment file with another suffix.
func siblingPath(path, suffix string) string {
	for _, suf := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		if strings.HasSuffix(path, suf) {
			return strings.TrimSuffix(path, suf) + suffix
		}
	}
	return path + suffix
}

// fileErr words an error about a file for an operator: a missing file
// says missing.
func fileErr(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return missingError(path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", path)
	}
	return fmt.Errorf("%s: %w", path, unwrapPathErr(err))
}

// missingError is a file that does not exist.
type missingError string

// Error names the file.
func (m missingError) Error() string { return string(m) + ": missing (no such file or directory)" }

// Unwrap makes errors.Is(err, fs.ErrNotExist) hold.
func (m missingError) Unwrap() error { return fs.ErrNotExist }

// fileErrOf words, with fileErr, an error about the file at path that is
// an *fs.PathError (opening it failed); another error is returned as it
// is.
func fileErrOf(path string, err error) error {
	if errors.As(err, new(*fs.PathError)) {
		return fileErr(path, err)
	}
	return err
}
