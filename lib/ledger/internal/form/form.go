// Package form is a record's JSON form, the one the user reads (`ledger
// show --json`, lib/ledger's MarshalJSON) and the one the file store
// keeps (lib/ledger/filestore/wire): its structs, its field table and its
// canonical writer. It is the leaf both import, so that the key names,
// their order and the bytes written for them are said once:
//
//	lib/ledger/internal/form     structs, field table, canonical writer (this package)
//	  ▲              ▲
//	  │    lib/ledger               Record, Validate, MarshalJSON, Field; Record.Form
//	  │      ▲
//	lib/ledger/filestore/wire    the stored form: Encode/Decode (claims),
//	  ▲                          EncodeDelta/ApplyDelta (deltas), the canonical
//	  │                          reader, AppendStoredJSON/StoredFate (stored bytes)
//	lib/ledger/filestore
//
// It knows nothing of ledger.Record (lib/ledger converts a Record to its
// form, Record.Form; wire converts a form back, checking it). pgstore
// keeps a record in columns and never calls it; what it prints is
// MarshalJSON's.
//
// The table, Fields, is the one place a key of the form is written: a row
// names its key and the ledger.Record field it holds (Rec), and
// TestGeneratedUpToDate in lib/ledger/filestore/wire (`go generate
// ./lib/ledger/filestore/wire`) writes from the rows and the types of
// ledger.Record's fields what follows from them:
//
//	record_gen.go                   Record: a field per row, tagged with its key; each row's Val
//	lib/ledger/recordform_gen.go    Record.Form's keys (ledger.Record → Record)
//	wire/fromform_gen.go            fromForm's keys, the way back (Record → ledger.Record)
//	wire/storedfill_gen.go          the stored-bytes reader's keys
//
// The nested objects, Owner and Child, are written by hand, tables and
// conversions: a field of a record's owner or child is an edit of each.
//
// The canonical form is the bytes json.Marshal writes for Record, keys in
// table order, no spaces: AppendCanonical writes them directly when every
// string is plain printable ASCII (ids, jobs, times and hosts always
// are), and declines otherwise; the caller then uses encoding/json, which
// derives the same keys from the structs' tags (TestFieldTables holds the
// tags and the tables together). This is the writer half of the
// canonical-codec accelerator (lib/internal/shortcut's register).
package form

// Owner is the form of a record's owner.
type Owner struct {
	Host   *string `json:"host"`
	BootID *string `json:"boot_id"`
	PIDNS  *uint64 `json:"pidns"`
	PID    int     `json:"pid"`
	Start  *uint64 `json:"start"`
}

// Child is the form of a record's payload process.
type Child struct {
	PID   int     `json:"pid"`
	Start *uint64 `json:"start"`
}
