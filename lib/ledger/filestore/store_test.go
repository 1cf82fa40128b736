//go:build linux

package filestore

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
	"github.com/tether-sh/tether/lib/proc"
)

// jobDirForTest opens job's directory in s, closed when t ends.
func (s *Store) jobDirForTest(t testing.TB, job string) dirh {
	t.Helper()
	jd, err := openSubdir(s.jobs, job)
	if err != nil {
		t.Fatalf("openSubdir(%s) = %v", job, err)
	}
	t.Cleanup(func() { unix.Close(jd.FD) })
	return jd
}

// snapshot returns every file under dir (relative path → content + mode).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fi.Mode().String() + " " + string(b)
		} else {
			out[rel] = fi.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStoreNotRedirected swaps the store's path for a symbolic link to
// another folder after Open: nothing the store does afterwards reads,
// writes or deletes that folder's files, though their names look like
// records.
func TestStoreNotRedirected(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "ledger")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := mustClaim(t, s, "j", ledger.ClaimOptions{})
	must(t)(s.Finish(done.ID, ledger.Failed, nil, ""))
	open := mustClaim(t, s, "j", ledger.ClaimOptions{})

	// The victim: a folder laid out like a store, with files named like ids.
	victim := filepath.Join(base, "victim")
	v, err := Open(victim)
	if err != nil {
		t.Fatal(err)
	}
	vr := mustClaim(t, v, "j", ledger.ClaimOptions{})
	must(t)(v.Finish(vr.ID, ledger.Failed, nil, ""))
	v.Close()
	for _, name := range []string{done.ID, open.ID, "0000000000000-000000"} {
		os.WriteFile(filepath.Join(victim, "active", name), []byte("precious\n"), 0o600)
	}
	before := snapshot(t, victim)

	if err := os.Rename(dir, filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, dir); err != nil {
		t.Fatal(err)
	}
	must(t)(s.Start(open.ID, nil))
	must(t)(s.Finish(open.ID, ledger.Completed, nil, ""))
	c := mustClaim(t, s, "j", ledger.ClaimOptions{Exclusive: true})
	if list, err := ledger.List(s, ledger.Filter{}); err != nil || len(list) != 3 {
		t.Errorf("List = %d records, %v; want the store's own 3", len(list), err)
	}
	must(t)(s.Finish(c.ID, ledger.Failed, nil, ""))
	if _, err := s.Recover(0); err != nil {
		t.Fatal(err)
	}
	if dropped, err := ledger.Pruned(s, ledger.PruneOptions{}); err != nil || len(dropped) != 3 {
		t.Errorf("Prune = %d records, %v; want the store's own 3", len(dropped), err)
	}
	after := snapshot(t, victim)
	if len(after) != len(before) {
		t.Errorf("the other folder has %d entries after; want its %d", len(after), len(before))
	}
	for k, b := range before {
		if after[k] != b {
			t.Errorf("%s in the other folder = %q after; want %q", k, after[k], b)
		}
	}
}

// TestParentChain checks the folders on the way to a store: one another
// user owns or may write to (without the sticky bit) is refused, naming
// it; a store directly in a sticky folder of root's, such as /tmp, and one
// reached through a symbolic link in a checked folder are fine.
func TestParentChain(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	if os.Geteuid() == 0 {
		nobody := filepath.Join(base, "nobody")
		os.Mkdir(nobody, 0o755)
		os.Chown(nobody, 65534, 65534)
		_, err := Open(filepath.Join(nobody, "ledger"))
		if !errors.Is(err, ledger.ErrUnsafeStore) || !strings.Contains(err.Error(), nobody+" (on the way to store") || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("Open(store in a folder of uid 65534) = %v; want ErrUnsafeStore naming the folder and its owner", err)
		}
		// Even sticky: its owner may rename what is in it.
		unix.Chmod(nobody, 0o1777)
		if _, err := Open(filepath.Join(nobody, "ledger")); !errors.Is(err, ledger.ErrUnsafeStore) {
			t.Errorf("Open(store in a sticky folder of uid 65534) = %v; want ErrUnsafeStore", err)
		}
		if _, err := os.Stat(filepath.Join(nobody, "ledger")); err == nil {
			t.Errorf("a refused store was created")
		}
	}
	group := filepath.Join(base, "group", "sub")
	os.MkdirAll(group, 0o700)
	os.Chmod(filepath.Dir(group), 0o770)
	if _, err := Open(filepath.Join(group, "ledger")); !errors.Is(err, ledger.ErrUnsafeStore) || !strings.Contains(err.Error(), "group") || !strings.Contains(err.Error(), "mode 0770") {
		t.Errorf("Open(store under a group-writable folder) = %v; want ErrUnsafeStore naming it", err)
	}
	sticky := filepath.Join(base, "tmp")
	os.Mkdir(sticky, 0o700)
	unix.Chmod(sticky, 0o1777)
	s, err := Open(filepath.Join(sticky, "x"))
	if err != nil {
		t.Fatalf("Open(store in a sticky folder of yours) = %v; want it accepted", err)
	}
	s.Close()
	os.Symlink(filepath.Join(sticky, "x"), filepath.Join(base, "link"))
	s, err = Open(filepath.Join(base, "link"))
	if err != nil {
		t.Fatalf("Open(through a symbolic link) = %v", err)
	}
	mustClaim(t, s, "j", ledger.ClaimOptions{})
	s.Close()
	if names, _ := os.ReadDir(filepath.Join(sticky, "x", "active")); len(names) != 1 {
		t.Errorf("the claim through the link left %d records in its target; want 1", len(names))
	}
}

// cycle claims, starts and finishes an execution of job.
func cycle(t *testing.T, s *Store, job string) ledger.Record {
	t.Helper()
	r := mustClaim(t, s, job, ledger.ClaimOptions{})
	must(t)(s.Start(r.ID, nil))
	code := 0
	return must(t)(s.Finish(r.ID, ledger.Completed, &code, ""))
}

// TestHardLinkSnapshot takes a `cp -al` snapshot of a live store: ordinary
// updates afterwards leave every file of the snapshot as it was, and a hard
// link planted at a temporary file's name leaves its target alone.
func TestHardLinkSnapshot(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("cp"); err != nil {
		t.Skip("no cp")
	}
	base := t.TempDir()
	s, err := Open(filepath.Join(base, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for i := 0; i < 3; i++ {
		r := mustClaim(t, s, "j", ledger.ClaimOptions{Instant: time.Unix(int64(1714557600+i), 0)})
		ids = append(ids, r.ID)
		must(t)(s.Start(r.ID, nil))
	}
	cycle(t, s, "k")
	snap := filepath.Join(base, "snap")
	if out, err := exec.Command("cp", "-al", s.Location(), snap).CombinedOutput(); err != nil {
		t.Fatalf("cp -al: %v %s", err, out)
	}
	before := snapshot(t, snap)
	for _, id := range ids {
		must(t)(s.SetChild(id, proc.Self()))
		must(t)(s.Finish(id, ledger.Completed, nil, ""))
	}
	for i := 0; i < 3; i++ {
		cycle(t, s, "j")
		cycle(t, s, "k")
	}
	after := snapshot(t, snap)
	for k, b := range before {
		if after[k] != b {
			t.Errorf("snapshot's %s = %q after updates; want %q", k, after[k], b)
		}
	}

	// Planted links at the spares and at an instant's temp file.
	outside := filepath.Join(base, "outside")
	os.WriteFile(outside, []byte("keep me\n"), 0o644)
	os.Chmod(outside, 0o644)
	for _, p := range []string{
		s.path(jobsDir, "j", tmpPrefix+joblog.Name), s.path(jobsDir, "j", tmpPrefix+summaryName),
		s.path(jobsDir, "j", tmpPrefix+instantKey(time.Unix(1714560000, 0))),
	} {
		os.Remove(p)
		if err := os.Link(outside, p); err != nil {
			t.Fatal(err)
		}
	}
	r := mustClaim(t, s, "j", ledger.ClaimOptions{Instant: time.Unix(1714560000, 0)})
	must(t)(s.Start(r.ID, nil))
	must(t)(s.Finish(r.ID, ledger.Completed, nil, ""))
	// A prune writes the log's next generation and the summary through
	// their temporary names.
	if n, err := s.Prune(ledger.PruneOptions{Job: "j", Keep: 1}, nil); err != nil || n == 0 {
		t.Fatalf("Prune(j, keep 1) = %d, %v; want some pruned", n, err)
	}
	fi, err := os.Stat(outside)
	if b, _ := os.ReadFile(outside); err != nil || string(b) != "keep me\n" || fi.Mode().Perm() != 0o644 {
		t.Errorf("outside file after updates: %q, %v; want %q 0644 untouched", b, fi.Mode(), "keep me\n")
	}
}

// TestOpenWhileAnotherMakesIt: the first use of a new store by several
// processes at once. One finds no lock; before it lists the folder,
// another makes the whole store and writes in it (its boot's note): the
// first must open that store, not call it a folder that is not a store.
func TestOpenWhileAnotherMakesIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	me, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		t.Fatal(err)
	}
	var other error
	done := false
	crashPoint = func(name string) {
		if name != "no lock" || done {
			return
		}
		done = true
		st, err := Open(dir)
		if err == nil {
			_, err = st.Claim("j", ledger.ClaimOptions{Owner: me})
			st.Close()
		}
		other = err
	}
	t.Cleanup(func() { crashPoint = nil })
	st, err := Open(dir)
	if other != nil {
		t.Fatalf("the other Open and Claim = %v", other)
	}
	if err != nil {
		t.Fatalf("Open(%s) while another made it = %v; want the store", dir, err)
	}
	defer st.Close()
	if _, err := st.Claim("j", ledger.ClaimOptions{Owner: me}); err != nil {
		t.Errorf("Claim = %v", err)
	}
}
