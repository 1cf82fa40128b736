package schedule

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func mustParse(t *testing.T, spec, tz string) Schedule {
	t.Helper()
	s, err := Parse(spec, tz)
	if err != nil {
		t.Fatalf("Parse(%q, %q) = %v", spec, tz, err)
	}
	return s
}

// TestDST is cronie's table (man 8 cron, "Daylight Saving Time and other
// time changes") as this package keeps it. Europe/Berlin, 2024: clocks
// go forward on 31 March at 02:00 CET (01:00Z) to 03:00 CEST, and back
// on 27 October at 03:00 CEST (01:00Z) to 02:00 CET, so that 02:00-03:00
// happens twice (00:00Z-01:00Z, then 01:00Z-02:00Z). America/New_York
// goes forward on 10 March at 02:00 EST (07:00Z).
func TestDST(t *testing.T) {
	for _, c := range []struct {
		spec, tz string
		after    string
		want     []string // the slots after `after`, in order
		why      string
	}{
		// Spring forward.
		{"30 2 * * *", "Europe/Berlin", "2024-03-30T00:00:00Z",
			[]string{"2024-03-30T01:30:00Z", "2024-03-31T01:00:00Z", "2024-04-01T00:30:00Z"},
			"a fixed time in the skipped hour runs once, right after the change (03:00 CEST)"},
		{"0,30 2 * * *", "Europe/Berlin", "2024-03-30T23:00:00Z",
			[]string{"2024-03-31T01:00:00Z", "2024-04-01T00:00:00Z", "2024-04-01T00:30:00Z"},
			"two fixed times in the skipped hour are one slot, after the change"},
		{"0 3 * * *", "Europe/Berlin", "2024-03-30T23:00:00Z",
			[]string{"2024-03-31T01:00:00Z", "2024-04-01T01:00:00Z"},
			"a fixed time just after the gap exists as ever"},
		{"*/20 * * * *", "Europe/Berlin", "2024-03-31T00:30:00Z",
			[]string{"2024-03-31T00:40:00Z", "2024-03-31T01:00:00Z", "2024-03-31T01:20:00Z"},
			"a wildcard job follows the wall clock: nothing in the skipped hour"},
		{"15 * * * *", "Europe/Berlin", "2024-03-31T00:00:00Z",
			[]string{"2024-03-31T00:15:00Z", "2024-03-31T01:15:00Z", "2024-03-31T02:15:00Z"},
			"an hourly job has no 02:15 that day"},
		{"30 2 * * *", "America/New_York", "2024-03-09T12:00:00Z",
			[]string{"2024-03-10T07:00:00Z", "2024-03-11T06:30:00Z"},
			"New York: 02:30 is skipped, run at 03:00 EDT"},
		// Fall back.
		{"30 2 * * *", "Europe/Berlin", "2024-10-26T23:00:00Z",
			[]string{"2024-10-27T00:30:00Z", "2024-10-28T01:30:00Z"},
			"a fixed time in the repeated hour runs once, at its first occurrence"},
		{"30 2 * * *", "Europe/Berlin", "2024-10-27T00:30:00Z",
			[]string{"2024-10-28T01:30:00Z"},
			"and not at its second"},
		{"30 * * * *", "Europe/Berlin", "2024-10-26T23:00:00Z",
			[]string{"2024-10-26T23:30:00Z", "2024-10-27T00:30:00Z", "2024-10-27T01:30:00Z", "2024-10-27T02:30:00Z"},
			"a wildcard job runs in both occurrences of the repeated hour"},
		{"@hourly", "Europe/Berlin", "2024-10-26T23:30:00Z",
			[]string{"2024-10-27T00:00:00Z", "2024-10-27T01:00:00Z", "2024-10-27T02:00:00Z"},
			"@hourly is a wildcard job (0 * * * *)"},
		{"@daily", "Europe/Berlin", "2024-10-26T12:00:00Z",
			[]string{"2024-10-26T22:00:00Z", "2024-10-27T23:00:00Z"},
			"@daily is a fixed time (midnight), outside the change"},
		{"0 2 * * *", "Europe/Berlin", "2024-10-27T00:00:00Z",
			[]string{"2024-10-28T01:00:00Z"},
			"02:00 of the repeated hour: the first (00:00Z) only"},
		// No change: UTC.
		{"0 2 * * *", "UTC", "2024-03-31T00:00:00Z",
			[]string{"2024-03-31T02:00:00Z", "2024-04-01T02:00:00Z"}, "UTC has no changes"},
		{"0 0 29 2 *", "UTC", "2024-03-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z"}, "29 February: the next leap year"},
		{"0 9 * * 1-5", "UTC", "2024-05-03T10:00:00Z",
			[]string{"2024-05-06T09:00:00Z", "2024-05-07T09:00:00Z"}, "weekdays"},
		{"0 0 1,15 * 5", "UTC", "2024-05-01T10:00:00Z",
			[]string{"2024-05-03T00:00:00Z", "2024-05-10T00:00:00Z", "2024-05-15T00:00:00Z"},
			"day of month and day of week both set: either matches, as in cron(5)"},
	} {
		s := mustParse(t, c.spec, c.tz)
		at := utc(c.after)
		var got []string
		for range c.want {
			at = s.Next(at)
			got = append(got, at.UTC().Format(time.RFC3339))
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s in %s, Next from %s = %v; want %v (%s)", c.spec, c.tz, c.after, got, c.want, c.why)
		}
		// Prev agrees with Next: each slot is the newest at or before
		// itself, and the one before it is the newest before it.
		for i, w := range c.want {
			if p := s.Prev(utc(w)); !p.Equal(utc(w)) {
				t.Errorf("%s in %s, Prev(%s) = %s; want itself", c.spec, c.tz, w, p.UTC().Format(time.RFC3339))
			}
			if i > 0 {
				if p := s.Prev(utc(w).Add(-time.Second)); !p.Equal(utc(c.want[i-1])) {
					t.Errorf("%s in %s, Prev(%s - 1s) = %s; want %s", c.spec, c.tz, w, p.UTC().Format(time.RFC3339), c.want[i-1])
				}
			}
		}
	}
}

// TestSlot: the slot at or before now, or one at most Tolerance after it.
func TestSlot(t *testing.T) {
	for _, c := range []struct {
		spec, tz, now, want string
	}{
		{"0 2 * * *", "UTC", "2024-05-01T02:00:00Z", "2024-05-01T02:00:00Z"},
		{"0 2 * * *", "UTC", "2024-05-01T02:00:59Z", "2024-05-01T02:00:00Z"},
		{"0 2 * * *", "UTC", "2024-05-01T23:59:59Z", "2024-05-01T02:00:00Z"},
		{"0 2 * * *", "UTC", "2024-05-01T01:59:50Z", "2024-05-01T02:00:00Z"}, // 10 s behind: Tolerance
		{"0 2 * * *", "UTC", "2024-05-01T01:59:49Z", "2024-04-30T02:00:00Z"}, // 11 s: the day before
		{"*/5 * * * *", "UTC", "2024-05-01T10:04:57Z", "2024-05-01T10:05:00Z"},
		{"*/5 * * * *", "UTC", "2024-05-01T10:04:30Z", "2024-05-01T10:00:00Z"},
		{"0 2 * * *", "Europe/Berlin", "2024-05-01T12:00:00Z", "2024-05-01T00:00:00Z"},
		{"30 2 * * *", "Europe/Berlin", "2024-10-27T01:45:00Z", "2024-10-27T00:30:00Z"}, // the first 02:30
		{"30 * * * *", "Europe/Berlin", "2024-10-27T01:45:00Z", "2024-10-27T01:30:00Z"}, // the second
		{"30 2 * * *", "Europe/Berlin", "2024-03-31T01:00:30Z", "2024-03-31T01:00:00Z"}, // right after the gap
		{"0 0 1 1 *", "UTC", "2024-05-01T00:00:00Z", "2024-01-01T00:00:00Z"},
	} {
		s := mustParse(t, c.spec, c.tz)
		if got := s.Slot(utc(c.now)); !got.Equal(utc(c.want)) {
			t.Errorf("%s in %s, Slot(%s) = %s; want %s", c.spec, c.tz, c.now, got.UTC().Format(time.RFC3339), c.want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct{ spec, tz, want string }{
		{"0 2 * * *", "UTC", "CRON_TZ=UTC 0 2 * * *"},
		{"  0  2 * *   *  ", "Europe/Berlin", "CRON_TZ=Europe/Berlin 0 2 * * *"},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", "", "CRON_TZ=Europe/Berlin 0 2 * * *"},
		{"TZ=America/New_York 30 2 * * 1-5", "", "CRON_TZ=America/New_York 30 2 * * 1-5"},
		{"CRON_TZ=UTC 0 2 * * *", "UTC", "CRON_TZ=UTC 0 2 * * *"},
		{"@daily", "UTC", "CRON_TZ=UTC @daily"},
		{"@annually", "Asia/Tokyo", "CRON_TZ=Asia/Tokyo @annually"},
		{"0 0 * JAN,jul SUN", "UTC", "CRON_TZ=UTC 0 0 * JAN,jul SUN"},
		{"@every 24h", "", "@every 24h0m0s"},
		{"@every 90m", "UTC", "@every 1h30m0s"},
	} {
		s, err := Parse(c.spec, c.tz)
		if err != nil || s.String() != c.want {
			t.Errorf("Parse(%q, %q) = %q, %v; want %q", c.spec, c.tz, s.String(), err, c.want)
			continue
		}
		// The recorded text reads back as the same schedule, anywhere.
		back, err := Parse(s.String(), "")
		if err != nil || back.String() != c.want {
			t.Errorf("Parse(%q) = %q, %v; want it back", s.String(), back.String(), err)
		}
		from := utc("2024-05-01T00:00:00Z")
		if !back.Next(from).Equal(s.Next(from)) {
			t.Errorf("Parse(%q).Next = %v; want %v", s.String(), back.Next(from), s.Next(from))
		}
	}
	if s := mustParse(t, "@every 24h", ""); s.Period() != 24*time.Hour || !s.Slot(time.Now()).IsZero() || !s.Next(utc("2024-05-01T00:00:00Z")).Equal(utc("2024-05-02T00:00:00Z")) {
		t.Errorf("@every 24h: Period %v, Slot %v; want 24h, no slot, Next 24h on", s.Period(), s.Slot(time.Now()))
	}
	if b := mustParse(t, "0 2 * * *", "Europe/Berlin"); b.Location().String() != "Europe/Berlin" || b.IsZero() || !(Schedule{}).IsZero() {
		t.Errorf("Parse(0 2 * * *, Europe/Berlin).Location() = %v, IsZero %v; want Europe/Berlin, false", b.Location(), b.IsZero())
	}
	// The local zone is recorded by a name another host can load.
	local := mustParse(t, "0 2 * * *", "")
	zone, _, _ := strings.Cut(strings.TrimPrefix(local.String(), "CRON_TZ="), " ")
	if _, err := time.LoadLocation(zone); err != nil || zone == "Local" {
		t.Errorf("Parse(0 2 * * *, local) = %q; want a zone name LoadLocation reads (%v)", local.String(), err)
	}
}

func TestParseBad(t *testing.T) {
	for _, c := range []struct{ spec, tz, want string }{
		{"", "", "empty"},
		{"0 2 * *", "", "want 5 fields"},
		{"0 0 2 * * *", "", "want 5 fields"}, // seconds: not ours
		{"61 * * * *", "", "above maximum"},
		{"* * * * mon-sun-x", "", "invalid schedule"},
		{"@reboot", "", "@reboot"},
		{"@fortnightly", "", "unknown descriptor"},
		{"@every 0s", "", "at least 1s"},
		{"@every often", "", "at least 1s"},
		{"0 0 30 2 *", "UTC", "no time that exists"},
		{"0 2 * * *", "Mars/Olympus_Mons", "unknown time zone"},
		{"0 2 * * *", "../../etc/passwd", "unknown time zone"},
		{"0 2 * * *", "Local", "unknown time zone"},
		{"CRON_TZ=Nowhere 0 2 * * *", "", "unknown time zone"},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", "UTC", "is not --tz UTC"},
	} {
		_, err := Parse(c.spec, c.tz)
		if !errors.Is(err, ErrBadSchedule) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q, %q) = %v; want one line, ErrBadSchedule, naming %q", c.spec, c.tz, err, c.want)
		}
	}
}

// TestNextCost: a tick asks Slot once; it must stay cheap for a
// per-minute expression in a zone with changes, even next to one.
func TestNextCost(t *testing.T) {
	s := mustParse(t, "* * * * *", "Europe/Berlin")
	for _, now := range []string{"2024-05-01T10:00:30Z", "2024-10-27T00:30:30Z"} {
		n := testing.AllocsPerRun(20, func() { s.Slot(utc(now)) })
		if n > 2000 {
			t.Errorf("Slot(%s) of * * * * * allocates %v times; want few", now, n)
		}
	}
}

// TestNextPrevAgree: across a year with both changes, in zones that have
// them, Next and Prev agree: the slot after t is its own newest, and the
// newest at or before t is followed by the first after t.
func TestNextPrevAgree(t *testing.T) {
	for _, c := range []struct{ spec, tz string }{
		{"30 2 * * *", "Europe/Berlin"},
		{"*/20 * * * *", "Europe/Berlin"},
		{"0 1-3 * * 0", "America/New_York"},
		{"@hourly", "Australia/Lord_Howe"}, // a change of 30 minutes
	} {
		s := mustParse(t, c.spec, c.tz)
		for at := utc("2024-01-01T00:00:00Z"); at.Before(utc("2025-01-01T00:00:00Z")); at = at.Add(197 * time.Minute) {
			n := s.Next(at)
			if !n.After(at) || !s.Prev(n).Equal(n) {
				t.Fatalf("%s in %s: Next(%s) = %s, Prev of it %s; want a slot after it that is its own newest", c.spec, c.tz, at, n, s.Prev(n))
			}
			if p := s.Prev(at); p.After(at) || !s.Next(p).Equal(n) {
				t.Fatalf("%s in %s: Prev(%s) = %s, Next of it %s; want %s", c.spec, c.tz, at, p, s.Next(p), n)
			}
		}
	}
}

// TestLocalName: the local zone's recorded name, from $TZ, the link
// /etc/localtime, or /etc/timezone; never "Local", which no host reads.
func TestLocalName(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "localtime-link")
	if err := os.Symlink("/usr/share/zoneinfo/Europe/Berlin", link); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "localtime-plain")
	os.WriteFile(plain, []byte("TZif"), 0o644)
	named := filepath.Join(dir, "timezone")
	os.WriteFile(named, []byte("America/New_York\n"), 0o644)
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name, tz            string
		unset               bool
		localtime, timezone string
		want                string
	}{
		{"TZ names a zone", "Asia/Tokyo", false, link, named, "Asia/Tokyo"},
		{"TZ with a colon", ":Asia/Tokyo", false, link, named, "Asia/Tokyo"},
		{"TZ empty", "", false, link, named, "UTC"},
		{"TZ names none", "garbage", false, link, named, "UTC"},
		{"a link", "", true, link, named, "Europe/Berlin"},
		{"a plain file and /etc/timezone", "", true, plain, named, "America/New_York"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.unset {
				t.Setenv("TZ", "x") // restored after the test
				os.Unsetenv("TZ")
			} else {
				t.Setenv("TZ", c.tz)
			}
			localtimePath, timezonePath = c.localtime, c.timezone
			defer func() { localtimePath, timezonePath = "/etc/localtime", "/etc/timezone" }()
			if got, err := localName(); got != c.want || err != nil {
				t.Errorf("localName() = %q, %v; want %q", got, err, c.want)
			}
		})
	}
	// Nothing names the zone: an error, unless it is UTC.
	t.Setenv("TZ", "x")
	os.Unsetenv("TZ")
	localtimePath, timezonePath = plain, missing
	defer func() { localtimePath, timezonePath = "/etc/localtime", "/etc/timezone" }()
	if got, err := localName(); time.Local.String() != "UTC" && err == nil || got == "Local" {
		t.Errorf("localName() with no name for the zone = %q, %v; want an error (or UTC)", got, err)
	}
}
