package pgstore

import "testing"

func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one line", "one line"},
		{"failed to connect to `user=u database=d`:\n\th:1 (h): refused\n\th:1 (h): refused", "failed to connect to `user=u database=d`: h:1 (h): refused"},
		{"failed to connect to `user=u database=d`:\n\ta:1 (a): refused\n\tb:1 (b): timeout\n", "failed to connect to `user=u database=d`: a:1 (a): refused; b:1 (b): timeout"},
		{"first\nsecond", "first; second"},
		{"trailing\n", "trailing"},
	} {
		if got := oneLine(tc.in); got != tc.want {
			t.Errorf("oneLine(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
