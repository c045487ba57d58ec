package embedexe

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// The memfd is sealed, read-only and runs: no holder can change the
// program a later sandbox runs.
func TestSealed(t *testing.T) {
	f, err := Sealed("test", []byte("#!/bin/sh\nexit 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if seals&want != want {
		t.Fatalf("seals %#x, want %#x", seals, want)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("the read-only descriptor took a write")
	}
	// Reopened for writing, as a process holding it could try: the seal
	// refuses every write.
	w, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_WRONLY, 0)
	if err == nil {
		defer w.Close()
		if _, err := w.WriteAt([]byte("#!/bin/sh\nexit 0\n"), 0); !errors.Is(err, unix.EPERM) {
			t.Fatalf("write through a writable reopen: %v, want EPERM", err)
		}
		if err := w.Truncate(0); !errors.Is(err, unix.EPERM) {
			t.Fatalf("truncate: %v, want EPERM", err)
		}
		w.Close()
	}
	cmd := exec.Command("/proc/self/fd/3")
	cmd.ExtraFiles = []*os.File{f}
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("running the memfd: %v, want exit 7", err)
	}
}

// A program that is not carried, or whose digest does not match, is not
// handed out.
func TestOpenRefuses(t *testing.T) {
	notCarried := errors.New("not carried")
	if _, err := New("x", nil, "", notCarried).Open(); !errors.Is(err, notCarried) {
		t.Fatalf("not carried: %v", err)
	}
	gz := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0} // gzip of ""
	if _, err := New("x", gz, "00000000000000000000000000000000000000000000000000000000000000ff", notCarried).Open(); err == nil || errors.Is(err, notCarried) {
		t.Fatalf("a digest mismatch: %v", err)
	}
	if f, err := New("x", gz, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", notCarried).Open(); err != nil {
		t.Fatalf("the empty program with its digest: %v", err)
	} else {
		f.Close()
	}
}
