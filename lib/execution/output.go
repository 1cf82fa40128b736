package execution

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-sh/tether/lib/runner"
)

// Output kept (ledger run --keep-output, adopt): the payload's stdout and
// stderr each reach it through a pipe of ours, or one pipe for both when
// they are the same file (2>&1, and cron, which gives a job one pipe for
// both). Copiers pass every chunk on to the caller's stream as it comes,
// then append it to the execution's kept tail in the store
// (ledger.Ledger.OpenOutput): one combined stream, in the order ledger
// read the chunks. That order is exact for one pipe; for two it is the
// order the chunks arrived, which is the order written unless the payload
// switches streams within a scheduling tick.
//
// A stream that is a terminal is not interposed, unless quiet: the
// payload keeps the terminal (its size, its job control), and what it
// writes there is not kept. Nothing is interposed (nor kept, nor held
// by quiet) when ledger was started with fd 0, 1 or 2 closed.
//
// The pipes must not keep the runner waiting. EOF comes when the last
// holder of the write end closes it: the payload's group and the
// leftovers the runner stops and reaps. Something that still holds it
// after that (a survivor of KILL, a process that was handed the pipe) is
// given drainTimeout, then the copier stops reading. A caller's stream
// that is a closed pipe (EPIPE) makes the copier close its pipe too, so
// the payload's next write fails with SIGPIPE/EPIPE as it would have
// written there directly; ledger itself catches SIGPIPE so that it is not
// killed by it with the record unfinished.

// DefaultKeepOutput is the tail kept when --keep-output is not given.
const DefaultKeepOutput = 64 << 10

// drainTimeout bounds the reading of the payload's pipes once the payload
// and its leftovers are gone.
const drainTimeout = time.Second

// capture is the interposed output of one payload.
type capture struct {
	warn    func(format string, args ...any)
	streams []*stream
	// Stdout and Stderr are what the payload gets (nil: inherited).
	stdout, stderr *os.File

	// open opens the store's kept tail at the first byte (nil: not
	// kept); limit is its size. The keeper goroutine (keepLoop) writes
	// queue to it when kick says, and closes kept once it is done.
	open  func() (io.WriteCloser, error)
	limit int64
	what  string // "the output of ID", for messages

	mu      sync.Mutex
	queue   *tailBuffer
	kick    chan struct{}
	kept    chan struct{}
	keepErr error // the first error keeping the output
	running bool  // the copiers were started
	// lost is set once a write of the payload's output to the caller's
	// stream failed for another reason than a closed pipe (a full disk):
	// the tool then exits 3 (CONTRACT.md §1.2), not with a success.
	lost atomic.Bool
}

// stream is one pipe between the payload and one of the caller's streams.
type stream struct {
	name string   // "stdout" or "stderr" (or "stdout and stderr")
	r, w *os.File // the pipe; w goes to the payload
	to   *os.File // the caller's stream; nil with quiet
	// held is the stream's tail kept in memory with quiet, printed only
	// when the payload fails.
	held *tailBuffer
	done chan struct{}
	buf  []byte // the copier's
	// broken is set once to's reader is gone (EPIPE): the pipe is closed
	// behind the payload.
	broken bool
}

// newCapture interposes pipes on the payload's stdout and stderr where
// output is kept (keep > 0) or quiet; nothing when neither. hold is the
// size of quiet's in-memory tail of each stream.
func newCapture(warn func(format string, args ...any), keep int64, quiet bool, hold int64) (*capture, error) {
	c := &capture{warn: warn}
	if keep <= 0 && !quiet || !stdOpen() {
		return c, nil
	}
	outTTY, errTTY := isTerminal(os.Stdout), isTerminal(os.Stderr)
	interpose := func(tty bool) bool { return quiet || !tty }
	var out, errs *stream
	var err error
	if interpose(outTTY) {
		if out, err = c.newStream("stdout", os.Stdout, quiet, hold); err != nil {
			return nil, err
		}
		c.stdout = out.w
	}
	switch {
	case out != nil && interpose(errTTY) && sameStream(os.Stdout, os.Stderr):
		out.name = "stdout and stderr"
		c.stderr = out.w
	case interpose(errTTY):
		if errs, err = c.newStream("stderr", os.Stderr, quiet, hold); err != nil {
			c.close()
			return nil, err
		}
		c.stderr = errs.w
	}
	// A write to a closed pipe on fd 1 or 2 must be an error, EPIPE, not
	// the runner's death by SIGPIPE with its record unfinished.
	runner.SurviveEPIPE()
	return c, nil
}

func (c *capture) newStream(name string, to *os.File, quiet bool, hold int64) (*stream, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s := &stream{name: name, r: r, w: w, to: to, done: make(chan struct{})}
	if quiet {
		s.to, s.held = nil, &tailBuffer{limit: hold}
	}
	c.streams = append(c.streams, s)
	return s, nil
}

// interposed reports whether any stream goes through a pipe of ours.
func (c *capture) interposed() bool { return len(c.streams) > 0 }

// start starts the copiers; call it once the payload holds the pipes'
// write ends (or will never run), which it closes here.
func (c *capture) start() {
	if c.running {
		return
	}
	c.running = true
	for _, s := range c.streams {
		s.w.Close()
		go c.copy(s)
	}
}

// keep makes the copiers append to the execution's kept tail, which open
// opens at the first byte: a payload that writes nothing costs the store
// nothing. Call it before the payload's first instruction.
func (c *capture) keep(open func() (io.WriteCloser, error), limit int64, what string) {
	c.mu.Lock()
	c.open, c.limit, c.what = open, limit, what
	c.mu.Unlock()
}

// copy passes s's chunks on until EOF, the drain timeout, or a read error.
func (c *capture) copy(s *stream) {
	defer close(s.done)
	// On the heap (a field), not this goroutine's stack: there 32 KiB
	// would be cleared and the stack grown to 64 KiB, some twenty pages
	// touched even for a payload that prints nothing, and a first touch of
	// a page costs a fault (12-20 µs on these VMs). Fresh from the heap,
	// its pages are touched only as output arrives.
	s.buf = make([]byte, 32<<10)
	buf := s.buf
	for {
		n, err := s.r.Read(buf)
		if n > 0 {
			c.pass(s, buf[:n])
			c.record(buf[:n])
		}
		if err != nil || s.broken {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.warn("stopped reading CMD's %s %v after it ended: another process still holds it", s.name, drainTimeout)
			}
			s.r.Close()
			return
		}
	}
}

// pass writes p to s's caller stream (or quiet's tail).
func (c *capture) pass(s *stream, p []byte) {
	if s.held != nil {
		s.held.Write(p)
		return
	}
	if s.to == nil {
		return
	}
	if _, err := s.to.Write(p); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			// Nobody reads the caller's stream any more: nor will anyone
			// read the payload's.
			s.broken = true
			return
		}
		c.warn("cannot pass CMD's %s on: %v", s.name, unwrapPathErr(err))
		c.lost.Store(true)
		s.to = nil
	}
}

// record queues p for the kept tail. The copier never waits for the
// store: a keeper goroutine writes what is queued, one Write per batch,
// and a queue longer than the limit keeps only its last limit bytes,
// which is all the store would keep of it: a batch after such a gap is
// the whole tail, which the store replaces its tail with whole or not at
// all, never spliced to what it kept before the gap.
func (c *capture) record(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil || c.keepErr != nil {
		return
	}
	if c.queue == nil {
		c.queue = &tailBuffer{limit: c.limit}
		c.kick = make(chan struct{}, 1)
		c.kept = make(chan struct{})
		go c.keepLoop(c.kick)
	}
	c.queue.Write(p)
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// keepLoop writes the queued output to the store until wait closes kick.
func (c *capture) keepLoop(kick <-chan struct{}) {
	defer close(c.kept)
	w, err := c.open()
	for {
		_, more := <-kick
		c.mu.Lock()
		batch := append([]byte(nil), c.queue.Bytes()...)
		c.queue.buf = c.queue.buf[:0]
		c.mu.Unlock()
		if err == nil && len(batch) > 0 {
			_, err = w.Write(batch)
		}
		if !more {
			if w != nil {
				if cerr := w.Close(); err == nil {
					err = cerr
				}
			}
			break
		}
		if err != nil {
			break
		}
	}
	if err != nil {
		c.mu.Lock()
		c.keepErr = err
		c.mu.Unlock()
		c.warn("cannot keep %s: %v", c.what, err)
	}
}

// wait waits for the copiers once the payload and its leftovers are gone:
// at most drainTimeout for a pipe another process still holds. It then
// waits for the keeper to store what is queued, so that all of it is
// stored before the record ends.
func (c *capture) wait() {
	limit := time.Now().Add(drainTimeout)
	for _, s := range c.streams {
		s.r.SetReadDeadline(limit)
	}
	for _, s := range c.streams {
		<-s.done
	}
	c.mu.Lock()
	kick, kept := c.kick, c.kept
	c.kick = nil
	c.mu.Unlock()
	if kick != nil {
		close(kick)
		<-kept
	}
}

// close releases what newCapture made; after wait, or when the payload
// never ran.
func (c *capture) close() {
	for _, s := range c.streams {
		s.w.Close()
		if !c.running {
			s.r.Close()
		}
	}
}

// release prints quiet's held output of each stream to the caller's
// stream: the payload failed.
func (c *capture) release() {
	for _, s := range c.streams {
		if s.held == nil {
			continue
		}
		to := os.Stdout
		if s.name == "stderr" {
			to = os.Stderr
		}
		if _, err := to.Write(s.held.Bytes()); err != nil && !errors.Is(err, syscall.EPIPE) {
			c.warn("cannot print CMD's %s: %v", s.name, unwrapPathErr(err))
			c.lost.Store(true)
		}
	}
}

// unwrapPathErr drops an *os.PathError's "write /dev/stdout:" prefix.
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit int64
	buf   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if int64(len(p)) >= t.limit {
		t.buf = append(t.buf[:0], p[int64(len(p))-t.limit:]...)
		return n, nil
	}
	if int64(len(t.buf)+len(p)) > 2*t.limit {
		// Compact only past twice the limit, so that a stream of small
		// writes costs amortised O(1) a byte.
		t.buf = append(t.buf[:0], t.buf[int64(len(t.buf))-(t.limit-int64(len(p))):]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Bytes returns the tail: the last limit bytes written.
func (t *tailBuffer) Bytes() []byte {
	if over := int64(len(t.buf)) - t.limit; over > 0 {
		return t.buf[over:]
	}
	return t.buf
}

// sameStream reports whether a and b are one open file (2>&1): one pipe
// then serves both, which keeps their order exact. Without kcmp(2), the
// same pipe, socket or device is taken for it, but not two opens of one
// regular file (each has its own offset).
func sameStream(a, b *os.File) bool {
	if same, ok := sameDescription(int(a.Fd()), int(b.Fd())); ok {
		return same
	}
	var sa, sb unix.Stat_t
	if unix.Fstat(int(a.Fd()), &sa) != nil || unix.Fstat(int(b.Fd()), &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino && sa.Mode&unix.S_IFMT != unix.S_IFREG
}

// stdOpen reports whether fds 0, 1 and 2 are all open. Where one is
// closed, a pipe would be given its number, and the payload (or ledger's
// own output) would find the pipe there: nothing is interposed then, and
// the payload inherits the closed descriptor as it would without ledger.
func stdOpen() bool {
	for fd := 0; fd <= 2; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return false
		}
	}
	return true
}
