package joblog

import (
	"hash/crc32"
	"sync"
	"sync/atomic"
)

// Checksum is the CRC-32C (Castagnoli) of b, as crc32.Checksum computes it
// with crc32.MakeTable(crc32.Castagnoli).
//
// That table is dear to make for a process that checks a few frames:
// where the CPU has SSE4.2, MakeTable first builds the hardware path's
// shift tables by running the instruction over 1.5 MB of zeros, in every
// ledger call (a claim checks a log's header and writes a frame, a few
// hundred bytes; bench/README.md has what it cost). So the first smallChecked bytes a
// process checks go through a plain table of 256 entries, made in a
// microsecond and read a byte at a time by crc32 itself, and only a
// process that checks more (list, prune) makes the
// hardware's tables, whose cost it then spreads over megabytes.
func Checksum(b []byte) uint32 {
	if checked.Add(int64(len(b))) > smallChecked {
		return crc32.Checksum(b, castagnoli())
	}
	return crc32.Checksum(b, castagnoliBytewise())
}

// ChecksumOf is Checksum of a and b end to end.
func ChecksumOf(a, b []byte) uint32 {
	tab := castagnoliBytewise()
	if checked.Add(int64(len(a)+len(b))) > smallChecked {
		tab = castagnoli()
	}
	return crc32.Update(crc32.Update(0, tab, a), tab, b)
}

// smallChecked is about what a byte at a time checks in the time the
// hardware's tables take to make.
const smallChecked = 64 << 10

// checked counts the bytes the process has checked.
var checked atomic.Int64

// castagnoli is crc32's own table for CRC-32C, made at first use.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// castagnoliBytewise is CRC-32C's table made here, not by
// crc32.MakeTable: crc32 knows only its own by address, so it reads this
// one a byte at a time, and never makes the hardware's tables for it.
var castagnoliBytewise = sync.OnceValue(func() *crc32.Table {
	t := new(crc32.Table)
	for i := range t {
		c := uint32(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ crc32.Castagnoli
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
})
