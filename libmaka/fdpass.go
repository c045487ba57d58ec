package libmaka

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SendFd sends f over the unix socket sock with SCM_RIGHTS; name travels as
// the message body (runc sends the pty master this way over --console-socket).
func SendFd(sock *os.File, name string, f *os.File) error {
	rights := unix.UnixRights(int(f.Fd()))
	return unix.Sendmsg(int(sock.Fd()), []byte(name), rights, nil, 0)
}

// RecvFd receives one file descriptor sent with SCM_RIGHTS on sock.
func RecvFd(sock *os.File) (*os.File, error) {
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), name, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receive fd: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("receive fd: %w", err)
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds[1:] {
			unix.Close(fd)
		}
		return os.NewFile(uintptr(fds[0]), string(name[:n])), nil
	}
	return nil, errors.New("receive fd: no file descriptor in message")
}
