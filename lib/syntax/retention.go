package syntax

import "time"

// ParseRetention parses how long records are kept: a duration as
// ParseDuration takes it, days ("7d", "1.5d") included.
func ParseRetention(s string) (time.Duration, error) { return ParseDuration(s) }
