package reexec

// selfExe is this process's own executable, even after it was replaced or
// removed on disk (an upgrade during a run).
const selfExe = "/proc/self/exe"
