package libmaka

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A listener in maka's own network namespace (a wrong pid, a helper that
// did not join) is refused: it would serve the sandbox's list to every
// local user on the host's loopback.
func TestListenerInOwnNetnsRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ap := netip.MustParseAddrPort(l.Addr().String())
	if err := checkListener(f, ap); err != nil {
		t.Fatalf("checkListener: %v", err)
	}
	if err := checkListener(f, netip.AddrPortFrom(ap.Addr(), ap.Port()+1)); err == nil {
		t.Error("a listener on another port passed")
	}
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skip("no pidfd:", err)
	}
	defer unix.Close(pidfd)
	err = inInitsNetns(f, os.Getpid(), pidfd)
	if err == nil || !strings.Contains(err.Error(), "maka's own network namespace") {
		t.Errorf("a listener in our own namespace: %v", err)
	}
}
