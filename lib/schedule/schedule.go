// Package schedule is a job's schedule as tether records it: a cron
// expression in a time zone, or a fixed period (--every). Parsing is
// robfig/cron/v3's standard parser (five fields, no seconds, and the
// descriptors @yearly, @annually, @monthly, @weekly, @daily, @midnight,
// @hourly); what this package adds is the zone every schedule is
// resolved and written in, the slot a run stands for (Slot), and the
// daylight saving rules of cronie, which robfig's Next does not keep.
//
// # Synopsis
//
//	s, err := schedule.Parse("0 2 * * *", "Europe/Berlin") // errors.Is(err, schedule.ErrBadSchedule)
//	s.String()        // "CRON_TZ=Europe/Berlin 0 2 * * *": what is recorded
//	s.Next(t)         // the first slot strictly after t
//	s.Slot(now)       // the slot a run started at now stands for
//	s.Prev(t)         // the newest slot at or before t
//	e := schedule.Every(24 * time.Hour) // --every: "@every 24h0m0s", no slots
//
// # Zones
//
// Parse's tz, when set, is the zone; else a "CRON_TZ=Zone " or "TZ=Zone "
// prefix of the expression, as cronie reads it in a crontab; else the
// local zone (time.Local: $TZ, else /etc/localtime), recorded under its
// name (the $TZ zone, or the zoneinfo path /etc/localtime links to), so
// that String names a zone that a host in another zone reads back as the
// same schedule. A tz and a prefix that disagree are ErrBadSchedule.
//
// # Slots and tolerance
//
// A run started at now stands for the slot at or before now (Prev), but
// for a slot at most Tolerance after now, which it stands for instead: a
// host whose clock runs a little behind its peers' (or a cron daemon
// that fires a moment early) names the same slot as they do. Tolerance
// is 10 seconds, well under the one-minute shortest period of a cron
// expression, so that no two slots are ever within it of one instant.
//
// # Daylight saving time
//
// As cronie does (man 8 cron, "Daylight Saving Time and other time
// changes"), for a job at a fixed time (neither its minute nor its hour
// field starts with "*"): a slot whose wall time is skipped when clocks
// go forward falls on the first instant after the change (several such
// slots of one day are one); a slot whose wall time happens twice when
// clocks go back is its first occurrence only. A wildcard job (minute or
// hour "*", "*/15", @hourly) follows the wall clock: nothing in the
// skipped hour, and both occurrences of the repeated one. The table of
// TestDST is the reference.
//
// # Every
//
// Every(d) is the schedule of --every D: it has no slots (Slot and Prev
// are the zero time), Next(t) is t+d, and its String is "@every " and
// the duration as time.Duration writes it, which Parse reads back.
package schedule

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ErrBadSchedule is wrapped by every error of Parse: an expression or a
// zone that is not one.
var ErrBadSchedule = errors.New("invalid schedule")

// Tolerance is how far after now a slot may be and still be the slot of
// a run started at now (Slot).
const Tolerance = 10 * time.Second

// maxSearch bounds the search for a slot before an instant (robfig's
// Next gives up after five years too): an expression that names none
// within it (30 February) has none.
const maxSearch = 5 * 366 * 24 * time.Hour

// Schedule is a cron expression in a zone, or a fixed period. The zero
// value is no schedule (IsZero).
type Schedule struct {
	expr  string // the five fields, or the descriptor, as given (spaces normalised)
	zone  string // the zone's name as recorded
	loc   *time.Location
	spec  *cron.SpecSchedule // in UTC: the wall clock's civil times, free of any zone's changes
	fixed bool               // neither minute nor hour starts with "*": cronie's fixed-time job
	every time.Duration
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// descriptors are the descriptors a schedule may be, with the fields
// they stand for (to tell a fixed-time job from a wildcard one).
var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
	"@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// Parse parses a cron expression (or "@every D") in the zone tz: see the
// package doc for the zone when tz is empty. Errors wrap ErrBadSchedule.
func Parse(spec, tz string) (Schedule, error) {
	bad := func(format string, args ...any) (Schedule, error) {
		return Schedule{}, fmt.Errorf("%w %q: %s", ErrBadSchedule, spec, fmt.Sprintf(format, args...))
	}
	text := strings.TrimSpace(spec)
	if name, rest, ok := zonePrefix(text); ok {
		if tz != "" && tz != name {
			return bad("its zone %s is not --tz %s", name, tz)
		}
		tz, text = name, strings.TrimSpace(rest)
	}
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return bad("empty")
	}
	if fields[0] == "@every" {
		if len(fields) != 2 {
			return bad("want @every DURATION")
		}
		d, err := time.ParseDuration(fields[1])
		if err != nil || d < time.Second {
			return bad("want @every and a duration of at least 1s (24h, 90m)")
		}
		return Every(d), nil
	}
	if fields[0] == "@reboot" {
		return bad("@reboot is a time for cron to start a command, not a schedule of slots (use @reboot in the crontab, and --schedule with --catch-up)")
	}
	norm := strings.Join(fields, " ")
	five := norm
	if strings.HasPrefix(norm, "@") {
		f, ok := descriptors[norm]
		if !ok {
			return bad("unknown descriptor (want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)")
		}
		five = f
	} else if len(fields) != 5 {
		return bad("want 5 fields (minute hour day-of-month month day-of-week), not %d", len(fields))
	}
	parsed, err := parser.Parse(norm)
	if err != nil {
		return bad("%v", err)
	}
	sp, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return bad("not a cron expression")
	}
	loc, zone, err := zone(tz)
	if err != nil {
		return bad("%v", err)
	}
	sp.Location = time.UTC
	ff := strings.Fields(five)
	s := Schedule{expr: norm, zone: zone, loc: loc, spec: sp, fixed: ff[0][0] != '*' && ff[1][0] != '*'}
	if s.Next(time.Unix(0, 0)).IsZero() && s.Next(time.Now()).IsZero() {
		return bad("it names no time that exists")
	}
	return s, nil
}

// zonePrefix splits "CRON_TZ=Zone rest" or "TZ=Zone rest".
func zonePrefix(s string) (name, rest string, ok bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(s, p) {
			name, rest, _ = strings.Cut(s[len(p):], " ")
			return name, rest, true
		}
	}
	return "", s, false
}

// zone loads tz ("" the local zone) and returns it with the name String
// records.
func zone(tz string) (*time.Location, string, error) {
	if tz == "" {
		name, err := localName()
		return time.Local, name, err
	}
	if strings.ContainsAny(tz, " \t\n") || strings.HasPrefix(tz, "/") || strings.Contains(tz, "..") {
		return nil, "", fmt.Errorf("unknown time zone %q", tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return nil, "", fmt.Errorf("unknown time zone %q", tz)
	}
	return loc, tz, nil
}

// localName is the name of time.Local as another host can load it: $TZ's
// zone (UTC when $TZ is empty or names no zone: Go's time.Local is then
// UTC too), else the zoneinfo name /etc/localtime links to, else the name
// /etc/timezone holds (Debian's copy of the zone in a plain file). A
// local zone none of these names is an error: the recorded schedule
// could not be read back.
func localName() (string, error) {
	if tz, ok := os.LookupEnv("TZ"); ok {
		tz = strings.TrimPrefix(tz, ":")
		if _, err := time.LoadLocation(tz); err == nil && tz != "" && !strings.HasPrefix(tz, "/") {
			return tz, nil
		}
		if name := zoneinfoName(tz); name != "" {
			return name, nil
		}
		return "UTC", nil
	}
	if target, err := filepath.EvalSymlinks(localtimePath); err == nil {
		if name := zoneinfoName(target); name != "" {
			return name, nil
		}
	}
	if b, err := os.ReadFile(timezonePath); err == nil {
		if name := strings.TrimSpace(string(b)); name != "" && name != "Local" {
			if _, err := time.LoadLocation(name); err == nil {
				return name, nil
			}
		}
	}
	if time.Local.String() == "UTC" {
		return "UTC", nil
	}
	return "", errors.New("the local time zone has no name another host could read (/etc/localtime is no link into a zoneinfo tree, /etc/timezone names none): give --tz or CRON_TZ")
}

// localtimePath and timezonePath are where localName looks; variables
// for its tests.
var localtimePath, timezonePath = "/etc/localtime", "/etc/timezone"

// zoneinfoName is the zone name of a path in a zoneinfo tree
// (/usr/share/zoneinfo/Europe/Berlin: Europe/Berlin), "" if it is none.
func zoneinfoName(path string) string {
	_, name, ok := strings.Cut(path, "zoneinfo/")
	if !ok {
		return ""
	}
	name = strings.TrimPrefix(strings.TrimPrefix(name, "posix/"), "right/")
	if _, err := time.LoadLocation(name); err != nil {
		return ""
	}
	return name
}

// Every is the schedule of --every d: Next(t) is t+d, and it has no
// slots.
func Every(d time.Duration) Schedule { return Schedule{every: d} }

// IsZero reports whether s is no schedule.
func (s Schedule) IsZero() bool { return s.spec == nil && s.every == 0 }

// Period is an Every schedule's period, 0 for a cron expression.
func (s Schedule) Period() time.Duration { return s.every }

// Location is the zone of a cron expression (nil for an Every).
func (s Schedule) Location() *time.Location { return s.loc }

// String is the canonical text recorded: "CRON_TZ=Zone EXPR", or
// "@every D"; "" for no schedule. Parse reads it back as the same
// schedule on any host.
func (s Schedule) String() string {
	switch {
	case s.every != 0:
		return "@every " + s.every.String()
	case s.spec == nil:
		return ""
	}
	return "CRON_TZ=" + s.zone + " " + s.expr
}

// Next returns the first slot strictly after t (t+d for an Every), or
// the zero time if there is none within five years.
func (s Schedule) Next(t time.Time) time.Time {
	if s.every != 0 {
		return t.Add(s.every)
	}
	if s.spec == nil {
		return time.Time{}
	}
	// The slots are walked as wall-clock times (civil: the spec in UTC,
	// where no clock changes), the earliest instant after t winning. Near
	// a change of the zone's offset, from a little before t's wall time,
	// and on a little past the first found: a clock set back makes the
	// first occurrence of a wall time come after the second of an
	// earlier one.
	c := civil(t.In(s.loc)).Add(-s.setBack(t))
	var best time.Time
	for {
		if c = s.spec.Next(c); c.IsZero() {
			return best
		}
		if !best.IsZero() && c.After(civil(best.In(s.loc)).Add(s.setBack(best))) {
			return best
		}
		for _, u := range s.instants(c) {
			if u.After(t) && (best.IsZero() || u.Before(best)) {
				best = u
			}
		}
	}
}

// setBack is how far s's zone sets its clock back at a change within
// changeMargin of u (0 where it does not, or sets it forward): how far
// before u's wall time a wall time may be that comes after u.
func (s Schedule) setBack(u time.Time) time.Duration {
	start, end := u.In(s.loc).ZoneBounds()
	back := func(at time.Time) time.Duration {
		_, before := at.Add(-time.Nanosecond).In(s.loc).Zone()
		_, after := at.In(s.loc).Zone()
		return max(0, time.Duration(before-after)*time.Second)
	}
	var d time.Duration
	if !start.IsZero() && u.Sub(start) < changeMargin {
		d = back(start)
	}
	if !end.IsZero() && end.Sub(u) < changeMargin {
		d = max(d, back(end))
	}
	return d
}

// changeMargin is more than any zone's change of offset.
const changeMargin = 4 * time.Hour

// Prev returns the newest slot at or before t, or the zero time if there
// is none within five years (and for an Every).
func (s Schedule) Prev(t time.Time) time.Time {
	if s.spec == nil {
		return time.Time{}
	}
	for w := time.Minute; ; w *= 4 {
		var last time.Time
		for u := s.Next(t.Add(-w)); !u.IsZero() && !u.After(t); u = s.Next(u) {
			last = u
		}
		if !last.IsZero() || w > maxSearch {
			return last
		}
	}
}

// Slot returns the slot a run started at now stands for: the first slot
// after now if it is at most Tolerance away, else the newest at or before
// now (Prev). The zero time for an Every, or where there is none.
func (s Schedule) Slot(now time.Time) time.Time {
	if s.spec == nil {
		return time.Time{}
	}
	if n := s.Next(now); !n.IsZero() && n.Sub(now) <= Tolerance {
		return n
	}
	return s.Prev(now)
}

// civil is t's wall-clock time as a time in UTC.
func civil(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, mo, d, h, mi, sec, t.Nanosecond(), time.UTC)
}

// instants are the instants whose wall clock in s's zone reads c (a
// civil time, in UTC), as cronie runs a job at c: one where the wall
// time happens once; where it is skipped, the instant of the change for
// a fixed-time job and none for a wildcard one; where it happens twice,
// the first for a fixed-time job and both for a wildcard one.
func (s Schedule) instants(c time.Time) []time.Time {
	var out []time.Time
	var seen [3]int
	for i, probe := range [3]time.Duration{-26 * time.Hour, 0, 26 * time.Hour} {
		_, off := c.Add(probe).In(s.loc).Zone()
		if seen[i] = off; i > 0 && seen[0] == off || i > 1 && seen[1] == off {
			continue
		}
		u := c.Add(-time.Duration(off) * time.Second)
		if civil(u.In(s.loc)).Equal(c) {
			out = append(out, u)
		}
	}
	if len(out) == 2 && out[1].Before(out[0]) {
		out[0], out[1] = out[1], out[0]
	}
	switch {
	case len(out) == 0 && s.fixed:
		// In the gap: the change is where the clock's offset at the
		// instant c would be under the old offset begins.
		_, off := c.Add(-26 * time.Hour).In(s.loc).Zone()
		start, _ := c.Add(-time.Duration(off) * time.Second).In(s.loc).ZoneBounds()
		if !start.IsZero() {
			out = append(out, start)
		}
	case len(out) == 2 && s.fixed:
		out = out[:1]
	}
	return out
}
