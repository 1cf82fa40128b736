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

// The store's indexes: active markers, job membership markers and the
// _latest pointer. They are hints, verified against the records they
// name (see "Crash safety" in doc.go).

// activeName is the active marker of an execution.
func activeName(id, job string) string { return id + "." + job }

// dropActive removes the active marker of a record that became terminal.
// No fsync: a marker resurrected by a crash names a terminal record and is
// dropped again by the next reader.
func (s *Store) dropActive(id, job string) {
	unix.Unlinkat(s.active.FD, activeName(id, job), 0)
}

// scanActive calls fn for every active marker (id, job), in id order.
// Called with the lock held.
func (s *Store) scanActive(fn func(id, job string) error) error {
	names, err := readNames(s.active)
	if err != nil {
		return err
	}
	for _, n := range names {
		id, job, ok := strings.Cut(n, ".")
		if !ok || ledger.ValidID(id) != nil || ledger.ValidJob(job) != nil {
			continue
		}
		if err := fn(id, job); err != nil {
			return err
		}
	}
	return nil
}

// readNames returns the names in d, sorted.
func readNames(d dirh) ([]string, error) {
	if readNamesHook != nil {
		readNamesHook(d.Path)
	}
	f, err := openListing(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", d.Path, err)
	}
	sort.Strings(names)
	return names, nil
}

// jobIDs returns the ids of job's membership markers, oldest first. A job
// that was never claimed has none.
func (s *Store) jobIDs(job string) ([]string, error) {
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(jd.FD)
	return jobIDsIn(jd)
}

// jobIDsIn is jobIDs for the job directory jd.
func jobIDsIn(jd dirh) ([]string, error) {
	names, err := readNames(jd)
	if err != nil {
		return nil, err
	}
	return validIDs(names), nil
}

// validIDs keeps the names that are execution ids, dropping index and
// temporary files; it reuses names' storage.
func validIDs(names []string) []string {
	ids := names[:0]
	for _, n := range names {
		if ledger.ValidID(n) == nil {
			ids = append(ids, n)
		}
	}
	return ids
}

// pointer reads job's _latest pointer: the newest claim and the one before
// it. ok is false when the pointer is missing or garbled; err is set only
// for a pointer file (or job directory) that is not safely ours.
func (s *Store) pointer(job string) (head, prev string, ok bool, err error) {
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	defer unix.Close(jd.FD)
	return pointerIn(jd)
}

// pointerIn is pointer for the job directory jd.
func pointerIn(jd dirh) (head, prev string, ok bool, err error) {
	b, err := readSmall(jd, latestName, 256)
	if errors.Is(err, ledger.ErrUnsafeStore) {
		return "", "", false, err
	}
	if err != nil {
		return "", "", false, nil
	}
	f := strings.Fields(string(b))
	if len(f) < 1 || len(f) > 2 || ledger.ValidID(f[0]) != nil {
		return "", "", false, nil
	}
	if len(f) == 2 {
		if ledger.ValidID(f[1]) != nil {
			return "", "", false, nil
		}
		prev = f[1]
	}
	return f[0], prev, true, nil
}

// latestIn returns the id of the newest stored execution of the job whose
// directory is jd, "" if it has none, checking existence only (the claim
// path).
func (s *Store) latestIn(jd dirh) (string, error) {
	exists := func(id string) bool { return s.stored(id) }
	head, prev, ok, err := pointerIn(jd)
	if err != nil {
		return "", err
	}
	if ok {
		if exists(head) {
			return head, nil
		}
		if prev == "" {
			return "", nil
		}
		if exists(prev) {
			return prev, nil
		}
	}
	ids, err := jobIDsIn(jd)
	if err != nil {
		return "", err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if exists(ids[i]) {
			return ids[i], nil
		}
	}
	return "", nil
}

// stored reports whether exec/ID exists.
func (s *Store) stored(id string) bool {
	var st unix.Stat_t
	return unix.Fstatat(s.exec.FD, id, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// missing reports whether exec/ID does not exist.
func (s *Store) missing(id string) bool {
	var st unix.Stat_t
	return unix.Fstatat(s.exec.FD, id, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT
}

// execIDs returns the ids of every stored record, oldest first.
func (s *Store) execIDs() ([]string, error) {
	names, err := readNames(s.exec)
	if err != nil {
		return nil, err
	}
	return validIDs(names), nil
}

// newestOf returns the id of job's newest stored execution ("" if none),
// through its _latest pointer. Called with the lock held.
func (s *Store) newestOf(job string) (string, error) {
	jd, err := openSubdir(s.jobs, job)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer unix.Close(jd.FD)
	return s.latestIn(jd)
}
