package ledgercmd

import (
	"bufio"
	"fmt"
	"time"

	"github.com/tether-sh/tether/lib/ledger"
)

// printRecords prints recs as --json lines, as one --field value per line,
// or as an aligned table with a header.
func (inv *invocation) printRecords(recs []ledger.Record, field string) error {
	p := inv.newPrinter(field, false)
	for _, r := range recs {
		if err := p.add(r); err != nil {
			return err
		}
	}
	return p.flush()
}

// printer prints records as printRecords does, one at a time: --json lines
// and --field values are written as they come, in bounded memory however
// many there are; a table, whose columns are as wide as its widest cell,
// is written by flush.
type printer struct {
	w     *bufio.Writer
	field string
	json  bool // --json
	table table
}

// newPrinter prints records with --field field, or as --json says; many
// says they may be many (list, prune): written in 64 KiB pieces, not 4.
func (inv *invocation) newPrinter(field string, many bool) *printer {
	size := 4 << 10
	if many {
		size = 64 << 10
	}
	p := &printer{w: bufio.NewWriterSize(inv.tool.Stdout, size), field: field}
	p.json = field == "" && inv.g.JSON
	return p
}

// add prints r, or keeps it for the table.
func (p *printer) add(r ledger.Record) error {
	switch {
	case p.field != "":
		v, err := r.Field(p.field)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(p.w, v)
		return err
	case p.json:
		// As json.Encoder writes it, without its second pass over the
		// bytes: MarshalJSON's are compact already.
		b, err := r.MarshalJSON()
		if err == nil {
			p.w.Write(b)
			err = p.w.WriteByte('\n')
		}
		return err
	default:
		p.table.add(r)
		return nil
	}
}

// flush writes the table, if any, and what is buffered.
// addJSON prints b, a record as MarshalJSON writes it (--json).
func (p *printer) addJSON(b []byte) error {
	p.w.Write(b)
	return p.w.WriteByte('\n')
}

func (p *printer) flush() error {
	if p.field == "" && !p.json {
		p.table.write(p.w)
	}
	return p.w.Flush()
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

func tableTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
