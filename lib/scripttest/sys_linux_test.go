package scripttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestScenarioCmdline: a process is a scenario's when its environment
// holds that scenario's WORK or it runs in that scenario's folder; the
// same program started for another scenario is not.
func TestScenarioCmdline(t *testing.T) {
	mine, other := t.TempDir(), t.TempDir()
	sub := filepath.Join(mine, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, work, dir string
		want            bool
	}{
		{"its WORK", mine, other, true},
		{"another's WORK, its folder", other, mine, true},
		{"another's WORK, below its folder", other, sub, true},
		{"another's WORK and folder", other, other, false},
		{"no WORK, a folder whose name starts as its", "", mine + "-not", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.dir == mine+"-not" {
				if err := os.Mkdir(c.dir, 0o755); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(c.dir)
			}
			cmd := exec.Command("sleep", "4711.25")
			cmd.Dir = c.dir
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			if c.work != "" {
				cmd.Env = append(cmd.Env, "WORK="+c.work)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				cmd.Process.Kill()
				cmd.Wait()
			}()
			// The child's environ and cwd are its exec's: wait for it.
			for i := 0; ; i++ {
				if b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline"); err == nil && string(b) == "sleep\x004711.25\x00" {
					break
				}
				if i > 60000 {
					t.Fatal("sleep never exec'd")
				}
				time.Sleep(time.Millisecond)
			}
			line, got := scenarioCmdline(cmd.Process.Pid, mine)
			if got != c.want {
				t.Errorf("scenarioCmdline(pid, %s) = %q, %v; want %v", mine, line, got, c.want)
			}
			if got && line != "sleep 4711.25" {
				t.Errorf("scenarioCmdline(pid, %s) = %q; want \"sleep 4711.25\"", mine, line)
			}
		})
	}
}
