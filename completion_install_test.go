//go:build linux

package tether_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCompletionInstalled: bash completes every tool as installed by
// ./install.sh and by the .deb, called the way bash calls a completer:
// the installed completion file is sourced, `complete -p TOOL` names the
// command bash runs (-C), and that command runs with COMP_LINE, COMP_POINT,
// COMP_KEY and COMP_TYPE set and the arguments bash passes — the command's
// name, the word being completed, the word before it. Real candidates come
// back, nothing is written to stderr (it would garble the prompt), exit 0.
// The .deb is extracted with dpkg-deb -x, not installed: its completer
// names /usr/bin/TOOL, which is run from the extracted tree. (#48.1: ledger
// and adopt, handed their own name first, took it for a command line
// handed back to tether-pg and printed so into the prompt.)
func TestCompletionInstalled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tools twice")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	home := t.TempDir()
	// The caller's module and build caches, not ones under the scratch
	// HOME: a module cache is read-only, which a normal user's t.TempDir
	// cannot remove, and downloading every module again took minutes.
	caches, err := exec.Command("go", "env", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE GOCACHE: %v", err)
	}
	modcache, gocache, _ := strings.Cut(strings.TrimSpace(string(caches)), "\n")
	env := append(os.Environ(), "HOME="+home, "GOFLAGS=-buildvcs=false", "GOMODCACHE="+modcache, "GOCACHE="+gocache)
	prefix := filepath.Join(t.TempDir(), "prefix")
	install := exec.Command("./install.sh")
	install.Env = append(env, "PREFIX="+prefix)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("PREFIX=%s ./install.sh: %v\n%s", prefix, err, out)
	}
	installs := map[string]func(string) string{
		"install.sh": func(p string) string { return p },
	}
	completions := map[string]string{"install.sh": filepath.Join(prefix, "share", "bash-completion", "completions")}
	if _, err := exec.LookPath("dpkg-deb"); err == nil {
		debDir, root := t.TempDir(), t.TempDir()
		deb := exec.Command("./install.sh", "--deb", debDir)
		deb.Env = env
		if out, err := deb.CombinedOutput(); err != nil {
			t.Fatalf("./install.sh --deb: %v\n%s", err, out)
		}
		debs, _ := filepath.Glob(filepath.Join(debDir, "*.deb"))
		if len(debs) != 1 {
			t.Fatalf("./install.sh --deb made %v; want one .deb", debs)
		}
		if out, err := exec.Command("dpkg-deb", "-x", debs[0], root).CombinedOutput(); err != nil {
			t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
		}
		installs[".deb"] = func(p string) string { return filepath.Join(root, p) }
		completions[".deb"] = filepath.Join(root, "usr", "share", "bash-completion", "completions")
	} else {
		t.Log("no dpkg-deb: the .deb is not tested")
	}
	interactive(t, filepath.Join(prefix, "bin"), completions["install.sh"])
	store := filepath.Join(t.TempDir(), "store")
	cases := []struct {
		tool, line string
		want       []string // among the candidates
	}{
		{"ledger", "ledger ", []string{"run", "status", "spawn"}},
		{"ledger", "ledger ru", []string{"run"}},
		{"ledger", "ledger run --ev", []string{"--every"}},
		{"ledger", "ledger list --status ", []string{"failed", "running"}},
		{"ledger", "ledger --ledger " + store + " latest ", []string{"nightly"}},
		{"ledger", "ledger run nightly -- ba", []string{"bash"}},
		{"adopt", "adopt --le", []string{"--ledger", "--lease"}},
		{"watchpid", "watchpid --", []string{"--timeout", "--help"}},
		{"stopbounded", "stopbounded --", []string{"--tree", "--help"}},
		{"reap", "reap --", []string{"--help", "--version"}},
	}
	for name, at := range installs {
		bin := at(filepath.Join(prefix, "bin"))
		if name == ".deb" {
			bin = at("/usr/bin")
		}
		claim := exec.Command(filepath.Join(bin, "ledger"), "--ledger", store, "claim", "nightly")
		if out, err := claim.CombinedOutput(); err != nil && name == "install.sh" {
			t.Fatalf("ledger claim: %v\n%s", err, out)
		}
		for _, c := range cases {
			file := filepath.Join(completions[name], c.tool)
			spec, err := exec.Command("bash", "-c", `source "$1" && complete -p "$2"`, "bash", file, c.tool).Output()
			if err != nil {
				t.Fatalf("%s: source %s; complete -p %s: %v", name, file, c.tool, err)
			}
			f := strings.Fields(string(spec))
			i := strings.Index(string(spec), " -C ")
			if i < 0 || f[len(f)-1] != c.tool {
				t.Fatalf("%s: complete -p %s = %q; want complete ... -C PROGRAM %s", name, c.tool, spec, c.tool)
			}
			program := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(string(spec)[i+4:]), c.tool))
			program = at(strings.Trim(program, `'`))
			words := strings.Fields(c.line)
			cur, prev := "", words[len(words)-1]
			if !strings.HasSuffix(c.line, " ") {
				cur, prev = words[len(words)-1], words[len(words)-2]
			}
			cmd := exec.Command(program, c.tool, cur, prev)
			cmd.Env = append(os.Environ(), "COMP_LINE="+c.line, "COMP_POINT="+strconv.Itoa(len(c.line)), "COMP_KEY=9", "COMP_TYPE=9", "TETHER_LEDGER=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			got := strings.Fields(stdout.String())
			for _, w := range c.want {
				if !slicesContains(got, w) {
					t.Errorf("%s: bash completing %q with %s %s %q %q: %q; want %q among them", name, c.line, program, c.tool, cur, prev, got, w)
				}
			}
			if err != nil || stderr.Len() > 0 {
				t.Errorf("%s: bash completing %q: %v, stderr %q; want exit 0 and nothing on stderr", name, c.line, err, stderr.String())
			}
		}
	}
}

// interactive types into a real interactive bash under tmux, with the
// install's completion files sourced, a line and TAB, and checks what bash
// made of the line: the word completed, nothing else on the screen (tmux's
// capture drops the space bash adds after it).
func interactive(t *testing.T, bin, completions string) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Log("no tmux: no interactive bash")
		return
	}
	sock := "tether-completion-" + strconv.Itoa(os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	home := t.TempDir()
	tmux("-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "40", "-s", "c",
		"env", "-i", "HOME="+home, "TERM=xterm", "PATH="+bin+":/usr/bin:/bin", "PS1=$ ", "bash", "--norc", "--noprofile", "-i")
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	// Typed only once bash has sourced every file and cleared the
	// screen: a TAB before that gets bash's default completion.
	ready := filepath.Join(t.TempDir(), "ready")
	tmux("send-keys", "-t", "c", "for f in "+completions+"/*; do source $f; done; clear; : >"+ready, "Enter")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil && strings.TrimSpace(tmux("capture-pane", "-p", "-t", "c")) == "$" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bash did not source the completion files within 60s: %s", tmux("capture-pane", "-p", "-t", "c"))
		}
	}
	for _, c := range []struct{ typed, want string }{
		{"ledger ru", "$ ledger run "},
		{"ledger run --ever", "$ ledger run --every "},
		{"adopt --lea", "$ adopt --lease "},
		{"stopbounded --tre", "$ stopbounded --tree "},
		{"watchpid --time", "$ watchpid --timeout "},
		{"reap --vers", "$ reap --version "},
	} {
		tmux("send-keys", "-t", "c", c.typed, "Tab")
		screen := ""
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			screen = strings.TrimRight(tmux("capture-pane", "-p", "-t", "c"), "\n ")
			if strings.HasSuffix(screen, strings.TrimSpace(c.want)) {
				break
			}
		}
		if strings.TrimSpace(screen) != strings.TrimSpace(c.want) {
			t.Errorf("bash -i: typed %q and TAB: the screen reads %q; want %q alone", c.typed, screen, c.want)
		}
		tmux("send-keys", "-t", "c", "C-u", "clear", "Enter")
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if strings.TrimSpace(tmux("capture-pane", "-p", "-t", "c")) == "$" {
				break
			}
		}
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
