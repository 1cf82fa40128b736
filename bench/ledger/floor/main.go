//go:build linux

// Command floor is the least a Go ledger can cost: the same files, links,
// renames and flushes as ledger's claim, start and finish (lib/ledger/filestore/doc.go: temp
// file, fsync, rename, fsync the directory; a lock file; index markers),
// with nothing else — no flag parsing, no JSON, no checks, no recovery.
// bench/ledger/run.sh runs it beside ledger and sqlite3 so that a ratio
// can be read against what no implementation in Go could beat here.
// It is a measuring stick, not a ledger: it trusts its input.
//
//	floor --ledger DIR claim JOB --owner PID
//	floor --ledger DIR start ID
//	floor --ledger DIR finish ID --status completed --exit-code 0
//
// With FLOOR_PROTOCOL=log in the environment it runs the log design's
// cycle instead (log.go), and also its one-shot cycle (run.go):
//
//	floor --ledger DIR run JOB -- CMD [ARG...]
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 5 || os.Args[1] != "--ledger" {
		fmt.Fprintln(os.Stderr, "usage: floor --ledger DIR claim JOB | start ID | finish ID")
		os.Exit(2)
	}
	dir, op, arg := os.Args[2], os.Args[3], os.Args[4]
	var err error
	if os.Getenv("FLOOR_PROTOCOL") == "log" {
		op = "log-" + op
	}
	switch op {
	case "log-claim":
		err = logClaim(dir, arg)
	case "log-start":
		err = logUpdate(dir, arg, "running")
	case "log-finish":
		err = logUpdate(dir, arg, "completed")
	case "log-run":
		if len(os.Args) < 7 || os.Args[5] != "--" {
			err = fmt.Errorf("usage: floor --ledger DIR run JOB -- CMD [ARG...]")
			break
		}
		err = logRun(dir, arg, os.Args[6:])
	case "claim":
		err = claim(dir, arg)
	case "start":
		err = update(dir, arg, "running")
	case "finish":
		err = update(dir, arg, "completed")
	default:
		err = fmt.Errorf("unknown operation %q", op)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(3)
	}
}

// record is a record of ledger's size, built without encoding/json.
func record(id, job, status string) []byte {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	return []byte(`{"v":1,"id":"` + id + `","job":"` + job + `","source":"","instant":null,"status":"` + status +
		`","fenced":false,"fenced_at":null,"owner":{"host":"h","boot_id":"00000000-0000-0000-0000-000000000000","pid":1,"start":1},` +
		`"child":null,"claimed_at":"` + now + `","started_at":"` + now + `","finished_at":null,"exit_code":null,"error":""}` + "\n")
}

func lock(dir string) (int, error) {
	fd, err := unix.Open(dir+"/lock", unix.O_RDONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, err
	}
	return fd, unix.Flock(fd, unix.LOCK_EX)
}

func fsyncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}

// replace writes data into dir/.tmp.spare, fdatasyncs it, exchanges it
// with dir/name (renames it there if name is new) and fsyncs dir.
func replace(dir, name string, data []byte) error {
	spare := dir + "/.tmp.spare"
	fd, err := unix.Open(spare, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	if _, err := unix.Pwrite(fd, data, 0); err != nil {
		return err
	}
	if err := unix.Ftruncate(fd, int64(len(data))); err != nil {
		return err
	}
	if err := unix.Fdatasync(fd); err != nil {
		return err
	}
	unix.Close(fd)
	err = unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, dir+"/"+name, unix.RENAME_EXCHANGE)
	if err == unix.ENOENT {
		err = unix.Rename(spare, dir+"/"+name)
	}
	if err != nil {
		return err
	}
	return fsyncDir(dir)
}

// prepare makes the store's and job's directories, as a claim finds
// them, and reads the owner's identity, as ledger reads it.
func prepare(dir, job string) error {
	for _, d := range []string{dir, dir + "/exec", dir + "/jobs", dir + "/active", dir + "/jobs/" + job} {
		if err := unix.Mkdir(d, 0o700); err != nil && err != unix.EEXIST {
			return err
		}
	}
	if _, err := os.ReadFile("/proc/" + strconv.Itoa(os.Getppid()) + "/stat"); err != nil {
		return err
	}
	_, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return err
}

func claim(dir, job string) error {
	if err := prepare(dir, job); err != nil {
		return err
	}
	l, err := lock(dir)
	if err != nil {
		return err
	}
	defer unix.Close(l)
	id := strconv.FormatInt(time.Now().UnixNano(), 36) + "-floor"
	tmp, rec := dir+"/exec/.tmp."+id, dir+"/exec/"+id
	fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	if _, err := unix.Pwrite(fd, record(id, job, "claimed"), 0); err != nil {
		return err
	}
	// The two markers: one empty file and a link to it.
	jobDir := dir + "/jobs/" + job
	mfd, err := unix.Open(jobDir+"/"+id, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	unix.Close(mfd)
	if err := unix.Link(jobDir+"/"+id, dir+"/active/"+id+"."+job); err != nil {
		return err
	}
	head, _ := os.ReadFile(jobDir + "/_latest")
	var wg sync.WaitGroup
	var jobErr, activeErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		jobErr = replace(jobDir, "_latest", append([]byte(id+" "), head...))
	}()
	go func() {
		defer wg.Done()
		activeErr = fsyncDir(dir + "/active")
	}()
	dataErr := unix.Fdatasync(fd)
	wg.Wait()
	unix.Close(fd)
	for _, err := range []error{dataErr, jobErr, activeErr} {
		if err != nil {
			return err
		}
	}
	if err := unix.Rename(tmp, rec); err != nil {
		return err
	}
	if err := fsyncDir(dir + "/exec"); err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(id + "\n")
	return err
}

func update(dir, id, status string) error {
	if _, err := os.ReadFile(dir + "/exec/" + id); err != nil {
		return err
	}
	l, err := lock(dir)
	if err != nil {
		return err
	}
	defer unix.Close(l)
	if _, err := os.ReadFile(dir + "/exec/" + id); err != nil {
		return err
	}
	if err := replace(dir+"/exec", id, record(id, "bench", status)); err != nil {
		return err
	}
	if status == "completed" {
		unix.Unlink(dir + "/active/" + id + ".bench")
	}
	return nil
}
