package location

import "strings"

// Redact is loc as messages, --json and process titles show it: a URL
// without its password.
func Redact(loc string) string {
	switch {
	case IsURL(loc):
		return redactURL(loc)
	case isKeywordValue(loc):
		return redactKeywordValue(loc)
	}
	return loc
}

// The redaction below is written by hand, not with net/url and regexp,
// whose initialisation every ledger start-up would pay for (net/url
// brings net/netip): measured, 16 of ledger --version's 244 page faults
// and a tenth of a hello world's time.

// redactKeywordValue returns libpq's keyword/value form loc with the value
// of every password keyword replaced by xxxxx, as libpq reads a value:
// quoted (an unclosed quote runs to the end) or up to the next space,
// with backslash escapes either way, and its spaces (isspace: \v too).
// An empty value is left, as there is nothing to hide.
func redactKeywordValue(loc string) string {
	var b strings.Builder
	rest := loc
	for {
		at := passwordKeyword(rest)
		if at < 0 {
			b.WriteString(rest)
			return b.String()
		}
		v := at + len("password")
		v += len(rest[v:]) - len(strings.TrimLeft(rest[v:], libpqSpaces))
		if !strings.HasPrefix(rest[v:], "=") {
			b.WriteString(rest[:v])
			rest = rest[v:]
			continue
		}
		v++
		v += len(rest[v:]) - len(strings.TrimLeft(rest[v:], libpqSpaces))
		n := valueLen(rest[v:])
		b.WriteString(rest[:v])
		if n > 0 {
			b.WriteString("xxxxx")
		}
		rest = rest[v+n:]
	}
}

// passwordKeyword is the index of the first "password" in s that begins
// a word, or -1.
func passwordKeyword(s string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], "password")
		if i < 0 {
			return -1
		}
		i += off
		if i == 0 || !isWordByte(s[i-1]) {
			return i
		}
		off = i + 1
	}
}

func isWordByte(c byte) bool { return c == '_' || '0' <= c && c <= '9' || isLetter(rune(c)) }

// libpqSpaces are the spaces libpq's conninfo parser skips (isspace).
const libpqSpaces = spaces + "\v"

// valueLen is the length of the keyword value s starts with: a quoted
// one with its quotes, else up to an unescaped space; 0 when s starts
// with a space or is empty.
func valueLen(s string) int {
	if s == "" || strings.ContainsRune(libpqSpaces, rune(s[0])) {
		return 0
	}
	if s[0] != '\'' {
		for i := 0; i < len(s); i++ {
			switch {
			case s[i] == '\\':
				i++
			case strings.IndexByte(libpqSpaces, s[i]) >= 0:
				return i
			}
		}
		return len(s)
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			return i + 1
		}
	}
	return len(s)
}

// redactURL returns the URL loc with the password of its user and of any
// password query parameter replaced by "xxxxx". A URL whose scheme is not
// one (text before "://" that could hold anything) shows nothing.
//
// The user's password runs from the first ':' after "://" to the last
// '@' of the whole URL, not of its authority alone: a password may hold
// an unescaped '/', '?', '#' or '@', which a driver reading leniently
// takes as written. So the query is redacted both before the user's
// password is found (a password parameter may hold an '@') and after (a
// user's password may hold a '?'). An '@' in a query hides more than the
// password, never less.
func redactURL(loc string) string {
	i := strings.Index(loc, "://")
	if scheme(loc) != loc[:i+1] {
		return "…"
	}
	head, rest := loc[:i+3], redactQuery(loc[i+3:])
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if colon := strings.IndexByte(rest[:at], ':'); colon >= 0 {
			head, rest = head+rest[:colon+1]+"xxxxx@", redactQuery(rest[at+1:])
		}
	}
	return head + rest
}

// redactQuery returns s with the value of every password parameter of
// the query after its first '?' replaced by "xxxxx".
func redactQuery(s string) string {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s
	}
	query, fragment := s[q+1:], ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, fragment = query[:h], query[h:]
	}
	params := strings.Split(query, "&")
	for n, p := range params {
		if key, _, ok := strings.Cut(p, "="); ok && unescape(key) == "password" {
			params[n] = key + "=xxxxx"
		}
	}
	return s[:q+1] + strings.Join(params, "&") + fragment
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
