package filestore

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// links checks active/ against the logs: each link names a live
// execution's newest frame in its own job, and each live execution has
// one.
func (v *verifier) links() error {
	names, err := readNames(v.s.active)
	if err != nil {
		return err
	}
	// Where each execution of the jobs checked is.
	where := map[string]*vjob{}
	for _, j := range v.jobs {
		for _, x := range j.kept() {
			where[x.id] = j
		}
	}
	linked := map[string]bool{}
	buf := make([]byte, 256)
	changed := false
	for _, n := range names {
		if strings.HasPrefix(n, tmpPrefix) {
			continue
		}
		if ledger.ValidID(n) != nil {
			if v.o.Job == "" {
				if err := v.problem("", "stray file active/"+n+" (not a link's name)", "move it away by hand", nil); err != nil {
					return err
				}
			}
			continue
		}
		k, err := unix.Readlinkat(v.s.active.FD, n, buf)
		target := ""
		if err == nil {
			target = string(buf[:k])
		} else if err == unix.ENOENT {
			continue
		}
		gen, off, job, ok := parseHint(target)
		j := where[n]
		if v.o.Job != "" && job != v.o.Job && j == nil {
			continue // another job's
		}
		if j != nil {
			linked[n] = true
		}
		var what string
		switch {
		case !ok:
			what = fmt.Sprintf("active/%s: bad link %q", n, target)
		case v.jobs[job] == nil && j == nil && v.o.Job != "":
			continue // a job not checked
		case j == nil && v.jobs[job] != nil && v.jobs[job].unreadable:
			continue // its log cannot be read: said already
		case j == nil:
			if v.jobs[job] == nil {
				what = fmt.Sprintf("active/%s names job %s, which the store does not hold", n, job)
			} else {
				what = fmt.Sprintf("active/%s names an execution %s's log does not hold", n, job)
			}
		case j.job != job:
			what = fmt.Sprintf("active/%s names job %s, but the execution is %s's", n, job, j.job)
		case j.byID[n].terminal:
			what = fmt.Sprintf("active/%s links an execution that ended (%s)", n, j.byID[n].rec.Status)
		case gen != j.l.Gen || off != j.byID[n].lastOff:
			what = fmt.Sprintf("active/%s names %d:%d, not its newest frame %d:%d", n, gen, off, j.l.Gen, j.byID[n].lastOff)
		default:
			continue
		}
		show := job
		if j != nil {
			show = j.job
		}
		changed = true
		if j == nil || j.byID[n].terminal {
			why := "remove it"
			if j == nil {
				why = "remove it: no log holds its record"
			}
			err = v.problem(show, what, why, func() error { return unlinkIn(v.s.active, n) })
		} else {
			x := j.byID[n]
			err = v.problem(show, what, fmt.Sprintf("point it at %s", hintOf(j.l.Gen, x.lastOff, j.job)), func() error {
				return relink(v.s.active, n, hintOf(j.l.Gen, x.lastOff, j.job))
			})
		}
		if err != nil {
			return err
		}
	}
	relinked, err := v.unlinked(linked)
	if err != nil {
		return err
	}
	if (changed || relinked) && v.o.Repair {
		return v.s.active.Sync()
	}
	return nil
}

// unlinked names each live execution of the jobs checked that linked
// does not hold, and links it on repair; changed reports whether there
// was one.
func (v *verifier) unlinked(linked map[string]bool) (changed bool, err error) {
	jobs := make([]string, 0, len(v.jobs))
	for job := range v.jobs {
		jobs = append(jobs, job)
	}
	sort.Strings(jobs)
	for _, job := range jobs {
		j := v.jobs[job]
		for _, x := range j.kept() {
			if x.terminal || linked[x.id] {
				continue
			}
			changed = true
			if err := v.problem(job, fmt.Sprintf("live execution %s (%s) has no link in active/ (list --status running, recover and --exclusive miss it)", x.id, x.rec.Status), "link it", func() error {
				return relink(v.s.active, x.id, hintOf(j.l.Gen, x.lastOff, job))
			}); err != nil {
				return changed, err
			}
		}
	}
	return changed, nil
}

// outputs checks output/: each file is of an execution the store holds
// and starts with a sane header.
func (v *verifier) outputs() error {
	d, err := openSubdir(v.s.root, outputDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closeDir(d)
	names, err := readNames(d)
	if err != nil {
		return err
	}
	held := map[string]bool{}
	for _, j := range v.jobs {
		for _, x := range j.kept() {
			held[x.id] = true
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, tmpPrefix) {
			continue
		}
		var what string
		switch b, err := readSmallPrefix(d, n, maxHeaderLen); {
		case ledger.ValidID(n) != nil:
			what = "stray file output/" + n + " (not an execution's output)"
			if err := v.problem("", what, "move it away by hand", nil); err != nil {
				return err
			}
			continue
		case !held[n] && v.unreadable:
			continue // it may be of a log that cannot be read
		case !held[n]:
			what = "output/" + n + " is of an execution the store does not hold"
		case err != nil:
			what = "output/" + n + " cannot be read: " + oneLine(err)
		default:
			if _, _, ok := parseOutputHeader(b); ok {
				continue
			}
			what = "output/" + n + " has no sane header (it cannot be read)"
		}
		if err := v.problem("", what, "remove it", func() error { return unlinkIn(d, n) }); err != nil {
			return err
		}
	}
	return nil
}

// strays checks the names in the store's folder and jobs/.
func (v *verifier) strays() error {
	names, err := readNames(v.s.root)
	if err != nil {
		return err
	}
	for _, n := range names {
		switch {
		case n == lockName || n == linkedName || n == logsMark || n == oldExecDir || n == jobsDir || n == activeDir || n == handoffDir || n == outputDir:
		case strings.HasPrefix(n, tmpPrefix), strings.HasPrefix(n, "boot."):
		default:
			if err := v.problem("", "stray file "+n+" in the store's folder (not the store's)", "move it away by hand", nil); err != nil {
				return err
			}
		}
	}
	if names, err = readNames(v.s.jobs); err != nil {
		return err
	}
	for _, n := range names {
		if ledger.ValidJob(n) != nil && !strings.HasPrefix(n, tmpPrefix) {
			if err := v.problem("", "stray file jobs/"+n+" (not a job's name)", "move it away by hand", nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// rewrite writes j's log anew from what the scan found, each execution of
// its job once, as its newest version, and reads it again. Called with
// the lock held.
func (v *verifier) rewrite(j *vjob) error {
	kept := j.kept()
	refs := make([]execRef, len(kept))
	for i, x := range kept {
		refs[i] = execRef{x.claimOff, x.lastOff}
	}
	nl, _, _, err := writeNext(j.jd, j.l, j.job, refs, make([]fate, len(refs)), j.l.removed())
	if err != nil {
		return err
	}
	nl.Close()
	if err := j.jd.Sync(); err != nil {
		return err
	}
	j.l.Close()
	if j.l, err = rawLog(j.jd, j.job); err != nil {
		j.l = nil
		return err
	}
	return v.scan(j)
}

// readSmallPrefix reads at most n bytes from the start of name, a regular
// file of d's owner (openRegular's checks).
func readSmallPrefix(d dirh, name string, n int) ([]byte, error) {
	fd, st, err := openRegular(d, name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, min(int64(n), st.Size))
	m, err := durable.PreadAt(fd, buf, 0)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: d.Show(name), Err: err}
	}
	return buf[:m], nil
}
