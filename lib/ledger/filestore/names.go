package filestore

import (
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// Names lists the job names (jobs/) and execution ids (the ids in the
// jobs' logs, or with activeOnly only those of active/, which may still
// be claimed or running) of the store at dir, for a shell's completion.
// It only reads: it takes no lock, creates nothing (a missing store is no
// names, not a new one) and skips what is not a valid name; the logs are
// read through OpenExisting, whose checks a store that fails has no ids
// but active/'s. What it returns is a hint for a human to pick from,
// never input to a decision.
func Names(dir string, activeOnly bool) (jobs, ids []string) {
	jobs = listNames(filepath.Join(dir, "jobs"), func(n string) (string, bool) {
		return n, ledger.ValidJob(n) == nil
	})
	keep := func(n string) (string, bool) { return n, ledger.ValidID(n) == nil }
	ids = listNames(filepath.Join(dir, "active"), keep)
	if activeOnly {
		return jobs, ids
	}
	if s, err := OpenExisting(dir); err == nil {
		ids = append(ids, s.loggedIDs(jobs)...)
		s.Close()
	}
	sort.Strings(ids)
	return jobs, slices.Compact(ids)
}

// loggedIDs returns the id of each execution claimed in the logs of jobs
// (what could be read of them).
func (s *Store) loggedIDs(jobs []string) []string {
	var ids []string
	for _, job := range jobs {
		jd, l, ok, err := s.openJob(job)
		if err != nil || !ok {
			continue
		}
		l.Scan(l.First, func(e joblog.Entry) error {
			if e.Kind == joblog.KindClaim && ledger.ValidID(string(e.ID)) == nil {
				ids = append(ids, string(e.ID))
			}
			return nil
		})
		l.Close()
		closeDir(jd)
	}
	return ids
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
