package syntax

import (
	"testing"
	"time"
)

func TestShortDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{250*time.Millisecond + 400*time.Microsecond, "250ms"},
		{3*time.Second + 240*time.Millisecond, "3.2s"},
		{59*time.Second + 990*time.Millisecond, "1m0s"},
		{4*time.Minute + 10*time.Second + 400*time.Millisecond, "4m10s"},
		{26 * time.Hour, "26h0m0s"},
	} {
		if got := ShortDuration(c.d); got != c.want {
			t.Errorf("ShortDuration(%v) = %q; want %q", c.d, got, c.want)
		}
	}
}
