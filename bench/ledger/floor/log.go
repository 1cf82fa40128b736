//go:build linux

package main

// With FLOOR_PROTOCOL=log, floor runs the cycle of lib/ledger/filestore's
// job logs instead of the protocol before them: each job's records are
// versions appended to jobs/JOB/_log as CRC-framed entries, one fdatasync
// per transition; active/ID is a symbolic link "JOB@OFFSET", made before
// the claim's entry and not flushed (the store flushes it only in a boot
// whose links it has not yet made whole: lib/ledger/filestore/linked.go),
// re-pointed after each later one (a new link renamed over it, not
// flushed) and removed when the execution ends, once its entry (16 bytes,
// not flushed) is appended to the job's index jobs/JOB/_ids. The log's
// own directory entries are flushed once, when the job's log is created. Like the rest of floor it
// trusts its input and checks nothing a real store would: it measures
// what the protocol's system calls cost.

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frame is payload with its length and CRC before it.
func frame(payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.LittleEndian.PutUint32(b, uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// appendFrames appends frames (one or more framed entries) to job's log,
// durably, and returns the offset of the first.
func appendFrames(dir, job string, frames []byte) (int64, error) {
	jobDir := dir + "/jobs/" + job
	fd, err := unix.Open(jobDir+"/_log", unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
	created := false
	if err == unix.ENOENT {
		fd, err = unix.Open(jobDir+"/_log", unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
		created = true
	}
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	if _, err := unix.Write(fd, frames); err != nil {
		return 0, err
	}
	if err := unix.Fdatasync(fd); err != nil {
		return 0, err
	}
	if created {
		for _, d := range []string{jobDir, dir + "/jobs"} {
			if err := fsyncDir(d); err != nil {
				return 0, err
			}
		}
	}
	return st.Size, nil
}

func logClaim(dir, job string) error {
	if err := prepare(dir, job); err != nil {
		return err
	}
	l, err := lock(dir)
	if err != nil {
		return err
	}
	defer unix.Close(l)
	id, err := newLink(dir, job)
	if err != nil {
		return err
	}
	if _, err := appendFrames(dir, job, frame(record(id, job, "claimed"))); err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(id + "\n")
	return err
}

// newLink makes a new execution's id and its link in active/, to the end
// of job's log, where its claim is to be appended.
func newLink(dir, job string) (string, error) {
	id := strconv.FormatInt(time.Now().UnixNano(), 36) + "-floor"
	var st unix.Stat_t
	size := int64(0)
	if unix.Stat(dir+"/jobs/"+job+"/_log", &st) == nil {
		size = st.Size
	}
	return id, unix.Symlink(job+"@"+strconv.FormatInt(size, 10), dir+"/active/"+id)
}

func logUpdate(dir, id, status string) error {
	l, err := lock(dir)
	if err != nil {
		return err
	}
	defer unix.Close(l)
	target, err := os.Readlink(dir + "/active/" + id)
	if err != nil {
		return err
	}
	job, at, _ := strings.Cut(target, "@")
	off, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return err
	}
	// The version the transition compares against: the claim's entry
	// (a real store reads on from there to the newest).
	fd, err := unix.Open(dir+"/jobs/"+job+"/_log", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	head := make([]byte, 4096)
	_, err = unix.Pread(fd, head, off)
	unix.Close(fd)
	if err != nil {
		return err
	}
	at2, err := appendFrames(dir, job, frame(record(id, job, status)))
	if err != nil {
		return err
	}
	link := job + "@" + strconv.FormatInt(at2, 10)
	if status != "completed" {
		return relink(dir+"/active", id, link)
	}
	if err := indexEntry(dir, job, id, at2); err != nil {
		return err
	}
	return unix.Unlink(dir + "/active/" + id)
}

// indexEntry appends execution id's entry (its hash, the offset of its
// terminal entry) to the job's index, checking its header as the store
// does.
func indexEntry(dir, job, id string, off int64) error {
	fd, err := unix.Open(dir+"/jobs/"+job+"/_ids", unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	head := make([]byte, 24)
	unix.Pread(fd, head, 0)
	if st.Size < 24 {
		st.Size = 24
	}
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	e := binary.LittleEndian.AppendUint64(nil, h)
	e = binary.LittleEndian.AppendUint64(e, uint64(off))
	_, err = unix.Pwrite(fd, e, st.Size)
	return err
}

// relink points the link name in d at target: a new link renamed over it.
func relink(d, name, target string) error {
	unix.Unlink(d + "/.tmp." + name)
	if err := unix.Symlink(target, d+"/.tmp."+name); err != nil {
		return err
	}
	return unix.Rename(d+"/.tmp."+name, d+"/"+name)
}
