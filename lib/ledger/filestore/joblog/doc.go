// Package joblog is a file store's job log, jobs/JOB/_log
// (lib/ledger/filestore): every version of every execution of one job,
// appended under the store's lock as CRC-framed entries, read back by
// offset, walked forward or back, and written whole for a new generation.
// What a frame's payload means (a record, a delta, the summary in the
// header) is the store's: here a payload is bytes.
//
// # On-disk format
//
// Each frame:
//
//	magic   u32 "TLG1"          (little endian, as every number here)
//	n       u32                 length of the body
//	crc     u32                 CRC-32C of the body (Checksum)
//	body    n bytes             kind (1 byte), id (its length, 1 byte, then
//	                            the id), ref (u64), payload
//	n       u32                 the length again, so the log can be walked back
//
// The first frame is the header (KindHeader, ref the log's generation,
// the payload the store's summary of what prune removed); then each claim
// is a KindClaim frame holding the record whole (ledger's Record.Encode),
// and each later version a KindUpdate frame whose ref is the offset of
// the execution's claim frame and whose payload is that version as a
// delta against it (Record.EncodeDelta), a fraction of its size. A
// version is never rewritten; prune writes a new generation whole
// (Writer), which is renamed over the log.
//
// # Crash safety
//
// A version is never modified once written, and a reader never takes one
// that is not whole:
//
//   - A frame is appended at the log's end (Append, under the store's
//     lock) with one pwrite and one fdatasync, its length and CRC-32C
//     before it and its length after. A crash can leave only the last
//     frame torn, which no reader takes (its length, trailer or CRC is
//     wrong): readers stop at a frame that is not valid when nothing
//     valid follows it (a torn tail, or a frame being appended), and the
//     next writer truncates it (Open for writing finds the valid end)
//     before it appends.
//   - A frame that is not valid with a valid one after it is damage, not
//     a torn tail: readers report it (ledger.ErrCorrupt) and writers
//     refuse to append after it.
//   - A failed pwrite or fdatasync (a full disk, an I/O error) cuts the
//     log back to where it was and reports the error: the frame did not
//     happen. (A reader may have seen it meanwhile; it never reached the
//     disk as a commit.)
//   - A frame read in two parts whose second part does not continue it (a
//     writer cut a torn tail and appended in between) is no frame
//     (ErrFrame), never an empty one.
//   - A log written whole (a new job's, prune's next generation, a copy)
//     is written under a temporary name, fdatasync'ed and renamed into
//     place (Writer.Commit; the caller fsyncs the directory), so the name
//     holds the old log or the new one, each whole.
//   - A hard link to a log made by anyone else (a `cp -al` snapshot) is
//     never written through: Open for writing copies a log that has
//     another link and renames the copy into place first.
//
// Logs are opened O_NOFOLLOW|O_NONBLOCK and must be regular files (and
// pass the store's ownership check), so a planted symbolic link or FIFO
// is reported as corrupt instead of followed or blocked on.
package joblog
