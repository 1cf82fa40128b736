//go:build linux

package ledger

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/lib/proc"
)

// self is the test process as an owner: alive for the whole test.
func self(t testing.TB) Owner {
	t.Helper()
	o, err := LocalOwner(proc.Self())
	if err != nil {
		t.Fatalf("LocalOwner(self) = %v", err)
	}
	return o
}

// exitedOwner is a real process of this boot that has exited.
func exitedOwner(t testing.TB) Owner {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o, err := LocalOwner(proc.ID{PID: cmd.Process.Pid})
	cmd.Wait()
	if err != nil {
		// It exited before we looked: any PID of this boot with an
		// impossible start time is just as dead.
		o = self(t)
		o.Start++
	}
	return o
}

// TestLocalOwnerThread: a thread's id is no owner (bad input): /proc shows
// it, but its end is not its process's; the process's own id is one.
func TestLocalOwnerThread(t *testing.T) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	tid := 0
	for _, e := range tasks {
		if n, _ := strconv.Atoi(e.Name()); n != os.Getpid() {
			tid = n
			break
		}
	}
	if tid == 0 {
		t.Skip("the test process has one thread")
	}
	if o, err := LocalOwner(proc.ID{PID: tid}); !errors.Is(err, ErrBadInput) {
		t.Errorf("LocalOwner(thread %d) = %+v, %v; want ErrBadInput", tid, o, err)
	}
	if _, err := LocalOwner(proc.ID{PID: os.Getpid()}); err != nil {
		t.Errorf("LocalOwner(own pid) = %v; want an owner", err)
	}
}

func TestValidJob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		job string
		ok  bool
	}{
		{"backup", true}, {"a", true}, {"A.b_c:d@e-f", true}, {"...", true}, {strings.Repeat("x", 128), true},
		{"", false}, {".", false}, {"..", false}, {"a/b", false}, {"a b", false}, {strings.Repeat("x", 129), false},
		{"é", false}, {"a\x00", false}, {"$x", false},
	} {
		if err := ValidJob(tc.job); (err == nil) != tc.ok {
			t.Errorf("ValidJob(%q) = %v; want ok=%v", tc.job, err, tc.ok)
		}
	}
}

func TestNewID(t *testing.T) {
	t.Parallel()
	prev := ""
	base := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 1000; i++ {
		id := NewID(base.Add(time.Duration(i)*time.Microsecond), "job")
		if err := ValidID(id); err != nil {
			t.Fatalf("NewID = %q: %v", id, err)
		}
		if len(id) != 20 {
			t.Fatalf("NewID = %q; want 20 characters", id)
		}
		if id <= prev {
			t.Fatalf("NewID = %q after %q; want increasing", id, prev)
		}
		if !IDHints(id, "job") {
			t.Fatalf("IDHints(%q, job) = false; want true", id)
		}
		prev = id
	}
}

// TestIDHints pins the hint ids carry: ids already stored were made with
// it, and a store searches the jobs it names first.
func TestIDHints(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		id, job string
		want    bool
	}{
		{NewID(at, "backup"), "backup", true},
		{"0dncwltmfxriq-8okthb", "backup", true}, // FNV-1a("backup") % 1296 = 623 = "hb"
		{"0dncwltmfxriq-8okthb", "none", false},  // 1019 = "sb"
		{"0dncwltmfxriq-8oktsb", "none", true},
		{NewID(at, "a"), "b", false},
		{"0dncwltmfxriqx8okthb", "backup", false}, // no dash
		{"0dncwltmfxriq-8okhb", "backup", false},  // 19 characters
		{"my-own-id-hb", "backup", false},
	} {
		if got := IDHints(c.id, c.job); got != c.want {
			t.Errorf("IDHints(%q, %q) = %v; want %v", c.id, c.job, got, c.want)
		}
	}
}

func TestParseInstant(t *testing.T) {
	t.Parallel()
	want := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2024-05-01T10:00:00Z", want, true},
		{"2024-05-01T12:00:00+02:00", want, true},
		{"2024-05-01T05:00:00-05:00", want, true},
		{"1714557600", want, true},
		{" 1714557600 ", want, true},
		{"1714557600.0", want, true},
		{"1714557600.25", want.Add(250 * time.Millisecond), true},
		{"2024-05-01T10:00:00.25Z", want.Add(250 * time.Millisecond), true},
		{"0", time.Unix(0, 0).UTC(), true},
		{"", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"-1", time.Time{}, false},
		{"1e9", time.Time{}, false},
		{"1714557600.", time.Time{}, false},
		{"1714557600.1234567891", time.Time{}, false},
		{"99999999999999999999", time.Time{}, false},
		{"2024-05-01", time.Time{}, false},
		{"2024-05-01 10:00:00Z", time.Time{}, false},
		{"1960-01-01T00:00:00Z", time.Time{}, false},
		{"2024-13-01T10:00:00Z", time.Time{}, false},
	} {
		got, err := ParseInstant(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
			t.Errorf("ParseInstant(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadInput) {
			t.Errorf("ParseInstant(%q) error %v does not wrap ErrBadInput", tc.in, err)
		}
		if err == nil && got.Location() != time.UTC {
			t.Errorf("ParseInstant(%q) location = %v; want UTC", tc.in, got.Location())
		}
	}
}

func (l liveness) String() string { return [...]string{"uncertain", "alive", "dead"}[l] }

// TestJudgeProcess: a PID is judged only on its own boot and in its own PID
// namespace; the host name is only a label within a boot.
func TestJudgeProcess(t *testing.T) {
	t.Parallel()
	me := self(t)
	exited := exitedOwner(t)
	with := func(o Owner, f func(*Owner)) Owner { f(&o); return o }
	const otherBoot = "00000000-0000-0000-0000-0000000000b2"
	// A namespace number no process has: a namespace that is gone, as
	// only the initial namespace can tell.
	goneNS := me.PIDNS + 1
	goneNSWant := uncertain
	if _, err := proc.PIDNamespaceGone(goneNS); err == nil {
		goneNSWant = dead
	}
	tests := []struct {
		name  string
		owner Owner
		want  liveness
	}{
		{"alive here", me, alive},
		{"gone here", exited, dead},
		{"alive, host renamed", with(me, func(o *Owner) { o.Host = "old-name" }), alive},
		{"gone, host renamed", with(exited, func(o *Owner) { o.Host = "old-name" }), dead},
		{"gone, no host name", with(exited, func(o *Owner) { o.Host = "" }), dead},
		{"alive, no pidns (older record)", with(me, func(o *Owner) { o.PIDNS = 0 }), alive},
		{"gone, no pidns (older record)", with(exited, func(o *Owner) { o.PIDNS = 0 }), dead},
		{"alive PID of a gone namespace", with(me, func(o *Owner) { o.PIDNS = goneNS }), goneNSWant},
		{"gone PID of a gone namespace", with(exited, func(o *Owner) { o.PIDNS = goneNS }), goneNSWant},
		{"earlier boot of this host", with(me, func(o *Owner) { o.BootID = otherBoot }), dead},
		{"earlier boot, other namespace", with(me, func(o *Owner) { o.BootID, o.PIDNS = otherBoot, goneNS }), dead},
		{"another host", with(me, func(o *Owner) { o.Host, o.BootID = "elsewhere", otherBoot }), uncertain},
		{"another boot, no host name", with(me, func(o *Owner) { o.Host, o.BootID = "", otherBoot }), uncertain},
		{"boot unknown", with(exited, func(o *Owner) { o.BootID = "" }), uncertain},
	}
	for _, tt := range tests {
		if got, why := judgeProcess(tt.owner, tt.owner.ID()); got != tt.want {
			t.Errorf("%s: judgeProcess(%+v) = %v (%s); want %v", tt.name, tt.owner, got, why, tt.want)
		}
	}
}
