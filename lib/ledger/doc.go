// Package ledger is a durable, crash-safe execution ledger kept in plain
// files under one flock: it records that a job was claimed, handed off,
// started and finished, so that a job runs at most once per claim and a run
// whose owner vanished is reported honestly.
//
// # Synopsis
//
//	st, err := ledger.Open(dir)                      // creates DIR 0700 if missing
//	owner, err := ledger.LocalOwner(proc.Self())     // host + boot id + PID@START
//	rec, err := st.Claim("backup", ledger.ClaimOptions{Owner: owner, Instant: t})
//	rec, err = st.Start(rec.ID, nil)                 // or Fence, then Adopt
//	rec, err = st.Finish(rec.ID, ledger.Completed, &code, "")
//	recovered, err := st.Recover(30 * time.Second)   // dead owners → abandoned/unknown
//
// Every error wraps one of the sentinels below (ErrRefused, ErrNotFound,
// ErrBadInput, ErrCorrupt, ErrUnsafeStore); anything else is a system error.
//
// # State machine
//
//	claimed ──fence──▶ claimed+fenced ──adopt──▶ running ──finish──▶ completed | failed
//	   │                     │                      │
//	   └──start──▶ running   └─(claimer dead,       └─(every owner process gone) ──▶ unknown
//	   └──finish──▶ failed      grace passed)──▶ abandoned
//	   └─(claimer dead)──▶ abandoned
//
// Each transition is a compare-and-swap under the store's exclusive flock:
// the record is read, checked and rewritten while the lock is held, so of
// any number of racing adopters (or claimers of one job and instant) exactly
// one wins. Terminal states (completed, failed, unknown, abandoned) are never
// rewritten.
//
// # On-disk layout
//
//	DIR/                       0700, owned by the caller, not group/other-writable
//	  lock                     0600, empty; flock'd (LOCK_EX) around every write
//	  exec/ID                  one JSON record per execution (filename = id)
//	  jobs/JOB/                one directory per job name
//	    ID                     empty membership marker: ID is an execution of JOB
//	    _latest                "HEAD PREV": the newest claim and the one before it
//	    @INSTANT               "ID" of the execution holding (JOB, INSTANT), or
//	                           "ID STATUS" once that record was pruned (tombstone)
//	  active/ID.JOB            empty marker: ID may still be claimed or running
//	  */.tmp.NAME              a write in progress (or left by a crash)
//
// Ids are 13 base-36 digits of Unix nanoseconds, "-" and 6 random base-36
// digits, so they sort by claim time and use only [0-9a-z-]; job names use
// [A-Za-z0-9._:@-]; index names start with "_" or "@" and temporary names
// with ".", so no name of one kind can be mistaken for another, and no id or
// job name can climb out of the store.
//
// No operation reads a directory whose size grows with the number of stored
// executions: show/start/finish open exec/ID; latest reads _latest and then at
// most two records; claim --instant reads one @INSTANT slot; claim --exclusive
// and recover read active/, which holds only executions not yet finished.
// Only list and prune, whose output is proportional anyway, read exec/ or a
// job's directory.
//
// # Crash safety
//
// A record is replaced by writing exec/.tmp.ID, fdatasync, rename over
// exec/ID and fsync of exec/, so after a kill -9 or a power cut at any instant
// exec/ID is the old or the new version, never a mixture; a full disk fails
// the write before the rename, leaving the old version. Stale .tmp files are
// harmless (nothing reads them) and prune deletes them.
//
// Indexes are hints that are verified against the record they name, and they
// are written in an order in which a crash can make them stale but never make
// them omit something that matters:
//
//   - A claim first makes the job's membership marker, the _latest pointer,
//     the @INSTANT slot and the active marker durable (one fsync of each
//     directory), and only then writes the record. So every durable record
//     has durable index entries; an index entry may name a record that never
//     came to exist (the claim died, unacknowledged), and readers treat such
//     an entry as absent.
//   - _latest keeps the previous verified head too, so a dangling head falls
//     back to it; a pointer that is unreadable falls back to reading the job's
//     directory. The pointer is written without fdatasync: its content is
//     checked on every read, and a garbled one only costs that fallback.
//   - An @INSTANT slot is replaced only when the execution it names is
//     failed, abandoned or missing, so a claimed, running, completed or
//     unknown execution for (JOB, INSTANT) is always found through it. A slot
//     that cannot be parsed falls back to reading the job's directory. Prune
//     turns the slot of a pruned completed/unknown record into a tombstone
//     before deleting the record, so pruning never makes an instant
//     claimable again.
//   - An active marker is removed after its record became terminal, without
//     an fsync: a marker resurrected by a crash names a terminal record and is
//     dropped by the next reader that holds the lock.
//
// # Security
//
// The store and every directory in it are created 0700 and every file 0600
// (the lock file too). Open refuses a store that is group- or
// other-writable, not owned by the effective uid, or on NFS, CIFS/SMB, AFS or
// 9P, where flock is emulated or advisory across clients. Records are opened
// with O_NOFOLLOW|O_NONBLOCK and must be small regular files, so a planted
// symlink or FIFO is reported as corrupt instead of followed or blocked on.
//
// # Owners
//
// An owner is host name + boot id + PID + START (field 22 of /proc/PID/stat).
// Recover judges only owners on this host: a different boot id means the
// owner died with that boot; a PID whose START differs is a different
// process; an owner on another host, or one whose identity cannot be read,
// is uncertain and left alone. A running execution whose recorded payload
// child is still alive is not judged, and a fenced claim is left alone for a
// grace period after its fence so that a slow adopter is not beaten.
package ledger
