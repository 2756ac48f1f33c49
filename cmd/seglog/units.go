package main

import (
	"fmt"
	"strconv"
	"strings"
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

// unitValue is a flag (pflag.Value) holding a size or a duration, read
// and printed in storage's syntax (sizeFlag, durationFlag).
type unitValue[T any] struct {
	p      *T
	typ    string // in help: size, duration
	parse  func(string) (T, error)
	format func(T) string
}

func (v unitValue[T]) String() string { return v.format(*v.p) }

func (v unitValue[T]) Type() string { return v.typ }

func (v unitValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err == nil {
		*v.p = x
	}
	return err
}

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
