package filestore

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/tether-sh/tether/lib/ledger"
)

// Names lists the job names (jobs/) and execution ids (exec/, or with
// activeOnly only those of active/, which may still be claimed or running)
// of the store at dir, for a shell's completion. It only reads: it takes
// no lock, creates nothing (a missing store is no names, not a new one),
// skips what is not a valid name, and checks nothing of the store's
// safety, so what it returns is a hint for a human to pick from, never
// input to a decision.
func Names(dir string, activeOnly bool) (jobs, ids []string) {
	jobs = listNames(filepath.Join(dir, "jobs"), func(n string) (string, bool) {
		return n, ledger.ValidJob(n) == nil
	})
	keep := func(n string) (string, bool) { return n, ledger.ValidID(n) == nil }
	// active/ID while an execution may still be claimed or running,
	// exec/ID once it is terminal.
	ids = listNames(filepath.Join(dir, "active"), keep)
	if !activeOnly {
		ids = append(ids, listNames(filepath.Join(dir, "exec"), keep)...)
		sort.Strings(ids)
	}
	return jobs, ids
}

// listNames returns the names in dir that keep accepts, as keep maps them,
// sorted and without repeats.
func listNames(dir string, keep func(string) (string, bool)) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range ents {
		if n, ok := keep(e.Name()); ok && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
