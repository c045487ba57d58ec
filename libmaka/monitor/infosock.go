package monitor

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// maxInfo bounds Info as the monitor reads it (a 256-entry egress list is
// ~70 KiB).
const maxInfo = 1 << 20

// socketPair is a connected pair of stream sockets for Info: r for the
// monitor, w for the launcher.
func socketPair() (r, w *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "monitor-info"), os.NewFile(uintptr(fds[1]), "monitor-info"), nil
}

// maxInfoFiles is how many descriptors come with Info: the egress
// proxy's listener and the agent's holder end.
const maxInfoFiles = 2

// sendInfo writes data on f, with the descriptors of files (in Info's
// order: the egress listener, then the agent's) attached to its first
// byte, then shuts the sending side: the monitor reads to the end.
func sendInfo(f *os.File, data []byte, files ...*os.File) error {
	fd := int(f.Fd())
	if len(files) > 0 {
		if len(data) == 0 {
			return errors.New("monitor: descriptors without Info")
		}
		fds := make([]int, len(files))
		for i, file := range files {
			fds[i] = int(file.Fd())
		}
		if err := unix.Sendmsg(fd, data[:1], unix.UnixRights(fds...), nil, 0); err != nil {
			return err
		}
		data = data[1:]
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return unix.Shutdown(fd, unix.SHUT_WR)
}

// recvInfo reads Info to the end (at most maxInfo bytes) and the
// descriptors that may come with it (at most maxInfoFiles; any other is
// closed). It also reads a pipe (a launcher of before the socket): then
// there are none.
func recvInfo(f *os.File) ([]byte, []*os.File, error) {
	fd := int(f.Fd())
	var data []byte
	var got []*os.File
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for len(data) < maxInfo {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.ENOTSOCK) {
			rest, rerr := io.ReadAll(io.LimitReader(f, maxInfo))
			return rest, nil, rerr
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return data, got, err
		}
		if oobn > 0 {
			for _, fd := range rights(oob[:oobn]) {
				if len(got) < maxInfoFiles {
					got = append(got, os.NewFile(uintptr(fd), "monitor-info-fd"))
				} else {
					unix.Close(fd)
				}
			}
		}
		if n == 0 {
			break
		}
		data = append(data, buf[:n]...)
	}
	return data, got, nil
}

// rights are the descriptors of the control messages in oob.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}
