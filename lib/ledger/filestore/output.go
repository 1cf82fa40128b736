package filestore

import (
	"bytes"
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
// of the writer loses nothing already returned); a Write of LIMIT bytes
// or more, the whole tail, replaces the file as below instead, so that
// one cut short cannot splice its start to the old tail. When the body grows past
// twice LIMIT, its last LIMIT bytes are copied into output/.tmp.ID, which
// is renamed over output/ID: a reader (or a crash) sees the old file or
// the new one, each a valid header and a body whose last LIMIT bytes are
// the tail. Output returns those last LIMIT bytes. No fsync: the contract
// is surviving the writer's death, not a power cut. A power cut may bring
// the file back empty or cut short (renamed into place before its data
// reached the disk): Output says that output was lost in a crash
// (ledger.ErrOutputLost), not that the store is corrupt. Making it
// durable would cost two more fdatasyncs per run with output (at its
// creation and its close: 4 instead of 2, some 1.7 ms each on the test
// machine's disk), for output the record does not depend on.

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
	if int64(len(p)) >= w.limit {
		// p is the whole tail, and may follow a gap (a runner's queue
		// keeps only the last limit bytes of a flood it could not store
		// as fast): replaced, never appended, so that a write cut short
		// (the writer killed, a full disk) leaves the old tail or this
		// one, not the old tail's end spliced to the start of p.
		return len(p), w.replace(p[int64(len(p))-w.limit:])
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

// Output opens what was kept of execution id's output: a reader of one
// descriptor, from past its header to the file's end, of at most the
// limit the header names, that holds nothing in memory but its caller's
// buffer: the file is the owner's, and root may be the reader.
func (s *Store) Output(id string) (io.ReadCloser, error) {
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
	fd, st, err := openRegular(d, id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: execution %s has no output kept", ledger.ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			unix.Close(fd)
		}
	}()
	path := d.Show(id)
	head := make([]byte, min(st.Size, maxHeaderLen))
	m, err := durable.PreadAt(fd, head, 0)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	head = head[:m]
	limit, hlen, ok := parseOutputHeader(head)
	if !ok && lostInCrash(head, st.Size) {
		return nil, ledger.OutputLostf("execution %s has no output kept: it was lost in a crash (%s was not yet on disk, and came back %s)", id, path, lostHow(st.Size))
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s has no output header", ledger.ErrCorrupt, path)
	}
	n := min(max(st.Size-hlen, 0), limit)
	f := os.NewFile(uintptr(fd), path)
	keep = true
	return outputReader{io.NewSectionReader(f, st.Size-n, n), f}, nil
}

// outputReader reads a section of an output file and closes the file.
type outputReader struct {
	*io.SectionReader
	io.Closer
}

// lostInCrash reports whether an output file that starts with head (of
// size bytes in all) and has no header is what a crash leaves of one
// renamed into place before its data reached the disk: empty, zeros, or
// a header cut short with nothing after it. Anything else is damage.
func lostInCrash(head []byte, size int64) bool {
	if len(bytes.Trim(head, "\x00")) == 0 {
		return true
	}
	if int64(len(head)) != size || bytes.IndexByte(head, '\n') >= 0 {
		return false
	}
	if len(head) <= len(outputMagic) {
		return strings.HasPrefix(outputMagic, string(head))
	}
	rest, ok := strings.CutPrefix(string(head), outputMagic)
	return ok && strings.Trim(rest, "0123456789") == ""
}

// lostHow says what a crash left of an output file, for lostInCrash's error.
func lostHow(size int64) string {
	if size == 0 {
		return "empty"
	}
	return "without its header"
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
