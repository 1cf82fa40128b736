package filestore

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore/jobindex"
	"github.com/tether-sh/tether/lib/ledger/filestore/joblog"
)

// ids checks j's index against its log.
func (v *verifier) ids(j *vjob) error {
	f, ok := readIds(j.jd)
	present := ok || exists(j.jd, jobindex.Name)
	if j.l == nil {
		if !present {
			return nil
		}
		return v.problem(j.job, "_ids indexes a log that is not there", "remove it", func() error {
			return unlinkIn(j.jd, jobindex.Name)
		})
	}
	var ents []jobindex.Ent
	for _, x := range j.kept() {
		if x.terminal {
			ents = append(ents, jobindex.EntOf(x.id, x.lastOff))
		}
	}
	slices.SortFunc(ents, jobindex.Cmp)
	what := ""
	switch {
	case !present:
		what = "no _ids (readers walk the whole log for a finished execution)"
	case !ok:
		what = "_ids is not an index"
	case !f.Of(j.l.Gen, j.l.Ino):
		what = fmt.Sprintf("_ids indexes another file (generation %d, inode %d) than the log in place (generation %d, inode %d: a copy or a restore of it?), so readers walk the log", f.Gen, f.Ino, j.l.Gen, j.l.Ino)
	case !f.Holds(ents):
		want := map[jobindex.Ent]bool{}
		for _, e := range ents {
			want[e] = true
		}
		past, wrong, have := 0, 0, map[jobindex.Ent]bool{}
		for _, e := range jobindex.Ents(f.Entries) {
			have[e] = true
			switch {
			case e.Off >= j.end:
				past++
			case !want[e]:
				wrong++
			}
		}
		missing := 0
		for _, e := range ents {
			if !have[e] {
				missing++
			}
		}
		var w []string
		if past > 0 {
			w = append(w, fmt.Sprintf("%d entries past the log's end (records lost from the log)", past))
		}
		if wrong > 0 {
			w = append(w, fmt.Sprintf("%d entries naming no execution's terminal frame", wrong))
		}
		if missing > 0 {
			w = append(w, fmt.Sprintf("%d finished executions missing", missing))
		}
		if len(w) == 0 {
			w = append(w, "entries out of order")
		}
		what = "_ids: " + strings.Join(w, ", ")
	default:
		return nil
	}
	return v.problem(j.job, what, "write it anew from the log", func() error {
		return writeIds(j.jd, idsOf(j.l, ents), true)
	})
}

// summary checks j's cached summary against its log.
func (v *verifier) summary(j *vjob) error {
	if j.l == nil {
		if !exists(j.jd, summaryName) {
			return nil
		}
		return v.problem(j.job, "_summary counts a log that is not there", "remove it", func() error {
			return unlinkIn(j.jd, summaryName)
		})
	}
	cache, gen, end, ok := readCache(j.jd, j.job)
	var all, upTo jobSummary
	all.add(j.l.removed())
	upTo.add(j.l.removed())
	for _, x := range j.kept() {
		if !x.terminal {
			continue
		}
		all.count(x.rec)
		if ok && x.lastOff < end {
			upTo.count(x.rec)
		}
	}
	what := ""
	switch {
	case !exists(j.jd, summaryName):
		if all.empty() {
			return nil // nothing finished yet: nothing to cache
		}
		what = "no _summary (every status, check and metrics recounts the log)"
	case !ok:
		what = "_summary cannot be trusted (damaged): every read recounts the log"
	case gen != j.l.Gen:
		what = fmt.Sprintf("_summary counts another generation (%d) of the log (%d)", gen, j.l.Gen)
	case end > j.end:
		what = fmt.Sprintf("_summary counted up to offset %d, past the log's end %d (records lost from the log)", end, j.end)
	case end < j.l.First:
		what = fmt.Sprintf("_summary counted up to offset %d, before the log's first frame", end)
	case !sameSummary(cache, upTo):
		what = fmt.Sprintf("_summary counts %s up to offset %d, the log %s", countText(cache), end, countText(upTo))
	default:
		return nil
	}
	return v.problem(j.job, what, "count it anew from the log", func() error {
		// Counted as every writer counts it, from the log alone.
		if err := unlinkIn(j.jd, summaryName); err != nil {
			return err
		}
		_, err := v.s.settle(j.jd, j.l, j.job)
		return err
	})
}

// sameSummary reports whether a and b count the same.
func sameSummary(a, b jobSummary) bool {
	for _, st := range ledger.Statuses {
		if a.runs[st] != b.runs[st] {
			return false
		}
	}
	return a.finished.ID == b.finished.ID && a.success.ID == b.success.ID
}

// countText is js's counts, for a message.
func countText(js jobSummary) string {
	var w []string
	for _, st := range ledger.Statuses {
		if n := js.runs[st]; n > 0 {
			w = append(w, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(w) == 0 {
		return "none"
	}
	return strings.Join(w, ", ")
}

// slots checks the names in j's folder: its slots against its log, and
// that none is stray.
func (v *verifier) slots(j *vjob) error {
	names, err := readNames(j.jd)
	if err != nil {
		return err
	}
	holders := map[string][]*vexec{} // by slot name, in claim order
	for _, x := range j.kept() {
		if !x.rec.Instant.IsZero() {
			k := instantKey(x.rec.Instant)
			holders[k] = append(holders[k], x)
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case n == joblog.Name || n == jobindex.Name || n == summaryName || strings.HasPrefix(n, tmpPrefix):
			continue
		case !strings.HasPrefix(n, "@"):
			if err := v.problem(j.job, "stray file jobs/"+j.job+"/"+n+" (not the store's)", "move it away by hand", nil); err != nil {
				return err
			}
			continue
		}
		seen[n] = true
		if err := v.slot(j, n, holders[n]); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(holders))
	for k := range holders {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		h := holders[k][len(holders[k])-1]
		if err := v.problem(j.job, fmt.Sprintf("slot %s is missing: execution %s holds that instant (it could run again)", k, h.id), "make it, naming "+h.id, func() error {
			return setSlot(j.jd, k, h.id)
		}); err != nil {
			return err
		}
	}
	return nil
}

// slot checks the slot name of j, which the executions holders hold in
// the log.
func (v *verifier) slot(j *vjob, name string, holders []*vexec) error {
	b, err := readSlot(j.jd, name)
	f := strings.Fields(string(b))
	if err == nil && (len(f) < 1 || len(f) > 2 || ledger.ValidID(f[0]) != nil) {
		err = errors.New("garbage")
	}
	var what string
	switch {
	case err != nil && !errors.Is(err, ledger.ErrCorrupt) && !strings.Contains(err.Error(), "garbage"):
		return err
	case err != nil:
		what = fmt.Sprintf("slot %s is not a slot (%s)", name, oneLine(err))
	case len(f) == 2:
		x := j.byID[f[0]]
		if x == nil && ledger.BlocksInstant(ledger.Status(f[1])) {
			return nil // a tombstone
		}
		if x == nil {
			what = fmt.Sprintf("slot %s is a tombstone of status %q, which does not keep an instant taken", name, f[1])
		} else {
			what = fmt.Sprintf("slot %s is a tombstone of %s, which the log holds", name, f[0])
		}
	default:
		for _, h := range holders {
			if h.id == f[0] {
				return nil
			}
		}
		if x := j.byID[f[0]]; x != nil && !x.foreign {
			what = fmt.Sprintf("slot %s names %s, an execution of another instant", name, f[0])
		} else {
			what = fmt.Sprintf("slot %s names %s, which the log does not hold (lost from the log, or a claim that died before its frame)", name, f[0])
		}
	}
	if len(holders) > 0 {
		h := holders[len(holders)-1]
		return v.problem(j.job, what, "point it at "+h.id+", the log's holder of that instant", func() error {
			return setSlot(j.jd, name, h.id)
		})
	}
	// No execution of the log holds the instant: whatever held it may
	// have run, so the instant stays taken.
	id := lostID
	if len(f) >= 1 && ledger.ValidID(f[0]) == nil && j.byID[f[0]] == nil {
		id = f[0]
	}
	tomb := id + " " + string(ledger.Unknown)
	return v.problem(j.job, what, fmt.Sprintf("make it a tombstone %q: the instant stays taken", tomb), func() error {
		return setSlot(j.jd, name, tomb)
	})
}

// setSlot makes slot name in jd hold target, durably.
func setSlot(jd dirh, name, target string) error {
	if err := relink(jd, name, target); err != nil {
		return err
	}
	return jd.Sync()
}

// exists reports whether name is in d.
func exists(d dirh, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(d.FD, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// unlinkIn removes name from d.
func unlinkIn(d dirh, name string) error {
	if err := unix.Unlinkat(d.FD, name, 0); err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "unlink", Path: d.Show(name), Err: err}
	}
	return nil
}

// oneLine is err's message on one line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
