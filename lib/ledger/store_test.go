package ledger

import (
	"testing"

	"golang.org/x/sys/unix"
)

// jobDirForTest opens job's directory in s, closed when t ends.
func (s *Store) jobDirForTest(t testing.TB, job string) dirh {
	t.Helper()
	jd, err := openSubdir(s.jobs, job)
	if err != nil {
		t.Fatalf("openSubdir(%s) = %v", job, err)
	}
	t.Cleanup(func() { unix.Close(jd.fd) })
	return jd
}
