package monitor

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A connection to the agent's socket gets a connection to the agent: the
// monitor sends the agent (here: the test, at the other end of the
// holder's pair) an ATTACH with one end, and the client the other. The
// socket is maka's user's alone; closing the monitor closes the holder's
// end (the agent, and the sandbox, end).
func TestServeAgent(t *testing.T) {
	dir := t.TempDir()
	m, err := New(Config{ID: "agent-test", StateDir: dir, OnViolation: ActionDeny})
	if err != nil {
		t.Fatal(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	agentSide := os.NewFile(uintptr(fds[1]), "agent")
	defer agentSide.Close()
	if err := m.ServeAgent(os.NewFile(uintptr(fds[0]), "holder")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, AgentSocketFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the agent's socket: %v %v", fi, err)
	}
	client, err := DialAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// The agent's side reads the ATTACH and its descriptor.
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*4))
	_ = agentSide.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, oobn, _, _, err := unix.Recvmsg(fds[1], buf, oob, 0)
	if err != nil || n != 24 || binary.LittleEndian.Uint32(buf[4:]) != 3 {
		t.Fatalf("the agent got %x, %v; want an ATTACH", buf[:n], err)
	}
	got := rights(oob[:oobn])
	if len(got) != 1 {
		t.Fatalf("%d descriptors with the ATTACH", len(got))
	}
	attached := os.NewFile(uintptr(got[0]), "attached")
	defer attached.Close()
	// The two are the ends of one pair.
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if n, err := attached.Read(buf); err != nil || string(buf[:n]) != "ping" {
		t.Errorf("the client's end and the agent's: %q %v", buf[:n], err)
	}
	m.Close()
	if _, err := DialAgent(dir); err == nil {
		t.Error("the agent's socket served after Close")
	}
	if n, err := agentSide.Read(buf); n != 0 || err == nil {
		t.Errorf("after Close the holder's end is open: %d %v", n, err)
	}
}
