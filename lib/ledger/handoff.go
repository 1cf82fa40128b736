package ledger

import (
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrorText makes msg fit a record's error field: valid UTF-8 (invalid
// bytes become U+FFFD, as JSON would make them) and at most the field's
// limit in bytes, cut on a character boundary and marked with "...". A
// result message must never be refused for its length: the record would
// then stay running, and recovery would call a payload that never ran
// unknown.
func ErrorText(msg string) string {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if len(msg) <= maxErrorLen {
		return msg
	}
	const more = "..."
	cut := maxErrorLen - len(more)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + more
}

// AbortHandoff records that a handoff never reached its worker: claimed
// (fenced or not) → failed, with why as the error. It is the dispatcher's
// way out when the worker could not be started, exited before
// acknowledging, or did not acknowledge in time. Being a compare-and-swap,
// it races safely with the worker's adopt: exactly one of them wins, so
// either the payload runs under its adopter or it never runs at all.
func (s *Store) AbortHandoff(id, why string) (Record, error) {
	why = ErrorText(why)
	return s.update("abort", id, func(r *Record, now time.Time) error {
		if r.Status != Claimed {
			return refusedf("execution is already %s", r.State())
		}
		r.Status, r.FinishedAt, r.Error = Failed, now, why
		return nil
	})
}

// RecoverOne judges execution id alone, as Recover judges every execution
// but with no fence grace: its caller knows the adopter is gone. It returns
// the record, changed or not; where /proc is not this PID namespace's, an
// error wrapping proc.ErrForeignProc.
func (s *Store) RecoverOne(id string) (Record, error) {
	if err := ValidID(id); err != nil {
		return Record{}, err
	}
	if err := localIdentity().procErr; err != nil {
		return Record{}, err
	}
	unlock, err := s.lock()
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	r, err := s.readRecord(id)
	if err != nil {
		return Record{}, err
	}
	r, _, err = s.recoverOne(r, 0)
	if err != nil && !errors.Is(err, ErrRefused) {
		return Record{}, err
	}
	return r, nil
}
