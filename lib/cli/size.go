package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Size is a kong flag type for a number of bytes: a plain count, or one
// with a binary suffix K, M, G (KiB, MiB, GiB; a trailing "B" or "iB" is
// allowed, any case): 65536, 64K, 64KiB, 1M. As with every unit here, a
// K is 1024 bytes, never 1000.
type Size int64

// maxSize bounds a Size: what a tail kept in memory or a store may be.
const maxSize = 1 << 40

// UnmarshalText implements encoding.TextUnmarshaler for kong.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// N returns the value as a byte count.
func (s Size) N() int64 { return int64(s) }

// ParseSize reads a Size's syntax.
func ParseSize(text string) (int64, error) {
	num := strings.TrimSpace(text)
	if num != text || num == "" {
		return 0, fmt.Errorf("invalid size %q: want bytes, or a number with K, M or G (KiB, MiB, GiB)", text)
	}
	lower := strings.ToLower(num)
	for _, suffix := range []string{"ib", "b"} {
		if strings.HasSuffix(lower, suffix) {
			lower = strings.TrimSuffix(lower, suffix)
			break
		}
	}
	mult := int64(1)
	if n := len(lower); n > 0 {
		switch lower[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		}
		if mult > 1 {
			lower = lower[:n-1]
		} else if len(lower) < len(num) && !strings.HasSuffix(strings.ToLower(num), "b") {
			return 0, fmt.Errorf("invalid size %q", text)
		}
	}
	if lower == "" || strings.Trim(lower, "0123456789") != "" {
		return 0, fmt.Errorf("invalid size %q: want bytes, or a number with K, M or G (KiB, MiB, GiB)", text)
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n > maxSize/mult {
		return 0, errors.New("size " + text + " is too large (at most 1T)")
	}
	return n * mult, nil
}
