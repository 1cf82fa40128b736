package proc

// Exited reports whether a process in this state has no thread left
// running: the SPEC's "gone" as seen in one /proc snapshot. Callers outside
// this package (the tree walker in lib/stop) need it to tell a zombie entry,
// which is gone, from a zombie leader whose other threads still run.
func (s Stat) Exited() bool { return s.exited() }

// Stopped reports whether the process is stopped by a signal (T) or by a
// tracer (t): it cannot fork until it is continued.
func (s Stat) Stopped() bool { return s.State == 'T' || s.State == 't' }
