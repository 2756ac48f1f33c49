package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/seglog/seglog/internal/vfs"
)

// Checkpoint files hold one offset as a line of text, readable with cat:
//
//	seglog <name> v1 <offset> <xxhash64 of "seglog <name> v1 <offset>", 16 hex digits>\n
//
// They are replaced atomically (vfs.WriteFileAtomic).

func encodeCheckpoint(name string, offset int64) []byte {
	body := fmt.Sprintf("seglog %s v1 %d", name, offset)
	return []byte(fmt.Sprintf("%s %016x\n", body, xxhash.Sum64String(body)))
}

func decodeCheckpoint(name string, b []byte) (int64, error) {
	line := strings.TrimSuffix(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) != 5 || fields[0] != "seglog" || fields[1] != name || fields[2] != "v1" {
		return 0, fmt.Errorf("%w: %s: not a v1 checkpoint", ErrCorrupt, name)
	}
	body := strings.Join(fields[:4], " ")
	if fmt.Sprintf("%016x", xxhash.Sum64String(body)) != fields[4] {
		return 0, fmt.Errorf("%w: %s: checksum mismatch", ErrCorrupt, name)
	}
	v, err := strconv.ParseInt(fields[3], 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: %s: bad offset %q", ErrCorrupt, name, fields[3])
	}
	return v, nil
}

// readCheckpoint returns the offset in dir/name; ok is false when the file
// does not exist. A damaged file is an error wrapping ErrCorrupt.
func readCheckpoint(fs vfs.FS, dir, name string) (offset int64, ok bool, err error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, name), checkpointFileLimit)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		if errors.Is(err, vfs.ErrTooLarge) {
			return 0, false, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return 0, false, err
	}
	v, err := decodeCheckpoint(name, b)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return v, true, nil
}

func writeCheckpoint(fs vfs.FS, dir, name string, offset int64, perm os.FileMode) error {
	if err := vfs.WriteFileAtomic(fs, filepath.Join(dir, name), encodeCheckpoint(name, offset), perm); err != nil {
		return fmt.Errorf("storage: write %s: %w", name, err)
	}
	return nil
}

// ReadCheckpoint reads a partition directory's recovery-point or
// log-start-offset file, for tools. ok is false when it does not exist.
func ReadCheckpoint(dir, name string) (offset int64, ok bool, err error) {
	return readCheckpoint(vfs.Default, dir, name)
}

// Names of a partition directory's checkpoint files.
const (
	RecoveryPointFile  = recoveryPointFile
	LogStartOffsetFile = logStartOffsetFile
)

// Multi-line checkpoint files (the leader epoch cache, the manifest) share
// one framing: a header line "seglog <name> v1 <counts...>", item lines,
// and a last line with the xxhash64 of everything before it.

// encodeChecked frames lines (each without its newline) as such a file.
func encodeChecked(lines []string) []byte {
	var b []byte
	for _, l := range lines {
		b = append(append(b, l...), '\n')
	}
	return fmt.Appendf(b, "%016x\n", xxhash.Sum64(b))
}

// decodeChecked checks the framing of b and that its header names the file
// and version 1; it returns the header's remaining fields and the item
// lines.
func decodeChecked(name string, b []byte) (counts []string, items []string, err error) {
	bad := func(why string) ([]string, []string, error) {
		return nil, nil, fmt.Errorf("%w: %s: %s", ErrCorrupt, name, why)
	}
	if len(b) < 17 || b[len(b)-1] != '\n' {
		return bad("too short or no final newline")
	}
	body, sum := b[:len(b)-17], string(b[len(b)-17:len(b)-1])
	if fmt.Sprintf("%016x", xxhash.Sum64(body)) != sum {
		return bad("checksum mismatch")
	}
	if len(body) == 0 {
		return bad("no header")
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	head := strings.Fields(lines[0])
	if len(head) < 3 || head[0] != "seglog" || head[1] != name || head[2] != "v1" {
		return bad("not a v1 " + name)
	}
	return head[3:], lines[1:], nil
}
