package libmaka

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/maka-runtime/maka/libmaka/internal/egressns"
	"golang.org/x/sys/unix"
)

// egressListenWait bounds the helper's life (an emulated, loaded machine
// starts a program slowly).
const egressListenWait = 30 * time.Second

// EgressListen makes the egress proxy's listening socket at proxy
// (127.0.0.1:PORT) inside the network namespace of the sandbox whose init
// is initPid, and returns it. The init must be parked (created, not yet
// started): no code of the sandbox's runs before the socket exists, so none
// can take the port first. userns: the sandbox has a user namespace of its
// own (its network namespace is owned by it).
//
// The socket is made by a helper: this program re-executed, whose
// constructor (internal/egressns) joins the namespaces before any thread
// exists and sends the socket back. It finds them through a pidfd of the
// init, never through a path. What comes back is checked: a listening TCP
// socket bound to exactly proxy.
func EgressListen(initPid int, proxy string, userns bool) (*os.File, error) {
	ap, err := netip.ParseAddrPort(proxy)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("egress: the proxy's address %q is not a loopback address and port", proxy)
	}
	pidfd, err := unix.PidfdOpen(initPid, 0)
	if err != nil {
		return nil, fmt.Errorf("egress: the init %d: %w", initPid, err)
	}
	pf := os.NewFile(uintptr(pidfd), "init-pidfd")
	defer pf.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "egress-recv"), os.NewFile(uintptr(pair[1]), "egress-send")
	defer mine.Close()
	spec := strconv.Itoa(int(ap.Port()))
	if userns {
		spec += ":user"
	}
	ctx, cancel := context.WithTimeout(context.Background(), egressListenWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{"maka-egressns"}
	cmd.Env = []string{egressns.Env + "=" + spec}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{pf, theirs} // fds 3 and 4
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4096}
	err = cmd.Run()
	theirs.Close()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("egress: the proxy's listener in the sandbox's network namespace: %s", msg)
	}
	ln, err := recvListener(int(mine.Fd()))
	if err != nil {
		return nil, fmt.Errorf("egress: the proxy's listener: %w", err)
	}
	if err := checkListener(ln, ap); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress: the proxy's listener: %w", err)
	}
	if err := inInitsNetns(ln, initPid, pidfd); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress: the proxy's listener: %w", err)
	}
	return ln, nil
}

// inInitsNetns: the socket lives in the init's network namespace, never in
// this process's (where it would serve the sandbox's list to every local
// user on the host's loopback). The socket's namespace comes from the
// socket (SIOCGSKNS); the init's from /proc, read while its pidfd shows it
// alive (it is this process's child, not yet reaped: its pid is its own).
func inInitsNetns(ln *os.File, initPid, pidfd int) error {
	nsfd, err := unix.IoctlRetInt(int(ln.Fd()), unix.SIOCGSKNS)
	if err != nil {
		return fmt.Errorf("its network namespace: %w", err)
	}
	defer unix.Close(nsfd)
	var sock, init, own unix.Stat_t
	if err := unix.Fstat(nsfd, &sock); err != nil {
		return err
	}
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/net", initPid), &init); err != nil {
		return fmt.Errorf("the init's network namespace: %w", err)
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("the init: %w", err)
	}
	if err := unix.Stat("/proc/self/ns/net", &own); err != nil {
		return err
	}
	switch {
	case sock.Dev == own.Dev && sock.Ino == own.Ino:
		return fmt.Errorf("it is in maka's own network namespace")
	case sock.Dev != init.Dev || sock.Ino != init.Ino:
		return fmt.Errorf("it is not in the sandbox's network namespace")
	}
	return nil
}

// recvListener takes the one descriptor the helper sent (it has exited:
// the message waits in the socket).
func recvListener(fd int) (*os.File, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, got...)
		}
	}
	if n != 1 || len(fds) != 1 {
		for _, f := range fds {
			unix.Close(f)
		}
		return nil, fmt.Errorf("the helper sent %d descriptors, not one", len(fds))
	}
	return os.NewFile(uintptr(fds[0]), "egress-listener"), nil
}

// checkListener: f is a TCP socket listening at exactly ap.
func checkListener(f *os.File, ap netip.AddrPort) error {
	fd := int(f.Fd())
	if t, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || t != unix.SOCK_STREAM {
		return fmt.Errorf("not a stream socket")
	}
	if l, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || l != 1 {
		return fmt.Errorf("not listening")
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return err
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok || netip.AddrFrom4(in4.Addr) != ap.Addr() || in4.Port != int(ap.Port()) {
		return fmt.Errorf("not bound to %s", ap)
	}
	return nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
