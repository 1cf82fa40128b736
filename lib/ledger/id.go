package ledger

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. Every error the package returns wraps one of these, or is
// a system error (I/O, permission) that wraps none.
var (
	// ErrRefused: the transition is not allowed from the current state.
	ErrRefused = errors.New("refused")
	// ErrNotFound: no execution has that id (or the job has none).
	ErrNotFound = errors.New("no such execution")
	// ErrBadID: the id is malformed (not 1-64 of [0-9a-z-]).
	ErrBadID = errors.New("malformed id")
	// ErrBadInput: a malformed job name, instant, status, field or option.
	ErrBadInput = errors.New("bad input")
	// ErrCorrupt: a record or index file cannot be parsed or is not a legal state.
	ErrCorrupt = errors.New("corrupt record")
	// ErrUnsafeStore: the store is writable by others, owned by someone
	// else, not a ledger store, or on a file system where flock is unreliable.
	ErrUnsafeStore = errors.New("unsafe store")
)

// kindError carries a sentinel for errors.Is without repeating its text:
// a refusal reads "execution is claimed, not fenced", not "refused: ...".
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// refusedf returns an ErrRefused whose message names the current state.
func refusedf(format string, args ...any) error {
	return &kindError{kind: ErrRefused, msg: fmt.Sprintf(format, args...)}
}

// badInputf returns an ErrBadInput.
func badInputf(format string, args ...any) error {
	return &kindError{kind: ErrBadInput, msg: fmt.Sprintf(format, args...)}
}

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

// Bounds of an instant: 1970-01-01 to 9999-12-31, so unix seconds are never
// negative and every instant has an RFC 3339 form.
var (
	minInstant = time.Unix(0, 0).UTC()
	maxInstant = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

func checkInstantRange(t time.Time) error {
	if t.Before(minInstant) || t.After(maxInstant) {
		return fmt.Errorf("%s is outside 1970-01-01..9999-12-31", FormatTime(t))
	}
	return nil
}

// ParseInstant parses a scheduled instant given as RFC 3339
// (2024-05-01T10:00:00Z, 2024-05-01T12:00:00+02:00, fractions allowed) or as
// unix seconds (1714557600, 1714557600.25), and returns it in UTC, so every
// spelling of one instant is equal. Errors wrap ErrBadInput.
func ParseInstant(s string) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, badInputf("invalid instant %q: want RFC 3339 (2024-05-01T10:00:00Z) or unix seconds", s)
	}
	t := strings.TrimSpace(s)
	if t == "" || len(t) > 64 {
		return bad()
	}
	var out time.Time
	if t[0] >= '0' && t[0] <= '9' && !strings.ContainsAny(t, "-:T") {
		secPart, fracPart, hasFrac := strings.Cut(t, ".")
		if !allDigits(secPart) || len(secPart) > 12 || (hasFrac && (fracPart == "" || len(fracPart) > 9 || !allDigits(fracPart))) {
			return bad()
		}
		sec, err := strconv.ParseInt(secPart, 10, 64)
		if err != nil {
			return bad()
		}
		var nsec int64
		if hasFrac {
			f := fracPart + strings.Repeat("0", 9-len(fracPart))
			nsec, _ = strconv.ParseInt(f, 10, 64)
		}
		out = time.Unix(sec, nsec).UTC()
	} else {
		p, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return bad()
		}
		out = p.UTC()
	}
	if err := checkInstantRange(out); err != nil {
		return time.Time{}, badInputf("invalid instant %q: %v", s, err)
	}
	return out, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// instantKey is the file-name form of an instant in a job's directory:
// fixed width, sortable, and free of ":" so it is portable.
func instantKey(t time.Time) string {
	return "@" + t.UTC().Format("20060102T150405.000000000Z")
}
