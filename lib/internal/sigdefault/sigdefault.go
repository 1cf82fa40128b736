// Package sigdefault gives a tool that handles none of a few signals
// itself the answer a C program gives them: it dies of them (of QUIT with
// a core, where the limits allow), or ignores them if it was started with
// them ignored. A Go program answers otherwise: QUIT prints every
// goroutine's stack and exits 2, and USR1, USR2, ALRM, VTALRM and PWR are
// caught and dropped.
//
//	sigdefault.AsC(sigdefault.Signals...) // watchpid without CMD: it forwards nothing
//
// Runners forward QUIT, USR1 and USR2 to their command (lib/runner): they
// must not call it.
package sigdefault

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/tether-sh/tether/lib/internal/sigstate"
)

// Signals are the signals whose default action ends a process and which
// Go's runtime answers otherwise (0 for one the platform lacks).
var Signals = []syscall.Signal{
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGALRM, syscall.SIGVTALRM, sigPWR,
}

// AsC catches sigs (Signals, or some of them) and answers each as a C
// program would: a signal the process was started with ignored is
// dropped; any other ends the process by that signal's default action
// (the action set back to SIG_DFL and the signal raised again). It costs
// a goroutine, and at the first signal the reading of which signals were
// ignored at start (sigstate, about 0.5 ms). Call it once, and never for a
// signal anything else catches.
func AsC(sigs ...syscall.Signal) {
	c := make(chan os.Signal, len(sigs)) // none dropped, in the order taken
	caught := make([]os.Signal, 0, len(sigs))
	for _, s := range sigs {
		if s != 0 {
			caught = append(caught, s)
		}
	}
	signal.Notify(c, caught...)
	go func() {
		for sig := range c {
			s := sig.(syscall.Signal)
			if sigstate.Ignored(s) {
				continue
			}
			die(s)
		}
	}()
}
