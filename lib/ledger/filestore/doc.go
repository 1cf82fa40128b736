// Package filestore is the ledger (lib/ledger's contract) kept in plain
// files under one flock, in a folder of one host: *Store implements
// ledger.Ledger, and ledgertest.RunConformance checks it. Only this
// package builds paths inside the store (HandoffDir names the one callers
// need); its durable writes are lib/internal/durable's.
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
//	  exec/ID                  one JSON record per execution (filename = id)
//	  exec/.tmp.spare          the inode the next record update is written into
//	  jobs/JOB/                one directory per job name
//	    ID                     membership marker: ID is an execution of JOB
//	    _latest                "HEAD PREV": the newest claim and the one before it
//	    .tmp.spare             the inode the next _latest is written into
//	    @INSTANT               "ID" of the execution holding (JOB, INSTANT), or
//	                           "ID STATUS" once that record was pruned (tombstone)
//	    _summary               the job's summary (Summaries): counts by terminal
//	                           status, the last finished and last completed
//	                           records (copies); finishes are settled into
//	                           it in batches
//	  summaries                empty; the store keeps job summaries (a store
//	                           without it is migrated by Open)
//	  output/                  0700, made by the first OpenOutput
//	    ID                     "tether-output 1 LIMIT\n" and the execution's
//	                           output, of which the last LIMIT bytes count
//	  active/ID.JOB            marker: ID may still be claimed or running, or
//	                           finished and not yet counted in its job's
//	                           _summary (see "Crash safety")
//	  handoff/                 0700, made by the first spawn (HandoffDir)
//	    ID.ack                 a spawned worker's acknowledgement, read and
//	                           removed by its spawn; one left by a killed
//	                           spawn is swept a minute later
//	  */.tmp.NAME              a write in progress (or left by a crash)
//
// A claim's two markers are one empty file, jobs/JOB/ID, and a hard link
// to it, active/ID.JOB (or a second empty file where a link is
// impossible): an inode and no data block. Only their names mean
// anything; nothing reads their content. (The version before summaries
// made them hard links to the record's first version, which kept that
// version's inode and block alive beside the record's: such markers
// still work, and the spare logic below never writes through them.)
//
// Ids are 13 base-36 digits of Unix nanoseconds, "-" and 6 random base-36
// digits, so they sort by claim time and use only [0-9a-z-]; job names use
// [A-Za-z0-9._:@-]; index names start with "_" or "@" and temporary names
// with ".", so no name of one kind can be mistaken for another, and no id or
// job name can climb out of the store.
//
// No operation reads a directory whose size grows with the number of stored
// executions: show/start/finish open exec/ID; latest reads _latest and then at
// most two records; claim --instant reads one @INSTANT slot; claim --exclusive,
// claim --every, recover and list of claimed or running executions read
// active/, which holds only executions not yet finished (and at most a few
// finished ones per job, waiting to be counted in its summary); Summaries reads each
// job's _summary and _latest and active/. Only list of other statuses and
// prune, whose output is proportional anyway, read exec/ or a job's
// directory; prune of one job (ledger.PruneOptions.Job) reads that job's directory
// only, so retention after each finish costs what the job keeps.
//
// # Crash safety
//
// A record is never modified where a reader or a crash could see it:
//
//   - A claim writes the record to exec/.tmp.ID and fdatasyncs it; exec/ID
//     appears only by rename(2) after that, followed by an fsync of exec/.
//   - An update (start, finish, fence, adopt, recording the child, abort,
//     recovery) writes the new version in place into exec/.tmp.spare, an
//     existing file that nothing reads (pwrite, ftruncate to the new
//     length, fdatasync), swaps it with exec/ID by renameat2
//     RENAME_EXCHANGE, and fsyncs exec/. At every instant exec/ID names
//     either the old inode, whose content is untouched, or the new one,
//     complete and durable before the exchange; the old inode is now the
//     spare. The spare is written only under the lock, and only after the
//     exchange that made it the spare was made durable by that fsync (if
//     the fsync fails the spare is unlinked instead), so after a power cut
//     exec/ID never names an inode that was since overwritten. Where
//     RENAME_EXCHANGE is unsupported (EINVAL, ENOSYS, EOPNOTSUPP), the
//     written spare is renamed over exec/ID instead, and the store's later
//     updates stage a fresh exec/.tmp.ID and rename it, fdatasync first.
//
// A full disk fails the write, ftruncate or fdatasync of the spare or the
// temporary file, before the exchange or rename, leaving the old version.
// A crash may leave a garbled spare or a stale .tmp file: nothing reads
// them, and prune deletes them (the next update then creates a new spare).
// The spare is written into only while it has no other link: a record's
// inode has none (its markers are a file of their own), so updates rotate
// inodes without allocating any, and a claim costs two inodes (the
// record's and its markers', which has no data block), and no write frees
// one. A hard link made by anyone else (a `cp -al` snapshot, one planted at
// the spare's name, a marker made by the version before summaries) is
// never written through: that spare's name is removed and a fresh spare
// created (O_EXCL). A temporary file is always created afresh (O_EXCL, a
// stale one unlinked first).
//
// Indexes are hints that are verified against the record they name, and they
// are written in an order in which a crash can make them stale but never make
// them omit something that matters:
//
//   - A claim makes the job's membership marker, the _latest pointer, the
//     @INSTANT slot and the active marker durable (one fsync of each
//     directory) before the rename that creates exec/ID. The two markers
//     are one empty inode, linked twice; these fsyncs
//     run concurrently with the record's fdatasync, which is independent of
//     them (only the rename must follow all of them). So every durable
//     record has durable index entries; an index entry may name a record
//     that never came to exist (the claim died, unacknowledged), and
//     readers treat such an entry as absent.
//   - _latest keeps the previous verified head too, so a dangling head falls
//     back to it; a pointer that is unreadable falls back to reading the job's
//     directory. The pointer is replaced like a record, through the job's
//     own spare (written, fdatasynced, exchanged; the job directory's fsync
//     is the one above), so after a power cut it holds the old or the new
//     pointer, never an older one left in an overwritten inode. A new file
//     and rename per claim would do too, but on ext4 without a journal each
//     freed inode lengthens the next allocations' search (it skips inodes
//     freed in the last seconds): 10% of a claim's CPU in a loop of claims.
//   - An @INSTANT slot is written to a new file, fdatasync'ed and renamed,
//     and replaced only when the execution it names is failed, abandoned or
//     missing, so a claimed, running, completed or unknown execution for
//     (JOB, INSTANT) is always found through it. A slot that cannot be
//     parsed falls back to reading the job's directory. Prune turns the
//     slot of a pruned completed/unknown record into a tombstone before
//     deleting the record, so pruning never makes an instant claimable
//     again.
//   - An active marker is removed after its record became terminal and was
//     counted in its job's summary, without an fsync: a marker resurrected
//     by a crash names a terminal record and is dropped by the next reader
//     that holds the lock.
//   - A finish writes its record only; the execution's active marker
//     stays, now naming a terminal record, until the finish is settled:
//     counted into the job's _summary, rewritten through the job's spare
//     (like _latest), and only then the marker removed. Readers count the
//     terminal records still marked in what they return. Settling is done
//     in batches under the lock by whoever goes through the job's markers
//     (recover, claim --exclusive or --every, prune, which settles before
//     it deletes anything and never deletes a record still marked), or by
//     a finish that leaves the job more than 8 markers; so a finish costs
//     no flush more than before, and active/ holds at most a few finished
//     executions per job. A writer killed between a summary and the
//     removal of the markers leaves markers of records that the summary's
//     "counted" list (the last batch at least) holds: they are removed,
//     not counted again. So every finish is counted once. The counts and
//     the two records are copies, so prune never changes them; a summary
//     that does not parse is rebuilt from the records by the next settle.
//     A store written before summaries existed has no root "summaries"
//     file: Open, under the lock, writes each job's summary from the
//     records it holds (and removes the markers of terminal ones, which it
//     counted), then creates that file durably; a migration cut short is
//     redone whole. (A version before summaries writing the store after
//     that does not count its finishes.)
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
// opens the store's folder once (O_DIRECTORY|O_NOFOLLOW) with exec/, jobs/
// and active/: every later open, link, rename, exchange, unlink, listing
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
// file owned by the owner of its folder (checkOwnedIn), creates and
// migrates nothing and never opens the lock, which stays 0600: every write
// is refused (ledger.ErrUnsafeStore). Its view is a snapshot file by file (every
// file is renamed into place whole). Once the owner has opened the folder
// to its group (chmod -R g+rX), what it creates later inherits the group
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
// ledger.ErrLockTimeout, having changed nothing. Readers (Get, Latest, List) do
// not take the lock; one that opens a record just as a writer exchanges it
// with the spare may read another record's bytes, which the decoder's id
// check catches: it reads the record again (a few times at most) before
// calling it corrupt. Records are opened
// with O_NOFOLLOW|O_NONBLOCK and must be small regular files, so a planted
// symlink or FIFO is reported as corrupt instead of followed or blocked on.
package filestore
