package filestore

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/durable"
)

// Writing a log whole: a new job's, prune's next generation, or a copy of
// one that has another link.

// detach replaces the log, which has another link, with a copy of its own.
func (l *jobLog) detach(jd dirh, job string) error {
	end, err := l.scan(l.first, func(entry) error { return nil })
	if err != nil {
		return err
	}
	w, err := newLogWriter(jd, job, l.gen, l.removed())
	if err != nil {
		return err
	}
	buf := make([]byte, logReadSize)
	for at := l.first; at < end; {
		n, err := l.pread(buf[:min(int64(len(buf)), end-at)], at)
		if err == nil && n == 0 {
			err = fmt.Errorf("%s: shorter than read", l.path)
		}
		if err == nil {
			err = pwriteAll(w.fd, buf[:n], w.off)
			w.off += int64(n)
		}
		if err != nil {
			w.abort()
			return err
		}
		at += int64(n)
	}
	nl, err := w.commit()
	if err != nil {
		return err
	}
	if err := jd.Sync(); err != nil {
		nl.close()
		return err
	}
	l.close()
	*l = *nl
	return nil
}

// logWriter writes a new log (a new job's, prune's next generation) under
// a temporary name, to be renamed into place whole.
type logWriter struct {
	p   durable.Pending
	fd  int
	jd  dirh
	job string
	off int64
	err error
	// renamed: commit put the new log in place (its error, if any, came
	// after the rename).
	renamed bool
}

// newLogWriter starts a log of job of generation gen whose header holds
// base.
func newLogWriter(jd dirh, job string, gen int64, base jobSummary) (*logWriter, error) {
	p, fd, err := durable.StageOpen(jd, logName, frame(kindHeader, "", gen, base.Encode()))
	if err != nil {
		return nil, err
	}
	w := &logWriter{p: p, fd: fd, jd: jd, job: job}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		w.abort()
		return nil, &os.PathError{Op: "stat", Path: jd.Show(p.Temp), Err: err}
	}
	w.off = st.Size
	return w, nil
}

// add appends a frame and returns its offset.
func (w *logWriter) add(kind byte, id string, ref int64, payload []byte) int64 {
	off := w.off
	if w.err == nil {
		b := frame(kind, id, ref, payload)
		w.err = pwriteAll(w.fd, b, off)
		w.off += int64(len(b))
	}
	return off
}

func (w *logWriter) abort() {
	unix.Close(w.fd)
	w.p.Abort()
}

// commit makes the new log durable and renames it into place (the caller
// fsyncs the job's directory), and returns it open for writing.
func (w *logWriter) commit() (*jobLog, error) {
	err := w.err
	if err == nil {
		if err = durable.Fdatasync(w.fd); err != nil {
			err = &os.PathError{Op: "fdatasync", Path: w.jd.Show(w.p.Temp), Err: err}
		}
	}
	if err != nil {
		w.abort()
		return nil, err
	}
	unix.Close(w.fd)
	if err := w.p.Commit(); err != nil {
		return nil, err
	}
	w.renamed = true
	return openLog(w.jd, w.job, true)
}

// preadAt fills b from offset off of fd, as far as the file goes: n is
// short of len(b) only at its end (or with err).
func preadAt(fd int, b []byte, off int64) (n int, err error) {
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// preadFull is preadAt where a file that ends before b is filled is
// io.ErrUnexpectedEOF.
func preadFull(fd int, b []byte, off int64) error {
	n, err := preadAt(fd, b, off)
	if err == nil && n < len(b) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// pwriteAll writes all of b at offset off of fd.
func pwriteAll(fd int, b []byte, off int64) error {
	for n := 0; n < len(b); {
		m, err := unix.Pwrite(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		n += m
	}
	return nil
}
