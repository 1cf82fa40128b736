package execution

import (
	"bytes"
	"strings"
	"testing"
)

func TestTailBuffer(t *testing.T) {
	for _, tc := range []struct {
		limit  int64
		writes []string
	}{
		{4, []string{"ab", "cd", "ef"}},
		{4, []string{"abcdefgh"}},
		{4, []string{"a", "bcdefgh", "i"}},
		{10, []string{"short"}},
		{3, []string{"", "x", "", "yz", "0123"}},
		{5, strings.Split(strings.Repeat("0123456789", 30), "")},
	} {
		b := &tailBuffer{limit: tc.limit}
		var all bytes.Buffer
		for _, w := range tc.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
			}
			all.WriteString(w)
			want := all.Bytes()
			if int64(len(want)) > tc.limit {
				want = want[int64(len(want))-tc.limit:]
			}
			if got := b.Bytes(); !bytes.Equal(got, want) {
				t.Fatalf("limit %d, after writes up to %q: Bytes() = %q; want %q", tc.limit, w, got, want)
			}
			if int64(cap(b.buf)) > 4*tc.limit+int64(len(w))+64 {
				t.Fatalf("limit %d: buffer grew to %d", tc.limit, cap(b.buf))
			}
		}
	}
}
