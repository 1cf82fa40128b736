package sigstate

import (
	"syscall"
	"unsafe"
)

// sigStkflt is a synchronous fault, as SEGV is; syscall names it only on
// some ports.
const sigStkflt = 16

// tableLen is the length of the runtime's fwdSig, _NSIG, on every Linux
// port but mips (129), where the table is not found and load falls back.
const tableLen = 65

// anchor has fwdSig's type, so that one pass over the symbol table's
// objects of that size finds both: its address against its symbol's value
// is the load bias of a position-independent executable.
var anchor [tableLen]uintptr

const (
	anchorName = "github.com/tether-sh/tether/lib/internal/sigstate.anchor"
	tableName  = "runtime.fwdSig"
)

// The runtime's dispositions.
const (
	sigDFL = 0
	sigIGN = 1
)

func load() (mask uint64, exact bool) {
	if table, ok := readTable(); ok {
		for s := 1; s <= nsig; s++ {
			if table[s] == sigIGN {
				mask |= 1 << (s - 1)
			}
		}
		exact = true
	}
	// The signals the runtime leaves alone: the kernel still shows them.
	for s := syscall.Signal(1); s <= nsig; s++ {
		if kernelIgnores(s) {
			mask |= 1 << (s - 1)
		}
	}
	return mask, exact
}

// kernelIgnores reports whether sig's disposition is SIG_IGN now.
func kernelIgnores(sig syscall.Signal) bool {
	var old struct {
		handler  uintptr
		flags    uint64
		restorer uintptr
		mask     uint64
	}
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	return e == 0 && old.handler == sigIGN
}

// Restore sets every Passed signal to SIG_IGN with the raw system call,
// for a process about to exec (the gate) that cannot go through
// os/signal. A Go program that goes on running must use signal.Ignore
// instead: the runtime resets the signals it handles in every child it
// forks, and only signal.Ignore tells it not to handle one.
func Restore() {
	for _, s := range Passed() {
		setAction(s, sigIGN)
	}
}

// Ignore sets sig's action to SIG_IGN with the raw system call, behind
// the Go runtime's back, for a process about to exec (the gate): a
// synchronous fault that comes after it kills the process (the kernel
// resets an ignored fault to the default), as a fault of a C program whose
// caller ignored it does.
func Ignore(sig syscall.Signal) { setAction(sig, sigIGN) }

// Default sets sig's action to the default (SIG_DFL) with the raw system
// call, behind the Go runtime's back: os/signal can only give a signal
// back to the runtime's handler. For a process about to raise sig to die
// of it (lib/internal/sigdefault); the runtime must not be catching sig
// for os/signal afterwards.
func Default(sig syscall.Signal) { setAction(sig, sigDFL) }

// setAction sets sig's handler (sigDFL or sigIGN) with rt_sigaction.
func setAction(sig syscall.Signal, handler uintptr) {
	var act struct {
		handler  uintptr
		flags    uint64
		restorer uintptr
		mask     uint64
	}
	act.handler = handler
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
}

// readTable returns a copy of the runtime's fwdSig, found through
// /proc/self/exe's symbol table and read through /proc/self/mem (a wrong
// address is then an error, never a fault). Every entry is checked to be
// a disposition the runtime can have recorded at start.
func readTable() (table [tableLen]uintptr, ok bool) {
	tableAddr, anchorAddr, ok := findSymbols()
	if !ok {
		return table, false
	}
	bias := uintptr(unsafe.Pointer(&anchor)) - anchorAddr
	fd, err := syscall.Open("/proc/self/mem", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return table, false
	}
	defer syscall.Close(fd)
	buf := (*[tableLen * 8]byte)(unsafe.Pointer(&table))[:]
	if !preadFull(fd, buf, int64(tableAddr+bias)) {
		return table, false
	}
	for _, h := range table {
		if h != sigDFL && h != sigIGN {
			// Not a table of start-up dispositions: not the runtime's.
			return [tableLen]uintptr{}, false
		}
	}
	return table, true
}

// ELF64 layout (little-endian): the offsets this reader needs.
const (
	ehdrSize   = 64
	shdrSize   = 64
	symSize    = 24
	shtSymtab  = 2
	sttObject  = 1
	maxSymtab  = 64 << 20
	maxSection = 1 << 12
)

// findSymbols scans the executable's .symtab for fwdSig and the anchor:
// only objects of the table's size are candidates, and only their names
// are read from .strtab, so the scan reads the symbol table at most once
// (about 0.2 MB for ledger) and the string table hardly at all. It scans
// from the end and stops once it has found both: Go's linker lists data
// after code and the zeroed data last, so both are in the last few chunks
// (ledger reads 4 chunks of its table, not 27; each is a system call).
// The symbol table's size is a multiple of symSize: a chunk holds whole
// symbols.
func findSymbols() (tableAddr, anchorAddr uintptr, ok bool) {
	fd, err := syscall.Open("/proc/self/exe", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, false
	}
	defer syscall.Close(fd)
	var eh [ehdrSize]byte
	if !preadFull(fd, eh[:], 0) || string(eh[:4]) != "\x7fELF" || eh[4] != 2 || eh[5] != 1 || !littleEndian() {
		return 0, 0, false
	}
	shoff, shentsize, shnum := le64(eh[40:]), le16(eh[58:]), le16(eh[60:])
	if shentsize != shdrSize || shnum == 0 || shnum > maxSection {
		return 0, 0, false
	}
	sh := make([]byte, int(shnum)*shdrSize)
	if !preadFull(fd, sh, int64(shoff)) {
		return 0, 0, false
	}
	section := func(i int) []byte { return sh[i*shdrSize : (i+1)*shdrSize] }
	for i := 0; i < int(shnum); i++ {
		s := section(i)
		if le32(s[4:]) != shtSymtab || le64(s[56:]) != symSize {
			continue
		}
		size, link := le64(s[32:]), int(le32(s[40:]))
		if size > maxSymtab || link >= int(shnum) {
			return 0, 0, false
		}
		symOff := le64(s[24:])
		strtab := section(link)
		strOff, strSize := le64(strtab[24:]), le64(strtab[32:])
		if size%symSize != 0 {
			return 0, 0, false
		}
		var foundTable, foundAnchor bool
		// In chunks of a buffer that stays on the stack: the scan
		// allocates nothing on the heap.
		var chunk [341 * symSize]byte
		for end := size; end > 0 && !(foundTable && foundAnchor); {
			n := min(uint64(len(chunk)), end)
			end -= n
			if !preadFull(fd, chunk[:n], int64(symOff+end)) {
				return 0, 0, false
			}
			for off := uint64(0); off+symSize <= n; off += symSize {
				sym := chunk[off : off+symSize]
				if sym[4]&0xf != sttObject || le64(sym[16:]) != tableLen*8 {
					continue
				}
				name := uint64(le32(sym[0:]))
				switch {
				case nameIs(fd, strOff, strSize, name, tableName):
					tableAddr, foundTable = uintptr(le64(sym[8:])), true
				case nameIs(fd, strOff, strSize, name, anchorName):
					anchorAddr, foundAnchor = uintptr(le64(sym[8:])), true
				}
			}
		}
		return tableAddr, anchorAddr, foundTable && foundAnchor
	}
	return 0, 0, false
}

// nameIs reports whether the string table entry at off is want.
func nameIs(fd int, strOff, strSize, off uint64, want string) bool {
	if off+uint64(len(want)) >= strSize {
		return false
	}
	buf := make([]byte, len(want)+1)
	return preadFull(fd, buf, int64(strOff+off)) && string(buf[:len(want)]) == want && buf[len(want)] == 0
}

func preadFull(fd int, b []byte, off int64) bool {
	for len(b) > 0 {
		n, err := syscall.Pread(fd, b, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return false
		}
		b, off = b[n:], off+int64(n)
	}
	return true
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 { return uint32(le16(b)) | uint32(le16(b[2:]))<<16 }
func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }
