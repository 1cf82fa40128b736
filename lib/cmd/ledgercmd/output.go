package ledgercmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tether-sh/tether/lib/ledger"
)

// printRecords prints recs as --json lines, as one --field value per line,
// or as an aligned table with a header.
func (inv *invocation) printRecords(recs []ledger.Record, field string) error {
	w := bufio.NewWriter(inv.tool.Stdout)
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
	case inv.g.JSON:
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
	// BEAT and NOTE only where some execution was beaten: the table of
	// executions that never were stays as it always was.
	beats := false
	for _, r := range recs {
		beats = beats || !r.BeatAt.IsZero()
	}
	head := "ID\tJOB\tSTATUS\tINSTANT\tOWNER\tCLAIMED\tFINISHED\tEXIT\tERROR"
	if beats {
		head += "\tBEAT\tNOTE"
	}
	fmt.Fprintln(tw, head)
	for _, r := range recs {
		st := string(r.Status)
		if r.Fenced && r.Status == ledger.Claimed {
			st = "claimed+fenced"
		}
		exit := "-"
		if r.ExitCode != nil {
			exit = strconv.Itoa(*r.ExitCode)
		}
		errMsg := escapeControl(r.Error)
		if errMsg == "" {
			errMsg = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", r.ID, r.Job, st, tableTime(r.Instant),
			r.Owner.ID(), tableTime(r.ClaimedAt), tableTime(r.FinishedAt), exit, errMsg)
		if beats {
			note := escapeControl(r.Note)
			if note == "" {
				note = "-"
			}
			fmt.Fprintf(tw, "\t%s\t%s", tableTime(r.BeatAt), note)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// escapeControl makes free text (an --error, a --note) safe for a human
// table on a terminal: control characters (a newline, a tab that would
// break the columns, ESC that starts a terminal escape sequence), Unicode
// format characters (a right-to-left override) and invalid UTF-8 are
// written as Go escapes (\n, \x1b, \u202e). JSON output stays exact.
func escapeControl(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafeRune(r, size):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case size == 1: // an ASCII control or a byte of invalid UTF-8
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports a rune escapeControl escapes; size is its length in
// bytes (1 for RuneError, invalid UTF-8).
func unsafeRune(r rune, size int) bool {
	return (r == utf8.RuneError && size == 1) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

func tableTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
