package filestore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
	"github.com/tether-sh/tether/lib/ledger"
)

// An execution's kept output: output/ID in the store, made by OpenOutput.
//
// The file is a header line "tether-output 1 LIMIT\n" and then the bytes
// written, appended as they come (one write(2) per Write, so a SIGKILL
// of the writer loses nothing already returned). When the body grows past
// twice LIMIT, its last LIMIT bytes are copied into output/.tmp.ID, which
// is renamed over output/ID: a reader (or a crash) sees the old file or
// the new one, each a valid header and a body whose last LIMIT bytes are
// the tail. Output returns those last LIMIT bytes. No fsync: the contract
// is surviving the writer's death, not a power cut.

const (
	outputDir    = "output"
	outputMagic  = "tether-output 1 "
	maxHeaderLen = 64
)

// outputHeader is the header line of an output file kept to limit bytes.
func outputHeader(limit int64) []byte {
	return []byte(outputMagic + strconv.FormatInt(limit, 10) + "\n")
}

// outputs opens output/ (creating it when create is set). One that does
// not exist is os.ErrNotExist.
func (s *Store) outputs(create bool) (dirh, error) {
	if create {
		if err := mkdirPrivate(s.root, outputDir); err != nil {
			return dirh{FD: -1}, err
		}
	}
	return openSubdir(s.root, outputDir)
}

// OpenOutput returns a writer that keeps the last limit bytes written as
// execution id's output.
func (s *Store) OpenOutput(id string, limit int64) (io.WriteCloser, error) {
	if err := ledger.ValidID(id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, ledger.BadInputf("output limit %d: want > 0", limit)
	}
	if in, err := s.stored(id); err != nil || !in {
		if err == nil {
			err = fmt.Errorf("%w %s", ledger.ErrNotFound, id)
		}
		return nil, err
	}
	d, err := s.outputs(true)
	if err != nil {
		return nil, err
	}
	w := &outputWriter{dir: d, id: id, limit: limit, fd: -1}
	if err := w.replace(nil); err != nil {
		unix.Close(d.FD)
		return nil, err
	}
	return w, nil
}

// outputWriter appends to output/ID, compacting it past 2×limit.
type outputWriter struct {
	dir   dirh
	id    string
	limit int64
	fd    int
	body  int64 // bytes of body in the current file
}

// replace makes output/ID a new file whose body is tail.
func (w *outputWriter) replace(tail []byte) error {
	tmp := tmpPrefix + w.id
	unix.Unlinkat(w.dir.FD, tmp, 0) // a leftover of a killed writer
	fd, err := durable.CreateExcl(w.dir, tmp)
	if err != nil {
		return err
	}
	if err := appendAll(fd, append(outputHeader(w.limit), tail...)); err != nil {
		unix.Close(fd)
		unix.Unlinkat(w.dir.FD, tmp, 0)
		return &os.PathError{Op: "write", Path: w.dir.Show(tmp), Err: err}
	}
	if err := unix.Renameat(w.dir.FD, tmp, w.dir.FD, w.id); err != nil {
		unix.Close(fd)
		unix.Unlinkat(w.dir.FD, tmp, 0)
		return &os.LinkError{Op: "rename", Old: w.dir.Show(tmp), New: w.dir.Show(w.id), Err: err}
	}
	if w.fd >= 0 {
		unix.Close(w.fd)
	}
	w.fd, w.body = fd, int64(len(tail))
	return nil
}

func (w *outputWriter) Write(p []byte) (int, error) {
	if w.fd < 0 {
		return 0, os.ErrClosed
	}
	if w.body+int64(len(p)) > 2*w.limit {
		return len(p), w.compact(p)
	}
	if err := appendAll(w.fd, p); err != nil {
		return 0, &os.PathError{Op: "write", Path: w.dir.Show(w.id), Err: err}
	}
	w.body += int64(len(p))
	return len(p), nil
}

// compact replaces the file with the last limit bytes of its body and p.
func (w *outputWriter) compact(p []byte) error {
	if int64(len(p)) >= w.limit {
		return w.replace(p[int64(len(p))-w.limit:])
	}
	keep := w.limit - int64(len(p))
	if keep > w.body {
		keep = w.body
	}
	tail := make([]byte, keep, keep+int64(len(p)))
	off := int64(len(outputHeader(w.limit))) + w.body - keep
	rfd, err := unix.Openat(w.dir.FD, w.id, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: w.dir.Show(w.id), Err: err}
	}
	defer unix.Close(rfd)
	if n, err := durable.PreadAt(rfd, tail, off); err != nil {
		return &os.PathError{Op: "read", Path: w.dir.Show(w.id), Err: err}
	} else if n < len(tail) {
		return fmt.Errorf("%w: %s shrank while written", ledger.ErrCorrupt, w.dir.Show(w.id))
	}
	return w.replace(append(tail, p...))
}

func (w *outputWriter) Close() error {
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
	if w.dir.FD >= 0 {
		unix.Close(w.dir.FD)
		w.dir.FD = -1
	}
	return nil
}

// Output returns what was kept of execution id's output.
func (s *Store) Output(id string) ([]byte, error) {
	if err := ledger.ValidID(id); err != nil {
		return nil, err
	}
	d, err := s.outputs(false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: execution %s has no output kept", ledger.ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(d.FD)
	// Bounded by the header's limit: read the header first.
	head, err := readSmallPrefix(d, id, maxHeaderLen)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: execution %s has no output kept", ledger.ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	limit, hlen, ok := parseOutputHeader(head)
	if !ok {
		return nil, fmt.Errorf("%w: %s has no output header", ledger.ErrCorrupt, d.Show(id))
	}
	b, err := readSmall(d, id, int(hlen+2*limit+maxHeaderLen))
	if err != nil {
		return nil, err
	}
	l2, h2, ok := parseOutputHeader(b)
	if !ok || l2 != limit {
		return nil, fmt.Errorf("%w: %s changed its header", ledger.ErrCorrupt, d.Show(id))
	}
	body := b[h2:]
	if int64(len(body)) > limit {
		body = body[int64(len(body))-limit:]
	}
	return body, nil
}

// parseOutputHeader returns the limit an output file's header names and
// the header's length.
func parseOutputHeader(b []byte) (limit, n int64, ok bool) {
	line, _, found := strings.Cut(string(b[:min(len(b), maxHeaderLen)]), "\n")
	if !found || !strings.HasPrefix(line, outputMagic) {
		return 0, 0, false
	}
	limit, err := strconv.ParseInt(strings.TrimPrefix(line, outputMagic), 10, 64)
	if err != nil || limit <= 0 || limit > 1<<40 {
		return 0, 0, false
	}
	return limit, int64(len(line) + 1), true
}

// readSmallPrefix reads up to n bytes at the start of the regular file
// name in d (no symlink followed, no FIFO blocked on).
func readSmallPrefix(d dirh, name string, n int) ([]byte, error) {
	path := d.Show(name)
	fd, err := unix.Openat(d.FD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("%w: %s is a symbolic link", ledger.ErrCorrupt, path)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s is not a regular file", ledger.ErrCorrupt, path)
	}
	if err := checkOwnedIn(d, path, &st); err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	m, err := unix.Pread(fd, buf, 0)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return buf[:m], nil
}

// pruneOutputs deletes the output of each dropped execution and, with
// sweep, the leftovers of killed writers. Called with the lock held.
func (s *Store) pruneOutputs(dropped []string, sweep bool) {
	d, err := s.outputs(false)
	if err != nil {
		return
	}
	defer unix.Close(d.FD)
	for _, id := range dropped {
		unix.Unlinkat(d.FD, id, 0)
		unix.Unlinkat(d.FD, tmpPrefix+id, 0)
	}
	if !sweep {
		return
	}
	names, err := readNames(d)
	if err != nil {
		return
	}
	for _, n := range names {
		id, tmp := strings.CutPrefix(n, tmpPrefix)
		if ledger.ValidID(id) != nil {
			continue
		}
		// A writer compacting the output of a live execution owns its
		// .tmp file; only a finished or pruned execution's is a leftover.
		if r, err := s.readRecord(id); errors.Is(err, ledger.ErrNotFound) || err == nil && (tmp && r.Status.Terminal()) {
			unix.Unlinkat(d.FD, n, 0)
		}
	}
}

// appendAll writes all of p at fd's offset.
func appendAll(fd int, p []byte) error {
	for len(p) > 0 {
		n, err := unix.Write(fd, p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}
