package egress

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A tunnel's pipe keeps the kernel's default size (16 pages): each one is
// charged to its user's pipe allowance (pipe-user-pages-soft), which a
// larger pipe per connection would spend for every other process of the
// user. What one splice moves is at most what the pipe holds.

// deadlineEvery: a deadline is moved forward at most this often (and at
// least every half idle timeout), not at each call: each move is a timer's
// reset.
const deadlineEvery = time.Second

// errIdle: the tunnel passed no byte either way for IdleTimeout.
var errIdle = errors.New("idle")

// errUrgent: src's next byte is TCP urgent data, which splice(2) does not
// pass (it answers EAGAIN at the mark, for ever).
var errUrgent = errors.New("urgent data")

// splicePump copies src to dst through a pipe with splice(2): the bytes go
// from one socket to the other inside the kernel, never through a buffer
// of the proxy's. It waits on Go's poller (RawConn), so deadlines and
// Close end it as they end a Read; each call's bytes are counted against
// the side's counter and the budget. ok is false when either end is not a
// TCP socket (a test's or an embedder's conn), or when src's next byte is
// TCP urgent data (splice does not pass it): pump then copies the rest.
func (s *session) splicePump(w *sideWriter, src, dst net.Conn) (ok bool) {
	in, ok1 := src.(syscall.Conn)
	out, ok2 := dst.(syscall.Conn)
	if !ok1 || !ok2 {
		return false
	}
	rin, err1 := in.SyscallConn()
	rout, err2 := out.SyscallConn()
	if err1 != nil || err2 != nil {
		return false
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return false
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	chunk := 64 << 10
	if n, err := unix.FcntlInt(uintptr(p[1]), unix.F_GETPIPE_SZ, 0); err == nil {
		chunk = n
	}
	err := s.spliceLoop(w, src, dst, rin, rout, p, chunk)
	switch {
	case errors.Is(err, errUrgent):
		// splice(2) stops at TCP urgent data; read(2) steps over it:
		// the rest of this direction is copied.
		return false
	case errors.Is(err, io.EOF):
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			return true
		}
		s.close()
	default:
		s.cut(err)
	}
	return true
}

func (s *session) spliceLoop(w *sideWriter, src, dst net.Conn, rin, rout syscall.RawConn, p [2]int, chunk int) error {
	idle := s.p.cfg.IdleTimeout
	every := min(deadlineEvery, idle/2)
	var inSet, outSet time.Time
	for {
		now := time.Now()
		if now.Sub(inSet) >= every {
			if err := src.SetReadDeadline(now.Add(idle)); err != nil {
				return err
			}
			inSet = now
		}
		var n int
		var serr error
		err := rin.Read(func(fd uintptr) bool {
			var k int64
			k, serr = unix.Splice(int(fd), nil, p[1], nil, chunk, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			n = int(k)
			if serr == unix.EAGAIN {
				if mark, err := unix.IoctlGetInt(int(fd), unix.SIOCATMARK); err == nil && mark == 1 {
					serr = errUrgent
					return true
				}
				return false
			}
			return true
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			if isTimeout(err) && s.activeWithin(idle) && !s.isClosed() {
				inSet = time.Time{} // the other way is busy: wait again
				continue
			}
			if isTimeout(err) {
				return errIdle
			}
			return err
		}
		if n == 0 {
			return io.EOF
		}
		s.touch()
		if !s.p.spend(n) {
			return errBudget
		}
		for n > 0 {
			now := time.Now()
			if now.Sub(outSet) >= every {
				if err := dst.SetWriteDeadline(now.Add(idle)); err != nil {
					return err
				}
				outSet = now
			}
			var m int
			err := rout.Write(func(fd uintptr) bool {
				var k int64
				k, serr = unix.Splice(p[0], nil, int(fd), nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				m = int(k)
				return serr != unix.EAGAIN
			})
			if err == nil {
				err = serr
			}
			if err != nil {
				return err
			}
			n -= m
			w.count.Add(int64(m))
			s.touch()
		}
	}
}
