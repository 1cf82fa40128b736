package execution

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tether-sh/tether/lib/exit"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore"
	"github.com/tether-sh/tether/lib/proc"
	"github.com/tether-sh/tether/lib/runner"
)

// started returns a store and a running execution of job owned by this process.
func started(t *testing.T) (*filestore.Store, string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Claim("job", ledger.ClaimOptions{Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Start(rec.ID, nil); err != nil {
		t.Fatal(err)
	}
	return st, rec.ID, dir
}

// tool returns a warn function that collects lines "test: msg" in a buffer.
func tool() (func(string, ...any), *bytes.Buffer) {
	var errb bytes.Buffer
	return func(format string, args ...any) {
		fmt.Fprintf(&errb, "test: "+format+"\n", args...)
	}, &errb
}

func TestRunRecordsResultAndEnv(t *testing.T) {
	st, id, _ := started(t)
	out := filepath.Join(t.TempDir(), "env")
	tl, errb := tool()
	code := Run(tl, st, id, Options{Argv: []string{"sh", "-c", `echo "$TETHER_EXECUTION" > ` + out + `; exit 7`}, Grace: time.Second}).Code
	if code != 7 {
		t.Fatalf("code %d, want 7 (stderr %q)", code, errb)
	}
	r, err := st.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != ledger.Failed || r.ExitCode == nil || *r.ExitCode != 7 || r.Child.PID == 0 {
		t.Errorf("record %+v, want failed with 7 and a child", r)
	}
	b, _ := os.ReadFile(out)
	if strings.TrimSpace(string(b)) != id {
		t.Errorf("TETHER_EXECUTION = %q, want %s", b, id)
	}
}

func TestRunHostileCommandNames(t *testing.T) {
	for _, name := range []string{strings.Repeat("é", 3000), "\xff\xfe-not-utf8"} {
		st, id, _ := started(t)
		tl, errb := tool()
		if code := Run(tl, st, id, Options{Argv: []string{name}}).Code; code != exit.NotFound {
			t.Errorf("code %d, want 127 (stderr %q)", code, errb)
		}
		if strings.Contains(errb.String(), "could not record") {
			t.Errorf("result not recorded: %s", errb)
		}
		r, err := st.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != ledger.Failed || r.ExitCode == nil || *r.ExitCode != 127 {
			t.Errorf("record %+v, want failed with 127", r)
		}
		if len(r.Error) > 4096 || !utf8.ValidString(r.Error) || !strings.Contains(r.Error, "command not found") && !strings.HasSuffix(r.Error, "...") {
			t.Errorf("error field %d bytes, valid UTF-8 %v: %.80q", len(r.Error), utf8.ValidString(r.Error), r.Error)
		}
	}
}

func TestRunStoreVanished(t *testing.T) {
	st, id, dir := started(t)
	tl, errb := tool()
	// The payload first waits until Run has recorded it as the child (in
	// its job's log): removing the store while that write re-points the
	// execution's link makes rm fail with "Directory not empty".
	payload := `while ! grep -aq '"child":{' "$0"/jobs/*/_log; do sleep 0.01; done; rm -rf "$0"`
	code := Run(tl, st, id, Options{Argv: []string{"sh", "-c", payload, dir, id}}).Code
	// The payload's 0 is not on record: 3, as for a lost write.
	if code != exit.System {
		t.Errorf("code %d, want %d (the result could not be recorded)", code, exit.System)
	}
	got := strings.TrimSpace(errb.String())
	if strings.Count(got, "\n") != 0 || !strings.Contains(got, "the ledger store "+dir+" is gone") {
		t.Errorf("stderr %q, want one line saying the store is gone", got)
	}
}

// TestEnded: the record a finished payload gets. Exit 0 is completed even
// when the runner was stopping it for a lost lease (the fleet under faults
// once saw such a slot recorded failed, then run again elsewhere).
func TestEnded(t *testing.T) {
	term := syscall.WaitStatus(syscall.SIGTERM) // killed by TERM
	tests := []struct {
		name   string
		res    runner.Result
		status ledger.Status
		msg    string // a part of the recorded message; "" wants none
		warned bool
	}{
		{"exit 0", runner.Result{}, ledger.Completed, "", false},
		{"exit 3", runner.Result{ExitCode: 3}, ledger.Failed, "exited with status 3", false},
		{"killed", runner.Result{Signaled: true, Status: term, ExitCode: 143}, ledger.Failed, "killed by signal TERM", false},
		{"deadline", runner.Result{DeadlineHit: true, ExitCode: 124}, ledger.Failed, "deadline 1s passed", false},
		{"lease lost, killed", runner.Result{Canceled: true, Signaled: true, Status: term, ExitCode: 143}, ledger.Failed, "lease could not be renewed", true},
		{"lease lost, exit 143", runner.Result{Canceled: true, ExitCode: 143}, ledger.Failed, "lease could not be renewed", true},
		{"lease lost, exit 0", runner.Result{Canceled: true}, ledger.Completed, "", true},
	}
	for _, tt := range tests {
		warn, errb := tool()
		notice := func(string, ...any) {}
		status, msg := ended(warn, notice, "id1", Options{Deadline: time.Second}, tt.res)
		if status != tt.status || (tt.msg == "") != (msg == "") || !strings.Contains(msg, tt.msg) {
			t.Errorf("%s: ended() = %s, %q; want %s, %q", tt.name, status, msg, tt.status, tt.msg)
		}
		if warned := errb.Len() > 0; warned != tt.warned {
			t.Errorf("%s: warned %q; want a warning: %v", tt.name, errb, tt.warned)
		}
	}
}
