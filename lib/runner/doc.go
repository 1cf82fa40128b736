// Package runner runs a command as a child the way every tether runner
// does (reap, ledger run, adopt, spawn's worker, watchpid … -- CMD): in its
// own process group, with the runner as child subreaper, signals forwarded
// to the group, an optional deadline, and — once the command has ended —
// every process it left behind stopped with the bounded schedule and
// reaped.
//
// Synopsis:
//
//	res, err := runner.Run(ctx, runner.Options{
//		Argv:     []string{"backup.sh", "--full"},
//		Grace:    5 * time.Second,
//		Deadline: time.Hour,
//		OnStart:  func(child proc.ID) error { return record(child) },
//	})
//	if err != nil { // the command never ran: 125, 126 or 127
//		return tool.Fail(err, exit.NotRun)
//	}
//	res.Report(tool.Warnf)
//	return res.Code()
//
// Run is cut in three: start (start_linux.go: subreaper, signal catcher, the
// command held until OnStart has recorded it, gate_linux.go), the wait loop
// (forward signals; on the deadline, ctx or Options.Stop, stop the
// command's group with the bounded schedule) and finish (stop and reap the
// leftovers, leftovers_linux.go).
//
// One owner of wait4 (reaper_linux.go). While Run runs it is the only code in
// the process that may wait for children: it builds the command with
// os/exec but starts it with syscall.StartProcess, so that no os.Process
// exists to wait for it (fork_linux.go); one goroutine calls wait4(-1) in
// a loop, records the command's status and reaps every orphan re-parented
// to the runner. Any other child started meanwhile (exec.Cmd.Run elsewhere
// in the process) would be reaped by that loop and its own Wait would
// fail. Only one Run may run at a time in a process.
//
// One signal catcher (signals.go). Catch registers the signals a tool
// handles — before it claims the work Run will do, so that one arriving
// before the command exists is neither lost nor fatal — and Run, ledger
// run, adopt and watchpid all receive them from it.
package runner
