package filestore

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/ledger"
)

// A store written before job logs holds each record whole in exec/ID, a
// membership marker jobs/JOB/ID per execution, jobs/JOB/_latest, and
// active/ID.JOB markers; one written before summaries lacks the root file
// "summaries" and jobs/JOB/_summary. Open migrates it (migrateLogs), under
// the lock, then creates the root file "logs", which marks a store of job
// logs:
//
//  1. each job's log is written from its records (generation 1, each
//     record one claim frame of its newest version, in id order), its
//     header counting what the old summary counted of executions since
//     pruned, fdatasync'ed, renamed into place, the job's folder
//     fsync'ed; a job that has a log already was migrated by a run cut
//     short, and is kept;
//  2. every execution's link replaces its exec/ID file (renamed over it)
//     or is made in active/, and exec/ and active/ are fsync'ed;
//  3. the old markers and pointers are removed, "logs" is created and the
//     root fsync'ed.
//
// Its links in exec/ are those of the version before indexes: the first
// writer after it (mendLinks) indexes the finished executions and removes
// them, as it does in a store that version left.
//
// A migration cut short anywhere is redone from step 1 by the next Open:
// every step is safe to repeat. A record that cannot be read is left in
// exec/ as it was (read in place, reported as corrupt); a store that
// cannot be written (read-only, or read by another user) is not migrated,
// and only its records by id can be read (Get): the rest says to open it
// once as its owner.
const (
	logsMark      = "logs"
	summariesMark = "summaries"
	summaryMagic1 = "tether-summary 1"
	legacyLatest  = "_latest"
)

// needMigrated refuses what a store not migrated cannot answer.
func (s *Store) needMigrated() error {
	if s.unmigrated {
		return fmt.Errorf("%w: store %s is in the format of an older tether; a command that writes, run by its owner, upgrades it", ledger.ErrUnsafeStore, s.dir)
	}
	return nil
}

// migrateLogs migrates a store written before job logs. Called by Open.
func (s *Store) migrateLogs() error {
	var st unix.Stat_t
	if err := unix.Fstatat(s.root.FD, logsMark, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil
	}
	if os.Getuid() != os.Geteuid() || s.foreign {
		// Root reading another user's store as that user (ReadAsOwner),
		// or a reader in the owner's group (checkReader), writes nothing.
		s.unmigrated = true
		return nil
	}
	if err := s.migrate(); err != nil {
		if errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) && s.readOnly {
			s.unmigrated = true
			return nil
		}
		return fmt.Errorf("migrating %s to job logs: %w", s.dir, err)
	}
	return nil
}

func (s *Store) migrate() error {
	// lockFile, not lock: the links are mended once the store is of
	// job logs, by the next writer (linked.go).
	unlock, err := s.lockFile(nil)
	if err != nil {
		return err
	}
	defer unlock()
	var st unix.Stat_t
	if err := unix.Fstatat(s.root.FD, logsMark, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil
	}
	hadSummaries := unix.Fstatat(s.root.FD, summariesMark, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	marked := map[string]bool{} // ids with an old active marker
	if names, err := readNames(s.active); err == nil {
		for _, n := range names {
			if id, _, ok := strings.Cut(n, "."); ok && ledger.ValidID(id) == nil {
				marked[id] = true
			}
		}
	}
	jobs, err := s.jobNames()
	if err != nil {
		return err
	}
	for _, job := range jobs {
		if err := s.migrateJob(job, hadSummaries, marked); err != nil {
			return err
		}
		reached("migrate-job")
	}
	var live []string
	for _, job := range jobs {
		if live, err = s.linkJob(job, live); err != nil {
			return err
		}
	}
	if err := syncDirs(s.exec, s.active); err != nil {
		return err
	}
	reached("migrate-linked")
	for _, id := range live {
		// The old file of a live execution, now linked from active/.
		var st unix.Stat_t
		if unix.Fstatat(s.exec.FD, id, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			unix.Unlinkat(s.exec.FD, id, 0)
		}
	}
	if names, err := readNames(s.active); err == nil {
		for _, n := range names {
			if strings.Contains(n, ".") && !strings.HasPrefix(n, tmpPrefix) {
				unix.Unlinkat(s.active.FD, n, 0) // an old marker, ID.JOB
			}
		}
	}
	for _, job := range jobs {
		if jd, err := openSubdir(s.jobs, job); err == nil {
			names, _ := readNames(jd)
			for _, n := range names {
				if ledger.ValidID(n) == nil || n == legacyLatest || n == tmpPrefix+"spare" {
					unix.Unlinkat(jd.FD, n, 0)
				}
			}
			closeDir(jd)
		}
	}
	unix.Unlinkat(s.exec.FD, tmpPrefix+"spare", 0)
	if err := createEmpty(s.root, logsMark); err != nil {
		return err
	}
	return s.root.Sync()
}

// migrateJob writes job's log from its records, unless it has one.
func (s *Store) migrateJob(job string, hadSummaries bool, marked map[string]bool) error {
	jd, err := openSubdir(s.jobs, job)
	if err != nil {
		return err
	}
	defer closeDir(jd)
	var st unix.Stat_t
	if unix.Fstatat(jd.FD, logName, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return nil
	}
	names, err := readNames(jd)
	if err != nil {
		return err
	}
	var recs []ledger.Record
	for _, id := range names {
		if ledger.ValidID(id) != nil {
			continue
		}
		b, err := readSmall(s.exec, id, ledger.MaxRecordSize)
		if err != nil {
			continue // a claim that died before its record, or not a file
		}
		r, err := ledger.Decode(b, id)
		if err != nil || r.Job != job {
			continue // left in place: read as it is, reported as corrupt
		}
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	// What the old summary counted of executions since pruned.
	var total jobSummary
	old, counted, err := readSummaryV1(jd, job)
	if hadSummaries && err == nil {
		total = old
	}
	held := jobSummary{}
	for _, r := range recs {
		if !r.Status.Terminal() {
			continue
		}
		held.count(r)
		if !hadSummaries || err != nil || marked[r.ID] && !counted[r.ID] {
			total.count(r) // not counted by the old summary yet
		}
	}
	w, err := newLogWriter(jd, job, 1, total.less(held.runs))
	if err != nil {
		return err
	}
	for _, r := range recs {
		w.add(kindClaim, r.ID, 0, r.Encode())
	}
	l, err := w.commit()
	if err != nil {
		return err
	}
	defer l.close()
	if err := jd.Sync(); err != nil {
		return err
	}
	cacheSummary(jd, total, l.gen, l.end)
	return nil
}

// linkJob makes the link of every execution in job's log, and appends the
// ids of the live ones to live.
func (s *Store) linkJob(job string, live []string) ([]string, error) {
	jd, l, ok, err := s.openJob(job)
	if err != nil || !ok {
		return live, err
	}
	defer closeDir(jd)
	defer l.close()
	refs, err := l.refs(nil)
	if err != nil {
		return live, err
	}
	for _, ref := range refs {
		r, err := l.version(ref)
		if err != nil {
			return live, err
		}
		d := s.exec
		if !r.Status.Terminal() {
			d = s.active
			live = append(live, r.ID)
		}
		if err := setLink(d, r.ID, hintOf(l.gen, ref.lastOff, job)); err != nil {
			return live, err
		}
	}
	return live, nil
}

// readSummaryV1 reads a summary of the format before job logs: the
// counts, the records and the ids it lists as counted.
func readSummaryV1(jd dirh, job string) (jobSummary, map[string]bool, error) {
	b, err := readSmall(jd, summaryName, maxSummarySize)
	if err != nil {
		return jobSummary{}, nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 3 || lines[0] != summaryMagic1 || !strings.HasPrefix(lines[2], "counted") {
		return jobSummary{}, nil, fmt.Errorf("%w: not a job summary", ledger.ErrCorrupt)
	}
	counted := map[string]bool{}
	for _, id := range strings.Fields(lines[2])[1:] {
		counted[id] = true
	}
	js, err := decodeSummary([]byte(summaryMagic+"\n"+lines[1]+"\n"+strings.Join(lines[3:], "\n")), job)
	return js, counted, err
}
