package ledger

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// printRecords prints recs as --json lines, as one --field value per line,
// or as an aligned table with a header.
func (e *env) printRecords(recs []ledger.Record, field string) error {
	w := bufio.NewWriter(e.tool.Stdout)
	defer w.Flush()
	switch {
	case field != "":
		for _, r := range recs {
			v, err := r.Field(field)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, v)
		}
	case e.g.JSON:
		return writeJSON(w, recs)
	default:
		writeTable(w, recs)
	}
	return nil
}

// checkField validates --field before anything is done, so a typo is a
// usage error even when no record matches.
func checkField(field string) error {
	if field == "" {
		return nil
	}
	_, err := ledger.Record{}.Field(field)
	return err
}

func writeJSON(w io.Writer, recs []ledger.Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func writeTable(w io.Writer, recs []ledger.Record) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tJOB\tSTATUS\tINSTANT\tOWNER\tCLAIMED\tFINISHED\tEXIT\tERROR")
	for _, r := range recs {
		st := string(r.Status)
		if r.Fenced && r.Status == ledger.Claimed {
			st = "claimed+fenced"
		}
		exit := "-"
		if r.ExitCode != nil {
			exit = strconv.Itoa(*r.ExitCode)
		}
		errMsg := r.Error
		if errMsg == "" {
			errMsg = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Job, st, tableTime(r.Instant),
			r.Owner.ID(), tableTime(r.ClaimedAt), tableTime(r.FinishedAt), exit, errMsg)
	}
	tw.Flush()
}

func tableTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
