package ledger

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// maxIDLen bounds ids; generated ones are 20 characters.
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
	idRandDigits = 6  // ~31 random bits to separate claims in the same nanosecond
	base36       = "0123456789abcdefghijklmnopqrstuvwxyz"
)

// NewID returns a fresh execution id for a claim made at t: 13 base-36
// digits of t's Unix nanoseconds, "-", 6 random base-36 digits. Ids of
// claims made at different nanoseconds sort like their claim times.
func NewID(t time.Time) string {
	var b [idTimeDigits + 1 + idRandDigits]byte
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
	return string(b[:])
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
