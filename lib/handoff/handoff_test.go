package handoff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-sh/tether/internal/testutil"
	"github.com/tether-sh/tether/lib/proc"
)

// TestMain runs the tests with no signal ignored but those they ignore
// themselves (testutil.DefaultSignals).
func TestMain(m *testing.M) { testutil.Main(m) }

func TestAdoptArgv(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{
			name: "plain",
			spec: Spec{Adopt: "/bin/adopt", Ledger: "/s", ID: "0abc-def", AckFile: "/s/handoff/0abc-def.ack", Argv: []string{"backup.sh", "--full"}},
			want: []string{"/bin/adopt", "--ledger", "/s", "--ack-file", "/s/handoff/0abc-def.ack", "0abc-def", "--", "backup.sh", "--full"},
		},
		{
			// A payload that looks like flags, or contains "--", stays the
			// payload's: everything after the first "--" is CMD.
			name: "payload with dashes",
			spec: Spec{Adopt: "adopt", Ledger: "/s", ID: "x", AckFile: "/a", Argv: []string{"-v", "--", "--ledger", "/other"}},
			want: []string{"adopt", "--ledger", "/s", "--ack-file", "/a", "x", "--", "-v", "--", "--ledger", "/other"},
		},
		{
			name: "payload with spaces",
			spec: Spec{Adopt: "/a b/adopt", Ledger: "/l d", ID: "x", AckFile: "/a c", Argv: []string{"sh", "-c", "echo a b"}},
			want: []string{"/a b/adopt", "--ledger", "/l d", "--ack-file", "/a c", "x", "--", "sh", "-c", "echo a b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AdoptArgv(tt.spec); !slices.Equal(got, tt.want) {
				t.Errorf("AdoptArgv = %q\nwant       %q", got, tt.want)
			}
		})
	}
}

func TestScopeArgv(t *testing.T) {
	defer func(old string) { SystemdRun = old }(SystemdRun)
	tests := []struct {
		name       string
		systemdRun string
		id         string
		argv       []string
		want       []string
	}{
		{
			name:       "default program",
			systemdRun: "systemd-run",
			id:         "0dn7-abc",
			argv:       []string{"/bin/adopt", "--ledger", "/s", "0dn7-abc", "--", "true"},
			want: []string{"systemd-run", "--user", "--scope", "--collect", "--quiet",
				"--unit", "tether-0dn7-abc", "--description", "tether execution 0dn7-abc", "--",
				"/bin/adopt", "--ledger", "/s", "0dn7-abc", "--", "true"},
		},
		{
			name:       "replaced program",
			systemdRun: "/opt/fake/systemd-run",
			id:         "z",
			argv:       []string{"adopt"},
			want: []string{"/opt/fake/systemd-run", "--user", "--scope", "--collect", "--quiet",
				"--unit", "tether-z", "--description", "tether execution z", "--", "adopt"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SystemdRun = tt.systemdRun
			in := slices.Clone(tt.argv)
			if got := ScopeArgv(tt.id, in); !slices.Equal(got, tt.want) {
				t.Errorf("ScopeArgv = %q\nwant       %q", got, tt.want)
			}
			if !slices.Equal(in, tt.argv) {
				t.Errorf("ScopeArgv changed its argument: %q", in)
			}
		})
	}
}

// What auto builds when the probe succeeds: the adopt argv inside the scope.
func TestScopeAdoptArgv(t *testing.T) {
	s := Spec{Adopt: "/b/adopt", Ledger: "/s", ID: "i-1", AckFile: "/s/handoff/i-1.ack", Argv: []string{"job"}}
	got := ScopeArgv(s.ID, AdoptArgv(s))
	want := []string{SystemdRun, "--user", "--scope", "--collect", "--quiet",
		"--unit", "tether-i-1", "--description", "tether execution i-1", "--",
		"/b/adopt", "--ledger", "/s", "--ack-file", "/s/handoff/i-1.ack", "i-1", "--", "job"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProbe(t *testing.T) {
	defer func(old string) { SystemdRun = old }(SystemdRun)
	dir := t.TempDir()
	args := filepath.Join(dir, "args")

	SystemdRun = writeScript(t, dir, "ok", `echo "$@" > `+args+`; exit 0`)
	if err := Probe(context.Background()); err != nil {
		t.Fatalf("Probe with a working systemd-run: %v", err)
	}
	b, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), "--user --scope --collect --quiet -- true"; got != want {
		t.Errorf("probe ran systemd-run %q, want %q", got, want)
	}

	SystemdRun = writeScript(t, dir, "fail", `echo "Failed to connect to bus: No medium found" >&2; exit 1`)
	err = Probe(context.Background())
	if !errors.Is(err, ErrNoScope) {
		t.Fatalf("Probe with a failing systemd-run = %v, want ErrNoScope", err)
	}
	if !strings.Contains(err.Error(), "Failed to connect to bus") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Probe error %q should carry the first line of systemd-run's output", err)
	}

	SystemdRun = writeScript(t, dir, "silent", `exit 3`)
	if err := Probe(context.Background()); !errors.Is(err, ErrNoScope) || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Probe with a silent failure = %v, want ErrNoScope naming the exit status", err)
	}

	SystemdRun = filepath.Join(dir, "missing")
	if err := Probe(context.Background()); !errors.Is(err, ErrNoScope) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Probe without systemd-run = %v, want ErrNoScope ... not found", err)
	}

	// A wedged user manager costs at most the probe timeout; the caller's
	// context bounds it too.
	SystemdRun = writeScript(t, dir, "hang", `exec sleep 30`)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = Probe(ctx)
	if !errors.Is(err, ErrNoScope) {
		t.Errorf("Probe with a hanging systemd-run = %v, want ErrNoScope", err)
	}
	// Well under probeTimeout: the caller's 200 ms bounded it, not the
	// probe's own timeout.
	if d := time.Since(start); d >= probeTimeout {
		t.Errorf("Probe with a 200ms context took %v; want it bounded by the context, not by probeTimeout (%v)", d, probeTimeout)
	}
}

// Which probe failures mean no user manager to ask (ledger spawn --scope
// auto says nothing then) and which a manager that failed.
func TestProbeNoManager(t *testing.T) {
	defer func(old string) { SystemdRun = old }(SystemdRun)
	dir := t.TempDir()
	tests := []struct {
		name   string
		script string // "" : no systemd-run at all
		want   bool
	}{
		{"not installed", "", true},
		{"no bus", `echo "Failed to connect to bus: No medium found" >&2; exit 1`, true},
		{"no user scope bus", `echo "Failed to connect to user scope bus via local transport: \$DBUS_SESSION_BUS_ADDRESS and \$XDG_RUNTIME_DIR not defined" >&2; exit 1`, true},
		{"denied", `echo "Failed to start transient scope unit: Access denied" >&2; exit 1`, false},
		{"silent failure", `exit 3`, false},
	}
	for i, tt := range tests {
		SystemdRun = filepath.Join(dir, "missing")
		if tt.script != "" {
			SystemdRun = writeScript(t, dir, fmt.Sprint("s", i), tt.script)
		}
		err := Probe(context.Background())
		if !errors.Is(err, ErrNoScope) {
			t.Errorf("%s: Probe() = %v; want ErrNoScope", tt.name, err)
		}
		if got := errors.Is(err, ErrNoManager); got != tt.want {
			t.Errorf("%s: errors.Is(Probe() = %v, ErrNoManager) = %v; want %v", tt.name, err, got, tt.want)
		}
	}
}

// launch starts a "worker" script that stands in for adopt.
func launch(t *testing.T, body string) (*Worker, string) {
	t.Helper()
	dir := t.TempDir()
	ack := filepath.Join(dir, "x.ack")
	prog := writeScript(t, dir, "worker", body)
	w, err := Launch(Spec{Adopt: prog, Ledger: dir, ID: "id-1", AckFile: ack, Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(time.Second) })
	return w, ack
}

func TestWaitAckWorkerExited(t *testing.T) {
	w, _ := launch(t, `exit 125`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := w.WaitAck(ctx)
	if !errors.Is(err, ErrWorkerExited) {
		t.Fatalf("WaitAck = %v, want ErrWorkerExited", err)
	}
	if !strings.Contains(err.Error(), "worker exited before ownership acknowledgement") || !strings.Contains(err.Error(), "125") {
		t.Errorf("error %q should name the phrase and the exit status", err)
	}
	if w.ExitCode() != 125 {
		t.Errorf("ExitCode = %d, want 125", w.ExitCode())
	}
}

func TestWaitAckOK(t *testing.T) {
	// The worker acks (as adopt would), then keeps running.
	w, ack := launch(t, `printf '{"execution_id":"id-1","pid":%d,"start":7}\n' $$ > "$4.tmp" && mv "$4.tmp" "$4"; exec sleep 30`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := w.WaitAck(ctx)
	if err != nil {
		t.Fatalf("WaitAck: %v", err)
	}
	if a.ExecutionID != "id-1" || a.PID != w.PID() || a.Start != 7 {
		t.Errorf("ack = %+v, want id-1 by pid %d", a, w.PID())
	}
	if _, err := os.Stat(ack); err != nil {
		t.Errorf("ack file: %v", err)
	}
	w.Stop(time.Second)
	select {
	case <-w.Exited():
	default:
		t.Error("Stop returned before the worker exited")
	}
	if got := w.ExitCode(); got != 128+15 {
		t.Errorf("stopped worker's ExitCode = %d, want 143", got)
	}
}

func TestWaitAckAckThenExit(t *testing.T) {
	// A worker that acks and finishes at once: the ack still counts.
	w, _ := launch(t, `printf '{"execution_id":"id-1","pid":%d,"start":1}\n' $$ > "$4.tmp" && mv "$4.tmp" "$4"; exit 0`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	<-w.Exited()
	if _, err := w.WaitAck(ctx); err != nil {
		t.Fatalf("WaitAck: %v", err)
	}
}

func TestWaitAckOtherID(t *testing.T) {
	w, _ := launch(t, `printf '{"execution_id":"id-2","pid":%d,"start":1}\n' $$ > "$4.tmp" && mv "$4.tmp" "$4"; exec sleep 30`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := w.WaitAck(ctx)
	if err == nil || errors.Is(err, ErrWorkerExited) || !strings.Contains(err.Error(), `"id-2", not id-1`) {
		t.Fatalf("WaitAck = %v, want an error naming the other id", err)
	}
}

func TestWaitAckGarbage(t *testing.T) {
	w, _ := launch(t, `echo 'not json' > "$4.tmp" && mv "$4.tmp" "$4"; exec sleep 30`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := w.WaitAck(ctx); err == nil || errors.Is(err, ErrAckTimeout) {
		t.Fatalf("WaitAck = %v, want a parse error", err)
	}
}

func TestWaitAckTimeout(t *testing.T) {
	w, _ := launch(t, `exec sleep 30`)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := w.WaitAck(ctx)
	if !errors.Is(err, ErrAckTimeout) {
		t.Fatalf("WaitAck = %v, want ErrAckTimeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("WaitAck took %v after a 100ms timeout", d)
	}
	w.Stop(time.Second)
	if got := w.ExitCode(); got != 143 {
		t.Errorf("ExitCode after Stop = %d, want 143", got)
	}
}

func TestStopKillsWorkerIgnoringTERM(t *testing.T) {
	w, ack := launch(t, `trap '' TERM; touch "$4"; while :; do sleep 0.01; done`)
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(ack); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("worker never became ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	w.Stop(100 * time.Millisecond)
	if got := w.ExitCode(); got != 128+9 {
		t.Errorf("ExitCode = %d, want 137", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Stop took %v", d)
	}
	// Stopping an exited worker is a no-op: its PID may belong to someone else now.
	w.Stop(time.Second)
}

func TestLaunchDetached(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	log := filepath.Join(dir, "log")
	prog := writeScript(t, dir, "worker", `ps -o sid= -o pgid= -p $$ > `+out+`.tmp; mv `+out+`.tmp `+out+`; echo to-log; echo err-log >&2; exit 0`)
	w, err := Launch(Spec{Adopt: prog, Ledger: dir, ID: "x", AckFile: filepath.Join(dir, "a"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	<-w.Exited()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] != f[1] || f[0] != strconv.Itoa(w.PID()) {
		t.Errorf("worker sid/pgid = %q, want both %d (a new session)", f, w.PID())
	}
	lb, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if string(lb) != "to-log\nerr-log\n" {
		t.Errorf("log = %q", lb)
	}
	if fi, err := os.Stat(log); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode: %v %v", fi.Mode(), err)
	}
}

func TestLaunchErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Launch(Spec{Adopt: filepath.Join(dir, "missing"), AckFile: filepath.Join(dir, "a")}); err == nil {
		t.Error("Launch of a missing program succeeded")
	}
	prog := writeScript(t, dir, "w", "exit 0")
	if _, err := Launch(Spec{Adopt: prog, AckFile: filepath.Join(dir, "a"), Log: filepath.Join(dir, "no", "log")}); err == nil || !strings.Contains(err.Error(), "log file") {
		t.Errorf("Launch with a bad log = %v", err)
	}
}

func TestWriteReadAck(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "e.ack")
	self := proc.Self()
	if err := WriteAck(p, "0dn7-abc", self); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("ack mode %v, want 0600", fi.Mode().Perm())
	}
	a, err := ReadAck(p)
	if err != nil {
		t.Fatal(err)
	}
	if a.ExecutionID != "0dn7-abc" || a.ID() != self {
		t.Errorf("ReadAck = %+v, want 0dn7-abc by %v", a, self)
	}
	b, _ := os.ReadFile(p)
	for _, key := range []string{`"execution_id":"0dn7-abc"`, `"pid":`, `"start":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("ack %q lacks %s", b, key)
		}
	}
	// Overwriting is atomic and leaves no temporary file behind.
	if err := WriteAck(p, "0dn7-abd", self); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the ack", len(ents))
	}
	if err := WriteAck(filepath.Join(dir, "missing", "e.ack"), "x", self); err == nil {
		t.Error("WriteAck into a missing directory succeeded")
	}
	if _, err := ReadAck(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadAck of a missing file = %v, want ErrNotExist", err)
	}
	os.WriteFile(p, []byte(`{"execution_id":"x","pid":0,"start":1}`), 0o600)
	if _, err := ReadAck(p); err == nil {
		t.Error("ReadAck accepted pid 0")
	}
}

// TestLaunchLogRefusesLink: the worker's log is opened without following
// a link planted at its path (a spawn run as root would append to the
// link's target), and must be a regular file; nothing is started.
func TestLaunchLogRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "worker.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, log := range []string{link, dir} {
		w, err := Launch(Spec{Adopt: "/bin/true", ID: "x", Log: log})
		if err == nil {
			<-w.Exited()
			t.Errorf("Launch(Log: %s) started a worker; want an error", log)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "root's\n" {
		t.Errorf("the link's target holds %q; want it untouched", b)
	}
}
