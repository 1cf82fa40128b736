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
//	magic   u32 "TLG2"          (little endian, as every number here)
//	n       u32                 length of the body
//	crc     u32                 CRC-32C of the frame's place, then its
//	                            body: the log's id (u64) and the frame's
//	                            offset (u64), which are not stored in it
//	                            (both 0 for the header), then the body
//	body    n bytes             kind (1 byte), id (its length, 1 byte, then
//	                            the id), ref (u64), payload
//	n       u32                 the length again, so the log can be walked back
//
// The first frame is the header (KindHeader, its id the job's name, ref
// the log's generation, the payload the log's id, a random u64 made with
// the log, then the store's summary of what prune removed); then each
// claim is a KindClaim frame holding the record whole (package wire's
// Encode), and each later version a KindUpdate frame whose ref is
// the offset of the execution's claim frame and whose payload is that
// version as a delta against it (wire.EncodeDelta), a fraction of its
// size. A version is never rewritten; prune writes a new generation whole
// (Writer), with an id of its own, which is renamed over the log; a copy
// of a log (Open's, of one with another link) keeps its id.
//
// So a frame is valid only where it was written: a log copied into
// another job's folder names its job (the store compares), and a frame
// read at another offset or in another log (a log doubled, `cat _log >>
// _log`, or another's frames spliced in) fails its CRC, at no byte of its
// own. Format TLG1 (the CRC of the body alone, a header naming no job)
// was never released; its frames are no frames here.

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
//   - A torn tail is never longer than one frame (each append is durable
//     before the next starts): than the frame its head declares, or than
//     MaxFrame where its head is lost. Where no valid frame starts and
//     more than that follows, it is damage, not a torn tail (a frame
//     damaged before others, a log doubled or spliced, a run of zeros
//     appended): readers report it (ledger.ErrCorrupt) and writers refuse
//     to append after it. That is decided by one read of the frame's head
//     and the file's size, however long the rest is: never by looking for
//     a valid frame in gigabytes of zeros.
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
