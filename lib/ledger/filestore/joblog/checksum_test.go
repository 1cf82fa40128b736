package joblog

import (
	"hash/crc32"
	"testing"
)

// TestChecksum: both ways of checking give crc32's CRC-32C, across the
// switch from a byte at a time to the hardware's tables.
func TestChecksum(t *testing.T) {
	want := func(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
	long := make([]byte, smallChecked+1)
	for i := range long {
		long[i] = byte(i * 7)
	}
	for _, b := range [][]byte{nil, {0}, []byte("123456789"), long[:300], long[:4097], long} {
		if got := crc32.Checksum(b, castagnoliBytewise()); got != want(b) {
			t.Errorf("bytewise CRC-32C of %d bytes = %08x; want %08x", len(b), got, want(b))
		}
		if got := Checksum(b); got != want(b) {
			t.Errorf("Checksum(%d bytes) = %08x; want %08x", len(b), got, want(b))
		}
	}
	// The check value of CRC-32C (RFC 3720, B.4).
	if got := Checksum([]byte("123456789")); got != 0xe3069283 {
		t.Errorf("Checksum(123456789) = %08x; want e3069283", got)
	}
}
