// Command fill loads a ledger store with N finished executions of one job,
// through lib/ledger/filestore (every write durable), for bench/ledger/run.sh.
//
//	fill DIR JOB N
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/tether-sh/tether/lib/ledger"
	"github.com/tether-sh/tether/lib/ledger/filestore"
	"github.com/tether-sh/tether/lib/proc"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: fill DIR JOB N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fill:", err)
		os.Exit(2)
	}
	if err := fill(os.Args[1], os.Args[2], n); err != nil {
		fmt.Fprintln(os.Stderr, "fill:", err)
		os.Exit(3)
	}
}

func fill(dir, job string, n int) error {
	st, err := filestore.Open(dir)
	if err != nil {
		return err
	}
	owner, err := ledger.LocalOwner(proc.Self())
	if err != nil {
		return err
	}
	code := 0
	for i := 0; i < n; i++ {
		r, err := st.Claim(job, ledger.ClaimOptions{Owner: owner})
		if err != nil {
			return err
		}
		if _, err := st.Start(r.ID, nil); err != nil {
			return err
		}
		if _, err := st.Finish(r.ID, ledger.Completed, &code, ""); err != nil {
			return err
		}
	}
	return nil
}
