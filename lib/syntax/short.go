package syntax

import "time"

// ShortDuration prints d to the precision a person reads in a table or a
// page: 250ms, 3.2s, 4m10s.
func ShortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
