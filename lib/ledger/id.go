package ledger

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// maxIDLen bounds ids; NewID's are 20 characters (idLen).
const maxIDLen = 64

// ValidID reports whether id is 1-64 of [0-9a-z-] (ErrBadID if not). Every
// id that passes is a plain file name: no "/", no ".", no "..".
func ValidID(id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("%w %q", ErrBadID, id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-') {
			return fmt.Errorf("%w %q", ErrBadID, id)
		}
	}
	return nil
}

// maxJobLen is the longest job name.
const maxJobLen = 128

// ValidJob reports whether job is 1-128 of [A-Za-z0-9._:@-] and not "." or
// ".." (ErrBadInput if not), which makes it a safe directory name.
func ValidJob(job string) error {
	if job == "" || len(job) > maxJobLen || job == "." || job == ".." {
		return badInputf("invalid job name %q: want 1-%d of [A-Za-z0-9._:@-], not . or ..", job, maxJobLen)
	}
	for i := 0; i < len(job); i++ {
		c := job[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("._:@-", c) >= 0) {
			return badInputf("invalid job name %q: want 1-%d of [A-Za-z0-9._:@-], not . or ..", job, maxJobLen)
		}
	}
	return nil
}

const (
	idTimeDigits = 13 // base-36 digits of Unix nanoseconds: enough until year ~7400
	idRandDigits = 4  // ~20.7 random bits; with the job's hint, ~31 between jobs
	idHintDigits = 2  // jobHint's
	idLen        = idTimeDigits + 1 + idRandDigits + idHintDigits
	base36       = "0123456789abcdefghijklmnopqrstuvwxyz"
)

// NewID returns a fresh execution id for a claim of job made at t: 13
// base-36 digits of t's Unix nanoseconds, "-", 4 random base-36 digits
// and job's 2 hint digits (IDHints), 20 characters in all. Ids of claims
// made at different nanoseconds sort like their claim times. Two ids of
// one job are the same only when made in the same nanosecond with the
// same ~20.7 random bits; of two jobs, only if their hints are the same
// too (1 in 1,296).
func NewID(t time.Time, job string) string {
	var b [idLen]byte
	n := uint64(t.UnixNano())
	if t.UnixNano() < 0 {
		n = 0
	}
	for i := idTimeDigits - 1; i >= 0; i-- {
		b[i] = base36[n%36]
		n /= 36
	}
	b[idTimeDigits] = '-'
	var r [idRandDigits]byte
	if !randomBytes(r[:]) {
		// Only on kernels older than 3.17; the time part still orders ids.
		t := uint64(time.Now().UnixNano()) ^ uint64(os.Getpid())<<20
		for i := range r {
			r[i], t = byte(t), t>>8
		}
	}
	for i, v := range r {
		b[idTimeDigits+1+i] = base36[int(v)%36]
	}
	h := jobHint(job)
	b[idLen-2], b[idLen-1] = base36[h/36], base36[h%36]
	return string(b[:])
}

// IDHints reports whether id ends with job's hint, as every id NewID made
// for job does: a store that must search its jobs for an id (the file
// store, for a finished one) searches those first, and for an id NewID
// made finds it in the first or so. Many jobs share a hint (there are
// 1,296), and an id not made by NewID (chosen by a caller, or by a
// version before the hints) may end with any: one that is not among the
// jobs it hints is searched for among the others.
func IDHints(id, job string) bool {
	if len(id) != idLen || id[idTimeDigits] != '-' {
		return false
	}
	h := jobHint(job)
	return id[idLen-2] == base36[h/36] && id[idLen-1] == base36[h%36]
}

// jobHint is the FNV-1a hash of job, modulo 36². It is part of the ids
// already made: never change it.
func jobHint(job string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(job); i++ {
		h = (h ^ uint32(job[i])) * 16777619
	}
	return h % (36 * 36)
}

// ValidNoteName accepts a boot note's name, 1-32 of [a-z0-9-] (the name is
// part of a file name), or is ErrBadInput; every store asks it, so that a
// name one store takes every store takes.
func ValidNoteName(name string) error {
	if name == "" || len(name) > 32 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return badInputf("invalid boot note name %q", name)
	}
	return nil
}
