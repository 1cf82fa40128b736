package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// maxEnvScan bounds what StampEnv reads of an environment.
const maxEnvScan = 4 << 20

// StampEnv sets name to value in the environment of pid, a process
// stopped at its exec before its first instruction (traced), whose
// environment holds name=placeholder: value (no longer than placeholder)
// is written over the placeholder, NUL-terminated, through
// /proc/PID/mem, within env_start..env_end of /proc/PID/stat. The caller
// must be allowed to trace pid (it is its tracer).
func StampEnv(pid int, name, placeholder, value string) error {
	if len(value) > len(placeholder) {
		return fmt.Errorf("%d bytes do not fit in %d", len(value), len(placeholder))
	}
	start, end, err := envRange(pid)
	if err != nil {
		return err
	}
	if end <= start || end-start > maxEnvScan {
		return fmt.Errorf("its environment spans %d bytes", end-start)
	}
	mem, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/mem", os.O_RDWR, 0)
	if err != nil {
		return UnwrapPath(err)
	}
	defer mem.Close()
	env := make([]byte, end-start)
	if _, err := mem.ReadAt(env, int64(start)); err != nil {
		return UnwrapPath(err)
	}
	entry := []byte(name + "=" + placeholder + "\x00")
	at := -1
	for off := 0; off < len(env); {
		n := bytes.IndexByte(env[off:], 0)
		if n < 0 {
			n = len(env) - off
		}
		if bytes.HasPrefix(env[off:], entry) {
			at = off
		}
		off += n + 1
	}
	if at < 0 {
		return fmt.Errorf("no %s placeholder in its environment", name)
	}
	_, err = mem.WriteAt(append([]byte(value), 0), int64(start)+int64(at+len(name)+1))
	return UnwrapPath(err)
}

// envRange reads env_start and env_end (fields 50 and 51) of pid's
// /proc/PID/stat.
func envRange(pid int) (start, end uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, UnwrapPath(err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 51-2 {
		return 0, 0, fmt.Errorf("/proc/%d/stat has no env_start", pid)
	}
	if start, err = strconv.ParseUint(f[50-3], 10, 64); err != nil {
		return 0, 0, err
	}
	end, err = strconv.ParseUint(f[51-3], 10, 64)
	return start, end, err
}
