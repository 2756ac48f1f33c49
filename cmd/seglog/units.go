package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seglog/seglog/storage"
)

// humanBytes prints an approximate size for tables: 512 B, 1.5 KiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// sizeValue is a flag (pflag.Value) holding a size.
type sizeValue int64

// String formats the size as storage.ParseSize reads it.
func (v *sizeValue) String() string { return storage.FormatSize(int64(*v)) }

// Set parses a size.
func (v *sizeValue) Set(s string) error {
	n, err := storage.ParseSize(s)
	if err != nil {
		return err
	}
	*v = sizeValue(n)
	return nil
}

// Type names the value in help: SIZE.
func (v *sizeValue) Type() string { return "size" }

// durationValue is a flag (pflag.Value) holding a duration.
type durationValue time.Duration

// String formats the duration as storage.ParseDuration reads it.
func (v *durationValue) String() string { return storage.FormatDuration(time.Duration(*v)) }

// Set parses a duration.
func (v *durationValue) Set(s string) error {
	d, err := storage.ParseDuration(s)
	if err != nil {
		return err
	}
	*v = durationValue(d)
	return nil
}

// Type names the value in help: duration.
func (v *durationValue) Type() string { return "duration" }

// plural writes n and the noun, with an s unless n is 1: "1 segment",
// "2 segments".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ey") {
		return strconv.FormatInt(n, 10) + " " + noun[:len(noun)-1] + "ies"
	}
	if strings.HasSuffix(noun, "s") || strings.HasSuffix(noun, "x") || strings.HasSuffix(noun, "ch") || strings.HasSuffix(noun, "sh") {
		return strconv.FormatInt(n, 10) + " " + noun + "es"
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

// unescape turns the escapes an operator types for a delimiter or a
// separator into bytes: \n, \t, \r, \0 (NUL), \\, \xHH (strconv's
// reading of Go's escapes, but for \0); anything else is taken
// literally.
func unescape(s string) (string, error) {
	var b strings.Builder
	for rest := s; rest != ""; {
		switch {
		case strings.HasPrefix(rest, `\0`):
			b.WriteByte(0)
			rest = rest[2:]
		case len(rest) > 1 && rest[0] == '\\' && strings.IndexByte(`ntr\x`, rest[1]) >= 0:
			v, _, tail, err := strconv.UnquoteChar(rest, 0)
			if err != nil {
				return "", fmt.Errorf("%q: \\x wants two hex digits", s)
			}
			b.WriteByte(byte(v))
			rest = tail
		default:
			b.WriteByte(rest[0])
			rest = rest[1:]
		}
	}
	return b.String(), nil
}
