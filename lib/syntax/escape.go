package syntax

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// EscapeControl makes free text (an --error, a --note, a process's
// command name, a file name in a diagnostic) safe for one line on a
// terminal (CONTRACT.md §1.2): control characters (a newline, a tab that
// would break the columns, ESC that starts a terminal escape sequence),
// Unicode format characters (a right-to-left override) and invalid UTF-8
// are written as Go escapes (\n, \x1b, \u202e). JSON output stays exact.
func EscapeControl(s string) string { return escape(s, unsafeRune) }

// EscapeControlChars escapes only the control characters of s (a
// newline, ESC), as EscapeControl writes them, and leaves format
// characters and invalid UTF-8 as they are: for a word quoted in an error
// that is also stored, so that it stays one line while the store keeps
// its text valid UTF-8 its own way (U+FFFD) and the diagnostic escapes
// the rest when it is printed.
func EscapeControlChars(s string) string {
	return escape(s, func(r rune, _ int) bool { return unicode.IsControl(r) })
}

// escape writes the runes of s that unsafe reports as Go escapes.
func escape(s string, unsafe func(r rune, size int) bool) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafe(r, size):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case size == 1: // an ASCII control or a byte of invalid UTF-8
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports a rune EscapeControl escapes; size is its length in
// bytes (1 for RuneError, invalid UTF-8).
func unsafeRune(r rune, size int) bool {
	return (r == utf8.RuneError && size == 1) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
