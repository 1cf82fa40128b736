// Package jobindex is the file format of a job's index of finished
// executions, jobs/JOB/_ids in a file store (lib/ledger/filestore): where
// each execution of the job's log became terminal, so that a finished
// one is found with no link of its own. (A symbolic link per finished
// execution cost prune an unlink each: bench/README.md.) It encodes,
// parses, searches and merges indexes; the store opens the files (with
// its ownership checks), decides when to write one, and keeps it in step
// with the log.
//
// # On-disk format
//
//	magic   8 bytes "TIDS\0\0\0\2"
//	gen     u64                 the generation of the log it indexes
//	ino     u64                 and its inode (each generation, or copy
//	                            of a log, is a new file)
//	sorted  u64                 how many entries, from the first, are
//	                            sorted by hash (then offset)
//	then 16 bytes per frame that made an execution terminal:
//	hash    u64                 Hash of the execution's id
//	off     u64                 the frame's offset
//
// Every number is little endian. The entries past the sorted ones (the
// tail) are in log order: a finish appends one. The finish that would
// make the tail longer than TailMax writes the index anew, all of it
// sorted (Merge; a temporary file renamed into place). So a lookup costs
// a binary search of the sorted entries and a read of at most TailMax
// entries of tail, however many executions the job holds; a finish costs
// a 16-byte write, and a rewrite of the index every TailMax finishes.
//
// # Invariants
//
// An index is a hint, never the truth: the log is. A reader takes an
// entry only once the frame at its offset is of the id (hashes collide),
// and an index that does not parse, is cut inside its sorted entries, or
// names another log than the one in place (Of: by its inode, and by its
// generation where a frame is read) is not trusted: its job's log is
// read instead. The index is kept as the store keeps its links (see
// "Crash safety" in filestore's doc.go): appended after the frame that
// commits a finish, not flushed, so only the end of a boot can lose what
// it holds, and the first writer of a boot writes it anew from the log.
package jobindex
