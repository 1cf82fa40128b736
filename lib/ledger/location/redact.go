package location

import (
	"slices"
	"strings"
)

// Redact is loc as messages, --json and process titles show it: a URL
// without its password.
func Redact(loc string) string {
	shown, _ := redact(loc)
	return shown
}

// Secrets are the pieces of loc that Redact hides, split where a driver's
// own message might split them (at '@', spaces, quotes and backslashes),
// longest first, none shorter than two bytes: what a message quoting a
// driver's reading of loc must not show either (pgstore scrubs them).
func Secrets(loc string) []string {
	_, hidden := redact(loc)
	seen := map[string]bool{}
	var out []string
	for _, h := range hidden {
		for _, f := range strings.FieldsFunc(h, func(r rune) bool { return r == '@' || r == '\'' || r == '\\' || strings.ContainsRune(libpqSpaces, r) }) {
			if len(f) >= 2 && !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redact returns loc as Redact shows it, and the texts it hid.
func redact(loc string) (shown string, hidden []string) {
	switch {
	case IsURL(loc):
		return redactURL(loc)
	case isKeywordValue(loc):
		return redactKeywordValue(loc)
	}
	return loc, nil
}

// The redaction below is written by hand, not with net/url and regexp,
// whose initialisation every ledger start-up would pay for (net/url
// brings net/netip): measured, 16 of ledger --version's 244 page faults
// and a tenth of a hello world's time.

// redactKeywordValue returns libpq's keyword/value form loc with the value
// of every password and sslpassword keyword replaced by xxxxx, and the
// values it replaced. It reads loc as the driver (pgx) does: a keyword
// runs to the next '=', without the spaces around it; its value, after
// any spaces, is quoted (backslash escapes inside) or runs to the next
// unescaped space (isspace: \v too). A keyword holding the word password
// or sslpassword counts (libpq reads "a password=x" as an error, the
// driver as an odd keyword: either way it is hidden), and a quoted value
// never closed is hidden whatever its keyword, since what it runs over
// may be a password. An empty value is left, as there is nothing to hide.
func redactKeywordValue(loc string) (string, []string) {
	var b strings.Builder
	var hidden []string
	rest := loc
	for {
		eq := strings.IndexByte(rest, '=')
		if eq < 0 {
			// No keyword left: nothing the driver reads as a value.
			b.WriteString(rest)
			return b.String(), hidden
		}
		v := eq + 1
		v += len(rest[v:]) - len(strings.TrimLeft(rest[v:], libpqSpaces))
		n, closed := valueLen(rest[v:])
		b.WriteString(rest[:v])
		if n > 0 && (isPasswordKeyword(rest[:eq]) || !closed) {
			b.WriteString("xxxxx")
			hidden = append(hidden, rest[v:v+n])
		} else {
			b.WriteString(rest[v : v+n])
		}
		rest = rest[v+n:]
	}
}

// isPasswordKeyword reports whether the keyword text key (what precedes
// an '=') holds the word password or sslpassword.
func isPasswordKeyword(key string) bool {
	for _, w := range strings.FieldsFunc(key, func(r rune) bool { return strings.ContainsRune(libpqSpaces, r) }) {
		if w == "password" || w == "sslpassword" {
			return true
		}
	}
	return false
}

// libpqSpaces are the spaces libpq's conninfo parser skips (isspace).
const libpqSpaces = spaces + "\v"

// valueLen is the length of the keyword value s starts with: a quoted
// one with its quotes, else up to an unescaped space; 0 when s starts
// with a space or is empty. closed is false for a quoted value whose
// quote is never closed (it runs to the end).
func valueLen(s string) (n int, closed bool) {
	if s == "" || strings.ContainsRune(libpqSpaces, rune(s[0])) {
		return 0, true
	}
	if s[0] != '\'' {
		for i := 0; i < len(s); i++ {
			switch {
			case s[i] == '\\':
				i++
			case strings.IndexByte(libpqSpaces, s[i]) >= 0:
				return i, true
			}
		}
		return len(s), true
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			return i + 1, true
		}
	}
	return len(s), false
}

// redactURL returns the URL loc with the password of its user and of any
// password or sslpassword query parameter replaced by "xxxxx", and the
// texts it replaced. A URL whose scheme is not one (text before "://"
// that could hold anything) shows nothing.
//
// It hides more than a URL parser would read as the password, never
// less, since a driver may read more leniently than one:
//   - the user's password runs from the first ':' after "://" to the last
//     '@' of the whole URL, not of its authority alone: it may hold an
//     unescaped '/', '?', '#' or '@';
//   - when what that hides holds "password", a password parameter may
//     have begun in it: what follows the '@' is hidden up to the next '&';
//   - a parameter runs to the next '&' (a '#' is not taken for the end of
//     the query), its name read without the spaces around it.
func redactURL(loc string) (string, []string) {
	i := strings.Index(loc, "://")
	if scheme(loc) != loc[:i+1] {
		return "…", []string{loc}
	}
	head, rest := loc[:i+3], loc[i+3:]
	var hidden []string
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if colon := strings.IndexByte(rest[:at], ':'); colon >= 0 {
			user := rest[colon+1 : at]
			hidden = append(hidden, user)
			head, rest = head+rest[:colon+1]+"xxxxx@", rest[at+1:]
			if strings.Contains(user, "password") {
				end := strings.IndexByte(rest, '&')
				if end < 0 {
					end = len(rest)
				}
				if end > 0 {
					hidden = append(hidden, rest[:end])
					rest = "xxxxx" + rest[end:]
				}
			}
		}
	}
	rest, params := redactQuery(rest)
	return head + rest, append(hidden, params...)
}

// redactQuery returns s with the value of every password and sslpassword
// parameter of the query after its first '?' replaced by "xxxxx", and the
// values it replaced.
func redactQuery(s string) (string, []string) {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s, nil
	}
	var hidden []string
	params := strings.Split(s[q+1:], "&")
	for n, p := range params {
		key, value, ok := strings.Cut(p, "=")
		if name := strings.TrimSpace(unescape(key)); ok && (name == "password" || name == "sslpassword") {
			params[n] = key + "=xxxxx"
			hidden = append(hidden, value)
		}
	}
	return s[:q+1] + strings.Join(params, "&"), hidden
}

// unescape is a query key with its %XX escapes and "+" decoded, as libpq
// reads it; an escape that is not one is kept as written.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b.WriteByte(' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
