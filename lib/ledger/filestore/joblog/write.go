package joblog

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
)

// Writing a log whole: a new job's, prune's next generation, or a copy of
// one that has another link.

// detach replaces the log, which has another link, with a copy of its own.
func (l *Log) detach(jd durable.Dir, check func(string, *unix.Stat_t) error) error {
	end, err := l.Scan(l.First, func(Entry) error { return nil })
	if err != nil {
		return err
	}
	w, err := NewWriter(jd, l.Job, l.Gen, l.ID, l.Header)
	if err != nil {
		return err
	}
	buf := make([]byte, ReadSize)
	for at := l.First; at < end; {
		n, err := l.pread(buf[:min(int64(len(buf)), end-at)], at)
		if err == nil && n == 0 {
			err = fmt.Errorf("%s: shorter than read", l.Path)
		}
		if err == nil {
			err = durable.PwriteAll(w.fd, buf[:n], w.off)
			w.off += int64(n)
		}
		if err != nil {
			w.Abort()
			return err
		}
		at += int64(n)
	}
	nl, err := w.Commit(check)
	if err != nil {
		return err
	}
	if err := jd.Sync(); err != nil {
		nl.Close()
		return err
	}
	l.Close()
	*l = *nl
	return nil
}

// Writer writes a new log (a new job's, prune's next generation) under
// a temporary name, to be renamed into place whole.
type Writer struct {
	p   durable.Pending
	fd  int
	jd  durable.Dir
	off int64
	id  uint64 // the new log's
	err error
	// Renamed: Commit put the new log in place (its error, if any, came
	// after the rename).
	Renamed bool
}

// NewWriter starts a log of job, of generation gen, in the job directory
// jd, whose header holds header: a log of its own (id 0: a new random id)
// or a copy of the log whose id is id.
func NewWriter(jd durable.Dir, job string, gen int64, id uint64, header []byte) (*Writer, error) {
	for id == 0 {
		id = rand.Uint64()
	}
	h := binary.LittleEndian.AppendUint64(make([]byte, 0, idSize+len(header)), id)
	p, fd, err := durable.StageOpen(jd, Name, Frame(0, 0, KindHeader, job, gen, append(h, header...)))
	if err != nil {
		return nil, err
	}
	w := &Writer{p: p, fd: fd, jd: jd, id: id}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		w.Abort()
		return nil, &os.PathError{Op: "stat", Path: jd.Show(p.Temp), Err: err}
	}
	w.off = st.Size
	return w, nil
}

// Add appends a frame and returns its offset.
func (w *Writer) Add(kind byte, id string, ref int64, payload []byte) int64 {
	off := w.off
	if w.err == nil {
		b := Frame(w.id, off, kind, id, ref, payload)
		w.err = durable.PwriteAll(w.fd, b, off)
		w.off += int64(len(b))
	}
	return off
}

// Abort removes the new log.
func (w *Writer) Abort() {
	unix.Close(w.fd)
	w.p.Abort()
}

// Commit makes the new log durable and renames it into place (the caller
// fsyncs the job's directory), and returns it open for writing (check as
// Open's).
func (w *Writer) Commit(check func(string, *unix.Stat_t) error) (*Log, error) {
	err := w.err
	if err == nil {
		if err = durable.Fdatasync(w.fd); err != nil {
			err = &os.PathError{Op: "fdatasync", Path: w.jd.Show(w.p.Temp), Err: err}
		}
	}
	if err != nil {
		w.Abort()
		return nil, err
	}
	unix.Close(w.fd)
	if err := w.p.Commit(); err != nil {
		return nil, err
	}
	w.Renamed = true
	return Open(w.jd, true, nil, check)
}
