// Package sigstate tells which signals the process was started with
// ignored, so that a runner can hand them on to its command ignored, as
// a C program (tini, coreutils' timeout, nohup) does without trying.
//
//	if sigstate.Ignored(syscall.SIGPIPE) { ... } // the caller ran `trap '' PIPE`
//	for _, s := range sigstate.Passed() { signal.Ignore(s) } // CMD inherits them
//
// A Go program forgets this at start: before any of its code runs, the
// runtime installs its own handler for most signals, and exec resets a
// handled signal to its default action. Only the runtime's private table
// (runtime.fwdSig, each signal's disposition as it found it) remembers.
// On Linux this package finds that table through the executable's symbol
// table and reads it from /proc/self/mem, once, at the first question:
// about 0.5 ms in ledger run on this project's 2-core VMs: 0.4 ms finding
// and reading the table (reading 4 chunks of the symbol table instead of
// 27 saved only 0.08 ms of it), 0.1 ms asking the kernel about each
// signal. A binary stripped of its symbol table (strip, go build
// -ldflags=-s) or a runtime without the table leaves only what the kernel
// still shows: HUP and INT (which the runtime leaves ignored when it
// finds them so) and the job-control signals TSTP, TTIN, TTOU and CONT
// (which it never touches); Exact then reports false.
//
// The package imports only syscall and unsafe, so that the recording
// gate (lib/internal/gate), which runs from an early init, can use it.
package sigstate

import (
	"sync"
	"syscall"
)

// nsig is the number of signals the questions cover, 1 to 64.
const nsig = 64

var start struct {
	once  sync.Once
	mask  uint64 // bit s-1: signal s was ignored at start
	exact bool
}

func loaded() {
	start.once.Do(func() { start.mask, start.exact = load() })
}

// Ignored reports whether sig was ignored when the process started. The
// first call reads the runtime's table (see the package doc); later calls
// are free. Safe for concurrent use.
func Ignored(sig syscall.Signal) bool {
	if sig < 1 || sig > nsig {
		return false
	}
	loaded()
	return start.mask&(1<<(sig-1)) != 0
}

// Exact reports whether Ignored knows every signal (the runtime's table
// was read), not only those the kernel still shows.
func Exact() bool {
	loaded()
	return start.exact
}

// Passed returns the signals ignored at start that a command should
// inherit ignored, in ascending order: all but those the runner's own Go
// runtime needs (SIGCHLD, whose SIG_IGN would make the kernel reap the
// runner's children before it can wait for them; SIGURG and SIGPROF,
// the runtime's preemption and profiling) and those signal.Ignore cannot
// ignore (KILL, STOP, the synchronous faults and the C library's
// reserved 32 and 33).
func Passed() []syscall.Signal {
	loaded()
	var out []syscall.Signal
	for s := syscall.Signal(1); s <= nsig; s++ {
		if start.mask&(1<<(s-1)) != 0 && passable(s) {
			out = append(out, s)
		}
	}
	return out
}

// Faults returns the synchronous faults (SEGV, BUS, FPE, ILL, TRAP, SYS,
// STKFLT) the process was started with ignored, in ascending order. A
// command inherits them ignored under a C runner (tini's tests check
// SEGV), but not from a Go process's fork: the runtime handles them, its
// child resets them to the default before exec, and signal.Ignore cannot
// change that. Only a process about to exec can set them ignored again
// (Ignore); a runner's gate does (lib/internal/gate).
func Faults() []syscall.Signal {
	loaded()
	var out []syscall.Signal
	for _, s := range faults {
		if s != 0 && start.mask&(1<<(s-1)) != 0 {
			out = append(out, s)
		}
	}
	return out
}

// faults are the synchronous faults, in ascending order (sigStkflt is 0
// where there is none).
var faults = []syscall.Signal{syscall.SIGILL, syscall.SIGTRAP, syscall.SIGBUS, syscall.SIGFPE,
	syscall.SIGSEGV, sigStkflt, syscall.SIGSYS}

func passable(s syscall.Signal) bool {
	switch s {
	case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGCHLD, syscall.SIGURG, syscall.SIGPROF,
		syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP,
		syscall.SIGSYS, 32, 33:
		return false
	}
	return s != sigStkflt
}
