package stop

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/proc"
)

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		in   string
		want Schedule
		err  bool
	}{
		{"TERM/5/KILL/5", Schedule{{unix.SIGTERM, 5 * time.Second}, {unix.SIGKILL, 5 * time.Second}}, false},
		{"INT/250ms", Schedule{{unix.SIGINT, 250 * time.Millisecond}}, false},
		{"15/0.5/9/1", Schedule{{unix.SIGTERM, 500 * time.Millisecond}, {unix.SIGKILL, time.Second}}, false},
		{"3", Schedule{{unix.SIGTERM, 3 * time.Second}, {unix.SIGKILL, 3 * time.Second}}, false},
		// 0 sends nothing: the step only waits (timeout -s0).
		{"0/1/KILL/5", Schedule{{0, time.Second}, {unix.SIGKILL, 5 * time.Second}}, false},
		{"SIG0/1", nil, true},
		{"TERM/5/KILL", nil, true},
		{"TERM", nil, true},
		{"FOO/5", nil, true},
		{"TERM/-1", nil, true},
		{"", nil, true},
		{"/", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseSchedule(tt.in)
		if (err != nil) != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSchedule(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestDefault(t *testing.T) {
	want := Schedule{{unix.SIGINT, time.Second}, {unix.SIGKILL, DefaultKillWait}}
	if got := Default(unix.SIGINT, time.Second); !reflect.DeepEqual(got, want) {
		t.Errorf("Default(INT, 1s) = %v; want %v", got, want)
	}
	if got := Default(unix.SIGKILL, time.Second); len(got) != 1 {
		t.Errorf("Default(KILL, 1s) = %v; want one KILL step", got)
	}
}

func TestOutcomeKilled(t *testing.T) {
	tests := []struct {
		o      Outcome
		killed bool
		last   unix.Signal
	}{
		{Outcome{Gone: true, Sent: []unix.Signal{unix.SIGTERM}}, false, 0},
		{Outcome{Gone: true, Sent: []unix.Signal{unix.SIGTERM, unix.SIGKILL}}, true, unix.SIGTERM},
		{Outcome{Gone: true, Sent: []unix.Signal{unix.SIGTERM, unix.SIGHUP, unix.SIGKILL}}, true, unix.SIGHUP},
		{Outcome{Gone: false, Sent: []unix.Signal{unix.SIGTERM, unix.SIGKILL}}, false, 0},
		{Outcome{Gone: true, Sent: []unix.Signal{unix.SIGKILL}}, false, 0},
	}
	for _, tt := range tests {
		k, l := tt.o.Killed()
		if k != tt.killed || l != tt.last {
			t.Errorf("Outcome{%v}.Killed() = %v, %v; want %v, %v", tt.o.Sent, k, l, tt.killed, tt.last)
		}
	}
}

func TestRunReturnsWhenGone(t *testing.T) {
	c, _ := testutil.StartGroup(t, "echo ready; exec sleep 60")
	p, err := NewProcess(proc.ID{PID: c.Process.Pid}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	out := Run(context.Background(), []Target{p}, Schedule{{unix.SIGTERM, time.Minute}})
	if !out[0].Gone || out[0].Step != 0 {
		t.Fatalf("Run(obeys TERM) = %+v; want gone at step 0", out[0])
	}
	// The schedule's minute is a bound, not a wait.
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("Run took %v; want it to return when the target is gone", el)
	}
	if got := p.Label(); got != "pid "+strconv.Itoa(c.Process.Pid) {
		t.Errorf("Label() = %q", got)
	}
}

func TestRunEscalates(t *testing.T) {
	// The group's leader ignores TERM; it says so once the trap is set, so
	// the stop below cannot race the trap.
	c, _ := testutil.StartGroup(t, "trap '' TERM; echo ready; while :; do sleep 1; done")
	g := &Group{PGID: c.Process.Pid}
	o := Run(context.Background(), []Target{g}, Schedule{{unix.SIGTERM, 100 * time.Millisecond}, {unix.SIGKILL, 10 * time.Second}})[0]
	if !o.Gone || o.Step != 1 {
		t.Fatalf("Run(TERM-ignoring group) = %+v; want gone at step 1 (KILL)", o)
	}
	if killed, last := o.Killed(); !killed || last != unix.SIGTERM {
		t.Errorf("Killed() = %v, %v; want true, TERM", killed, last)
	}
}

func TestRunSurvivor(t *testing.T) {
	c, _ := testutil.StartGroup(t, "echo ready; exec sleep 60")
	p, _ := NewProcess(proc.ID{PID: c.Process.Pid}, "x")
	defer p.Close()
	// WINCH is ignored by default: the target survives a schedule without KILL.
	out := Run(context.Background(), []Target{p}, Schedule{{unix.SIGWINCH, 20 * time.Millisecond}})
	if out[0].Gone {
		t.Fatalf("Run(WINCH only) = %+v; want a survivor", out[0])
	}
	if !reflect.DeepEqual(out[0].Sent, []unix.Signal{unix.SIGWINCH}) {
		t.Errorf("Sent = %v; want [WINCH]", out[0].Sent)
	}
}

func TestRunAlreadyGone(t *testing.T) {
	p, err := NewProcess(proc.ID{PID: proc.MaxPID}, "")
	if err != nil {
		t.Fatal(err)
	}
	out := Run(context.Background(), []Target{p}, Default(unix.SIGTERM, time.Second))
	if !out[0].Gone || out[0].Step != -1 || len(out[0].Sent) != 0 {
		t.Errorf("Run(gone) = %+v; want gone before any signal", out[0])
	}
}

// TestGroupWaitError: an error of the wait for the group's members is
// Wait's, not dropped for another rescan until ctx ends.
func TestGroupWaitError(t *testing.T) {
	c, _ := testutil.StartGroup(t, "echo ready; exec sleep 60")
	failed := errors.New("wait failed")
	defer func(w func(context.Context, []*proc.Handle, bool) error) { waitAll = w }(waitAll)
	waitAll = func(context.Context, []*proc.Handle, bool) error { return failed }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := (&Group{PGID: c.Process.Pid}).Wait(ctx); !errors.Is(err, failed) {
		t.Errorf("Group.Wait with a failing wait = %v; want %v", err, failed)
	}
}
