// Package durable writes files so that a reader, or a crash, sees either
// the old content of a name or the new one, complete: the renameio
// pattern (stage a temporary file next to the destination, flush it,
// rename it into place, flush the directory), relative to an
// open directory so that nothing is resolved through a path twice.
//
// # Synopsis
//
//	d := durable.Dir{FD: dirfd, Path: "/var/lib/x"}   // Path is for messages only
//	err := durable.WriteSynced(d, "name", data)        // stage, fdatasync, rename, fsync d
//	p, err := durable.Stage(d, "name", data, true)     // or by hand: ...
//	err = p.Commit()                                   // rename; then d.Sync()
//	err = durable.WriteFile("/run/x/ack", data, 0o600) // by path, for one-off files
//	err = durable.PwriteAll(fd, b, off)                // and the positioned reads and
//	err = durable.PreadFull(fd, b, off)                // writes of files written in place
//
// # What it guarantees after a crash
//
// Once a call that ends with a flush of the directory (WriteSynced,
// WriteFile, or Commit followed by Dir.Sync) returns nil, a power
// cut leaves the name holding the new content. Before it returns, or if
// it fails, the name holds the old content or the new one, each complete:
// the new data is flushed (fdatasync: the data and the size, which is all
// a reader needs) before the rename makes it visible.
//
// # What it does not guarantee
//
//   - That a crash leaves no debris: a temporary file (".tmp.NAME", or
//     ".NAME.tmp*" for WriteFile) may stay behind. Nothing reads them;
//     whoever owns the directory removes them.
//   - Any order between two directories, or between two names in one
//     directory when the directory is not flushed between them: callers
//     that need an order flush in between (Dir.Sync).
//   - Exclusion: two writers of one name must be serialised by the
//     caller (a lock).
//   - Durability on a file system or device that acknowledges flushes it
//     has not made (some network file systems, write caches without power
//     loss protection), or after a flush error: a failed fsync of the
//     directory means the rename may or may not survive a crash, and is
//     reported as an error.
//   - mtime or other metadata of the file beyond its size (fdatasync).
//
// # Blocking
//
// Every call blocks its goroutine in fdatasync(2) or fsync(2) until the
// device has the data: milliseconds on a local disk, unbounded on a hung
// device. There is no timeout or cancellation; EINTR is retried.
package durable
