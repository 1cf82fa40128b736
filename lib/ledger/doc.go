// Package ledger is the contract of a durable, crash-safe execution
// ledger: it records that a job was claimed, handed off, started and
// finished, so that a job runs at most once per claim and a run whose
// owner vanished is reported honestly. It holds what every store shares:
// Record and its JSON form as a user reads it (MarshalJSON, what --json
// prints; Field, what --field prints), Status and the state machine (the
// Transitions), the errors, the Ledger interface with its options and
// results, owners and how they are judged, ids and job names, and the
// rules every store applies (instants, late results, leases,
// ErrOneHost). The stores are its siblings: lib/ledger/filestore, plain
// files under one flock, and lib/ledger/pgstore, a PostgreSQL database;
// lib/ledger/location opens the one a location names, and
// lib/ledger/ledgertest is the conformance suite both pass.
//
// How a record is stored is its store's: pgstore keeps it in columns,
// the file store as JSON (lib/ledger/filestore/wire: a claim, the whole
// record, and deltas against it). The JSON form's structs, its field
// table and its canonical writer are lib/ledger/internal/form's, a leaf
// that this package (MarshalJSON, Field, Record.Form) and wire import:
//
//	lib/ledger/internal/form     structs, field table, canonical writer
//	  ▲              ▲
//	  │    lib/ledger               Record, MarshalJSON, Field; Record.Form
//	  │      ▲    ▲
//	  │      │    lib/ledger/pgstore        columns
//	lib/ledger/filestore/wire    Encode/Decode, EncodeDelta/ApplyDelta, stored bytes
//	  ▲
//	lib/ledger/filestore
//
// A new record field needs: its field in Record (and its rule in
// Validate, if any); its key's row in form.Fields (Key; Rec: the Record
// field; Optional: older records lack it; Time; NotNull for a string
// never null); `go generate ./lib/ledger/filestore/wire`, which writes
// from the table and the Record field's type form.Record's field,
// Record.Form's and wire's fromForm's lines and the stored-bytes reader
// (TestGeneratedUpToDate holds them to the table); and pgstore's column
// (schema.go, and its row in record.go's columns, its field in scan's
// Record). MarshalJSON, --field, the file store's claims and deltas and
// the stored-bytes readers follow from the table.
//
// # Synopsis
//
//	st, err := filestore.Open(dir)                   // creates DIR 0700 if missing; st.Close()
//	owner, err := ledger.LocalOwner(proc.Self())     // host + boot id + PID namespace + PID@START
//	rec, err := st.Claim("backup", ledger.ClaimOptions{Owner: owner, Instant: t})
//	rec, err = st.Start(rec.ID, nil)                 // or Fence, then Adopt
//	rec, err = st.Beat(rec.ID, ledger.BeatOptions{Note: &note, IfLatest: true}) // alive; same state
//	rec, err = st.Finish(rec.ID, ledger.Completed, &code, "")
//	recovered, err := st.Recover(30 * time.Second)   // dead owners → abandoned/unknown
//
// Ledger is the store seam: the state machine's operations, which every
// store implements and ledgertest.RunConformance checks. The seam is the
// whole contract: what only some stores do (keep a lease, keep a late
// result, recover another host, hand off through a folder, keep a boot
// note) is an operation of every store, which the file store does as
// documented (KeepLease returns at once; RecordLate keeps nothing;
// RecoverHost is ErrOneHost), so that callers never type-assert a store.
//
// Every error wraps one of the sentinels below (ErrRefused, ErrNotFound,
// ErrBadInput, ErrCorrupt, ErrUnsafeStore; ErrOneHost wraps ErrBadInput);
// anything else is a system error.
//
// # State machine
//
//	claimed ──fence──▶ claimed+fenced ──adopt──▶ running ──finish──▶ completed | failed
//	   │                     │                      │
//	   └──start──▶ running   └─(claimer dead,       └─(every owner process gone) ──▶ unknown
//	   └──finish──▶ failed      grace passed)──▶ abandoned
//	   └─(claimer dead)──▶ abandoned
//
// Each transition is a compare-and-swap (the file store's under its
// exclusive flock, PostgreSQL's one conditional UPDATE), so of any number
// of racing adopters (or claimers of one job and instant) exactly one
// wins. Terminal states (completed, failed, unknown, abandoned) are never
// rewritten. A beat (claimed, claimed+fenced or running) keeps the state and
// records beat_at and an optional note, in the same one write; with
// IfLatest it is refused when the job has a newer execution.
//
// # Owners
//
// An owner is recorded as host name + boot id + PID namespace + PID + START
// (field 22 of /proc/PID/stat): in a record,
//
//	"owner":{"host":"web-1","boot_id":"4f8c2e7a-…","pidns":4026531836,"pid":4242,"start":987654}
//
// where pidns is the inode of the recording process's /proc/self/ns/pid:
// the namespace its PID numbers belong to. The payload child is recorded
// by its owner (the runner that forked it), by the PID the owner's
// namespace gives it, so it carries the owner's boot and namespace (under
// --pidns the payload is init of a namespace of its own, but its PID as
// recorded is the runner's view of it).
//
// Recover judges a PID only where it means the same process: on the same
// boot (boot id) and in the same PID namespace. The host name is a label:
// the same boot id and namespace are the same machine even after a rename,
// or in a container with a host name of its own. A PID whose START differs
// is a different process. An owner whose boot id differs died with that
// boot if its host name is this one's, and is on another host (uncertain,
// left alone) if not. An owner of this boot in another PID namespace is
// uncertain: its PID is not this namespace's (inside `unshare --pid
// --mount-proc` the owner's 2 is not the host's kthreadd) — unless that
// namespace has no process left, which only the initial namespace can see
// (proc.PIDNamespaceGone); then the owner died with it. An owner whose
// identity cannot be read is uncertain too. A process whose /proc belongs
// to another PID namespace (proc.CheckProcNS) judges nothing: LocalOwner,
// Recover and RecoverOne return its error.
//
// Records written before the PID namespace was recorded have no "pidns"
// (read as 0, written back as null): such an owner is taken to be of the
// judge's own namespace, as the version that wrote it judged it, so a store
// in use keeps working across the upgrade (on the host, or inside one
// container). Only a record written by such a version inside a nested
// namespace, still active on the current boot, can be misjudged.
//
// A running execution whose recorded payload child is still alive is not
// judged, and a fenced claim is left alone for a grace period after its
// fence so that a slow adopter is not beaten.
package ledger
