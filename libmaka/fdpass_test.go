package libmaka

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSendRecvFd(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	defer a.Close()
	defer b.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := SendFd(a, "/dev/pts/7", w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, err := RecvFd(b)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if got.Name() != "/dev/pts/7" {
		t.Errorf("name = %q", got.Name())
	}
	if _, err := got.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := r.Read(buf); err != nil || string(buf) != "hi" {
		t.Fatalf("read %q, %v through the passed fd", buf, err)
	}
}
