// Command asc calls sigdefault.AsC(sigdefault.Signals...), writes the file
// its argument names and waits a minute to be signalled; it dumps no core.
package main

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/internal/sigdefault"
)

func main() {
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	sigdefault.AsC(sigdefault.Signals...)
	if err := os.WriteFile(os.Args[1], nil, 0o600); err != nil {
		os.Exit(3)
	}
	time.Sleep(time.Minute)
	os.Exit(4)
}
