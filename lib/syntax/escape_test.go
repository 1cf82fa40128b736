package syntax

import "testing"

func TestEscapeControl(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"disk full", "disk full"},
		{"ünïcode ✓ \ufffd", "ünïcode ✓ \ufffd"}, // a literal U+FFFD is valid text
		{"two\nlines", `two\nlines`},
		{"tab\there", `tab\there`},
		{"cr\r", `cr\r`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"del\x7f", `del\x7f`},
		{"nul\x00", `nul\x00`},
		{"c1\u0085", `c1\u0085`},
		{"rtl\u202eoverride", `rtl\u202eoverride`},
		{"bad\xffutf8", `bad\xffutf8`},
		{`back\slash`, `back\slash`},
	} {
		if got := EscapeControl(tc.in); got != tc.want {
			t.Errorf("EscapeControl(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestEscapeControlChars(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"two\nlines", `two\nlines`},
		{"tab\there", `tab\there`},
		{"\x1b[31mred", `\x1b[31mred`},
		{"del\x7f", `del\x7f`},
		{"c1\u0085", `c1\u0085`},
		{"rtl\u202eoverride", "rtl\u202eoverride"}, // a format character: the printer's to escape
		{"bad\xffutf8", "bad\xffutf8"},             // invalid UTF-8: the store's and the printer's
	} {
		if got := EscapeControlChars(tc.in); got != tc.want {
			t.Errorf("EscapeControlChars(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
