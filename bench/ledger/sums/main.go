// Command sums reads every job's summary of a ledger store, as `ledger
// status` does, for bench/ledger/run.sh: it prints how many jobs it read.
//
//	sums DIR
package main

import (
	"fmt"
	"os"

	"github.com/tether-sh/tether/lib/ledger"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sums DIR")
		os.Exit(2)
	}
	st, err := ledger.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sums:", err)
		os.Exit(3)
	}
	sums, err := st.Summaries()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sums:", err)
		os.Exit(3)
	}
	fmt.Println(len(sums))
}
