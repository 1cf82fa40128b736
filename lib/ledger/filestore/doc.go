// Package filestore is the ledger (lib/ledger's contract) kept in plain
// files under one flock, in a folder of one host: *Store implements
// ledger.Ledger, and ledgertest.RunConformance checks it. Only this
// package builds paths inside the store (HandoffDir names the one callers
// need); its durable writes are lib/internal/durable's.
//
// It is the store's semantics (claim, transitions, queries, prune,
// recovery, summaries, outputs, the lock and the store's path) over two
// packages of its own, each with its on-disk format and invariants in its
// doc, to be learnt one at a time: joblog, the CRC-framed log of a job's
// versions (its frames, reads, appends, torn tails), jobindex, the index
// of a job's finished executions (its format, search and merge), and
// wire, the record's stored form that the frames hold (a claim, the
// whole record; a delta against it; their canonical encoding, and the
// stored-bytes readers).
//
// # Synopsis
//
//	st, err := filestore.Open(dir, filestore.LockWarn(warn)) // creates DIR 0700 if missing; st.Close()
//	st, err = filestore.OpenExisting(dir)                     // read-only; ledger.ErrNoStore where there is none
//	rec, err := st.Claim("backup", ledger.ClaimOptions{Owner: owner, Instant: t})
//	rec, err = st.Finish(rec.ID, ledger.Completed, &code, "")
//
// # On-disk layout
//
//	DIR/                       0700, owned by the caller, not group/other-writable
//	  lock                     0600, empty; flock'd (LOCK_EX) around every write
//	  linked                   "BOOT_ID\nids 2\n": every execution has its
//	                           link and every job its index (the note's
//	                           version, 2), and links made during boot
//	                           BOOT_ID need no flush (linked.go)
//	  logs                     "3\n": the store is of this version's format,
//	                           3, job logs whose frames know their log, the
//	                           first release's (format.go): one without it,
//	                           or with another, is refused, not migrated
//	  jobs/JOB/                one directory per job name
//	    _ids                   index of JOB's finished executions: the hash
//	                           of each one's id and the offset of the frame
//	                           that made it terminal, sorted by hash but for
//	                           a tail of at most 1,024 (package jobindex)
//	    _log                   every version of every execution of JOB,
//	                           appended as CRC-framed entries (package
//	                           joblog): a header (naming JOB, the log's
//	                           generation and its random id, each frame's
//	                           CRC covering that id and its offset), then
//	                           a claim frame per
//	                           execution (its whole record) and
//	                           an update frame per later version (a delta
//	                           against the claim)
//	    _summary               cache of the job's summary, counted up to an
//	                           offset of the log, with the executions live
//	                           there and the last instant claimed
//	                           (summary.go)
//	    @INSTANT               symbolic link to "ID", the execution holding
//	                           (JOB, INSTANT), or "ID STATUS" once that record
//	                           was pruned (tombstone)
//	  active/ID                symbolic link to "GEN:OFF:JOB": execution ID may
//	                           still be claimed or running; its newest version
//	                           was at offset OFF of generation GEN of JOB's log
//	  exec/                    empty, if there: made by the first format 3
//	                           builds, never read
//	  output/                  0700, made by the first OpenOutput
//	    ID                     "tether-output 1 LIMIT\n" and the execution's
//	                           output, of which the last LIMIT bytes count
//	  handoff/                 0700, made by the first spawn (HandoffDir)
//	    ID.ack                 a spawned worker's acknowledgement, read and
//	                           removed by its spawn; one left by a killed
//	                           spawn is swept a minute later
//	  */.tmp.NAME              a write in progress (or left by a crash)
//
// Why a log per job: a record per file cost two inodes and a 4 KiB block
// per execution, and a transition a temporary file, a rename and two
// flushes. In the log an execution costs its claim (the whole record), a
// delta per later version (the keys that changed) and 16 bytes of its
// job's index once finished, a fraction of a block (bench/README.md, "The
// file store's figures"); a transition is one pwrite and one fdatasync. While it is live it also has a link, which holds its target
// in its inode (no block for a target under 60 bytes, that is a job name
// under some 48 characters). Links are symbolic links because their
// target is written with the name, atomically, with no data block and no
// file to open; nothing ever follows them. A finished execution has an
// index entry, not a link: prune removed a link per execution it dropped
// (most of its time), and rewrites an index whole instead.
//
// Ids are 13 base-36 digits of Unix nanoseconds, "-", 4 random base-36
// digits and 2 of their job's hint (ledger.NewID; or any chosen
// [0-9a-z-]), so they sort by claim time; job names use
// [A-Za-z0-9._:@-]; names in a job's directory that are not slots start
// with "_", temporary names with ".", so no name of one kind can be
// mistaken for another, and no id or job name can climb out of the store.
//
// What each operation reads: start/finish (and show of a live execution)
// read one link and one or two frames at its offset (the log on from
// there to its end); show of a finished one lists jobs/ and searches the
// indexes of the jobs its id's hint names (ledger.IDHints: one in 1,296
// jobs shares a hint), up to the one holding it (a binary search and at
// most 16 KiB of tail each), and reads one or two frames; an id without
// the hint of its job (chosen, or made before the hints) is searched for
// in the other jobs too (a little more per job searched before it:
// bench/README.md); a claim of a chosen id (ledger run's) looks for it in
// active/ and its own job's index only, not the other jobs' (claim.go,
// freshID);
// latest walks its job's log back from the end to the last claim;
// claim --instant reads one slot; claim --exclusive, claim --every and
// recover read active/, which holds only executions not yet finished (and
// the logs too, while a new boot's links are not yet whole: see "Crash
// safety"); status, check, metrics and list of claimed or running
// executions read active/ and each job's cached summary and the frames
// after it (so that a live execution whose link was removed is named). Only list
// of other statuses and prune, whose output is proportional anyway, walk
// whole logs; prune of one job walks that job's log only. They walk each
// log twice (where each execution's claim and newest version are, then those
// in claim order), and read a version in canonical form from its bytes
// (list --json's object, prune's status and times: wire.AppendStoredJSON,
// StoredFate) instead of decoding it. Prune goes job by job. List merges
// the jobs by id: it reads every log through one set of buffers, with at
// most 128 read-ahead windows of up to 64 KiB (8 MiB) lent to the logs
// read most recently, and keeps open all but an eighth of the open files
// limit of them (up to 16,384), opening one again where it was (unless a
// prune rewrote it meanwhile: that job is reported); so what it holds
// grows by some 350 bytes a job and 16 an execution.
//
// # Crash safety
//
// A version is never modified once written, and a reader never takes one
// that is not whole:
//
//   - Every version is one frame appended at its job's log's end under
//     the lock (package joblog, whose doc argues the frame level: a torn
//     tail is never taken and is cut by the next writer, damage before
//     valid frames is reported, a failed append is cut back: the
//     transition did not happen). Above it, damage is reported for a live
//     execution claimed before it too (a newer version of it may be what
//     was damaged), writers refuse to change such an execution, and prune
//     refuses to rewrite that log.
//   - A transition is a compare-and-swap: under the lock the execution's
//     newest version is read, the transition checked against it, and the
//     new version appended, or refused with nothing written. A terminal
//     version is never followed by another.
//   - A claim makes its link, active/ID, and its instant's slot (a link
//     to "ID", renamed over any slot of a failed or abandoned holder),
//     makes the slot durable (fsync of the job's directory), and then
//     appends its frame: the frame is the commit. So every durable claim
//     has a durable slot; a link or slot that names a claim that never
//     came to exist (it died before its frame) is read as no record, and
//     removed by the next recover or claim that finds it. A new job's log
//     is created whole (header, fdatasync, rename) and its directory and
//     jobs/ fsynced before anything is appended.
//   - The link is not flushed, nor is an index entry: only the end of
//     the boot can lose them. A process killed at any instant loses
//     nothing the kernel holds; a power cut or a crash of the machine may
//     lose any link or entry not flushed, and ends the boot. The note
//     "linked" names the boot during which every live execution of the
//     logs was last given its link and every job its index, all flushed;
//     it is written (temporary file, fdatasync, rename, fsync) after
//     them. The first writer of a boot, under the lock and before
//     anything else, finds the note of another boot, reads every log,
//     links each live execution that has no link, writes each index that
//     does not hold what its log says (fdatasync, rename, fsync; one that
//     holds it, in whatever order, stays), flushes active/,
//     and writes the note. Until then active/ and the indexes may miss an
//     execution: readers that find no link for an id look for it in every
//     log, and those that list live executions add the logs' (slower,
//     never wrong). Where the boot id is unknown, every claim flushes
//     active/ before its frame, as it did before the note, and every
//     index entry is flushed before its execution's link goes. (A file
//     system torn away without a sync, a disk pulled out, and mounted
//     again in the same boot is not seen: remove DIR/linked to have the
//     next writer relink.)
//   - Links after the claim are hints: each later version re-points the
//     link at its frame (a new link renamed over the old, not flushed).
//     A terminal version appends its execution's entry to its job's
//     index (package jobindex), or, every 1,024, writes the index anew, sorted
//     (temporary file, rename), not flushed either, and then removes the
//     link from active/: during a boot, every finished execution is in its job's
//     index or still linked in active/. A reader verifies a link or an
//     entry against the log: a frame at its offset that is not of its
//     execution, or of another generation, makes it walk the whole log; a
//     live execution's newer versions are found by reading on to the
//     end. After a crash a link may be stale or in active/ still, with
//     or without its entry: each is found and gives the newest version,
//     and whoever next reads active/ under the lock (recover, claim
//     --exclusive, --every) indexes a terminal one and removes its link.
//     An index that is missing, damaged or not of the log in place (a
//     prune cut short) is not trusted: its job's log is read instead, and
//     the next terminal version in the job writes it anew. This relies on
//     the file system committing a rename whole and in order with the
//     operations before it (ext4, xfs and btrfs do).
//   - The cached summary is only a cache (see summary.go): renamed into
//     place, never flushed, checked by its CRC, and recounted from the log
//     when it cannot be trusted; whoever recounts it writes it anew (a
//     writer under the lock; a reader that is the store's owner, under
//     the lock if it is free at once), so a lost cache costs one
//     recount. Counts never depend on markers: each execution becomes
//     terminal in exactly one frame of the log.
//   - Damage a crash cannot make is reported, never read past
//     (damage.go): a log only grows, and every file derived from it is
//     written after the frames it names are durable, so a log that ends
//     before its cached summary's count, its index's last entry or a
//     live link's offset, or is missing while its summary or index
//     remain, was cut short or removed by something else; a log whose
//     header names another job was copied in; a frame valid only at
//     another offset or in another log (joblog) is a log doubled or
//     spliced. Readers report each (ErrCorrupt) instead of showing fewer
//     or doubled records, and writers refuse to append after it. A slot
//     that does not answer (missing, garbled, naming no execution or one
//     of another instant) is checked against the log, which is walked
//     only for an instant not later than every one the log holds (its
//     cached summary's last, and the claims after it): a log's execution
//     holding the slot refuses the claim as damage. A live execution's
//     link removed is restored from the cached summary's live executions
//     and the frames after it by whoever reads active/ under the lock
//     for a job (claim --exclusive, --every; recover for every job),
//     and reported by the readers of summaries until then; a
//     link naming a job with no folder, or a job whose log does not hold
//     its id and whose hint its id does not bear, is damage. What stays
//     unseen: a cut exactly at the start of a live execution's claim
//     frame, when that claim is the log's last frame and nothing else
//     names it, is what a claim killed before its frame leaves, and
//     reads as no record, as that does.
//   - Prune writes the log's next generation under a temporary name (its
//     header counting what it drops, then each kept execution's newest
//     version as one claim frame), fdatasyncs it, makes the tombstones of
//     dropped completed and unknown executions' slots durable, removes
//     the job's index, renames the new log over the old and fsyncs the
//     job's directory; only then does it write the new log's index (of
//     the kept finished executions), re-point the kept live ones' links
//     and remove the dropped executions' outputs. Killed before the
//     rename, nothing changed but the index, whose job's log is read
//     until a write makes it anew; after it, stale links are walked past
//     as above.
//   - A hard link to a log made by anyone else (a `cp -al` snapshot) is
//     never written through (joblog copies it first); an index with
//     another link is written anew (renamed into place), never appended
//     to. Temporary files are always created afresh (O_EXCL, a stale one
//     unlinked first), and links are replaced by rename, never written.
//
// # Security
//
// The store and every directory in it are created 0700 and every file 0600
// (the lock file too). Open refuses a store that is group- or
// other-writable, not owned by the effective uid, or on NFS, CIFS/SMB, AFS or
// 9P, where flock is emulated or advisory across clients. It also refuses a
// store whose parent chain (every folder from / down) is owned by a user
// other than you and root, or is writable by group or others without the
// sticky bit: that user could rename the store away and put another in its
// place (sshd's StrictModes rule). Open walks that chain folder by folder,
// each opened relative to the one before (O_NOFOLLOW; a symbolic link in a
// checked folder is followed by walking its target the same way), and
// opens the store's folder once (O_DIRECTORY|O_NOFOLLOW) with jobs/ and
// active/: every later open, link, rename, exchange, unlink, listing
// and the flock are relative to those descriptors (the *at calls), so
// swapping the store's path for a symbolic link after Open redirects
// nothing. A store removed since Open stays removed for its Store (Gone).
//
// Monitoring reads (ledger status, check, metrics) by root of a store
// another user owns go through ReadAsOwner: the process takes that user's
// effective uid (its group the store's, no supplementary groups) for the
// time of the read, and every rule above applies unchanged, as to the
// owner. The threat is the owner: it can change its store and every
// folder on the way that it owns while root reads, plant symbolic links,
// FIFOs or huge files in it. Reading with the owner's rights, through the
// owner's rules (records O_NOFOLLOW|O_NONBLOCK, small regular files owned
// by the store's owner), root can be led only to what the owner could read
// itself, and then only to report it to root; no write is made (the command
// writes its own output, a metrics file, as root after switching back). A
// store of root's is read as root only along a way that only root can
// change (checkAncestor). The owner deciding what its own jobs look like is
// not a threat: it is its data. latest, show, list and output read so too.
//
// A group may read a store (OpenExisting, never Open): where the store's
// folder grants read and search to a group the caller is in and is
// writable by its owner alone, the read-only open accepts it (checkReader),
// accepts folders on the way owned by the store's owner (its home), each
// file owned by the owner of its folder (checkOwnedIn), creates nothing
// and never opens the lock, which stays 0600: every write is refused
// (ledger.ErrUnsafeStore). Its view is whole frame by frame, not a
// transaction. Once the owner has opened the folder to its group (chmod
// g+rX of every file but the lock, which a reader never needs: README,
// Monitoring), what it creates later inherits the group
// and its read bit (durable.Inherit): files 0640, folders 0750, whatever
// the umask. Without group read and search the store stays 0700/0600.
//
// # Lock waits
//
// A write that finds the lock taken waits for it; after a second it says
// so through the LockWarn callback, naming the holder from /proc/locks
// (read then, not written on every lock), and after the LockTimeout
// (DefaultLockTimeout, 60s: every writer holds the lock for milliseconds,
// so only a stopped or hung process holds it that long) it gives up with
// ledger.ErrLockTimeout, having changed nothing. Readers (Get, Latest,
// List) do not take the lock: they take whole frames only (see "Crash
// safety"). Logs and summaries are opened with O_NOFOLLOW|O_NONBLOCK and
// must be regular files, so a planted symlink or FIFO is reported as
// corrupt instead of followed or blocked on; links are read, never
// followed.
package filestore
