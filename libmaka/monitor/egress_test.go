package monitor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listenerFile is a loopback listener as a file, as EgressListen returns
// the one made inside a sandbox.
func listenerFile(t *testing.T) (*os.File, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	return f, ln.Addr().String()
}

// connect asks the proxy at proxy for dest by CONNECT and returns the
// status line and the connection.
func connect(t *testing.T, proxy, dest string) (string, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("CONNECT %s: %v", dest, err)
	}
	return strings.TrimSpace(line), c
}

func TestServeEgressRecordsRefusalsAndServesTheList(t *testing.T) {
	for _, onRefusal := range []string{ActionDeny, ActionKill} {
		t.Run(onRefusal, func(t *testing.T) {
			dir := t.TempDir()
			// The destination: an echo server on loopback, listed by address.
			echo, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer echo.Close()
			go func() {
				for {
					c, err := echo.Accept()
					if err != nil {
						return
					}
					go func() { _, _ = io.Copy(c, c); c.Close() }()
				}
			}()
			m, err := New(Config{ID: "eg", StateDir: dir, OnViolation: ActionKill})
			if err != nil {
				t.Fatal(err)
			}
			lf, proxy := listenerFile(t)
			if err := m.ServeEgress(lf, EgressConfig{List: []string{echo.Addr().String()}, MaxConns: 4, IdleTimeout: time.Minute, OnRefusal: onRefusal}); err != nil {
				t.Fatal(err)
			}
			status, c := connect(t, proxy, echo.Addr().String())
			if !strings.Contains(status, " 200") {
				t.Fatalf("allowed CONNECT: %q", status)
			}
			fmt.Fprint(c, "ping\n")
			if got, _ := bufio.NewReader(c).ReadString('\n'); got != "ping\n" {
				t.Errorf("through the tunnel: %q", got)
			}
			_, port, _ := net.SplitHostPort(echo.Addr().String())
			other := "127.0.0.2:" + port
			status, c2 := connect(t, proxy, other)
			c2.Close()
			if !strings.Contains(status, " 403") {
				t.Errorf("unlisted CONNECT: %q", status)
			}
			m.Close()
			// Fail closed: the tunnel ends with the monitor.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Error("the tunnel outlived the monitor")
			}
			c.Close()
			recs, err := ReadJournal(filepath.Join(dir, JournalFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 {
				t.Fatalf("records %+v, want one", recs)
			}
			r := recs[0]
			wantAction := ActionDeny
			if onRefusal == ActionKill {
				wantAction = ActionKill
			}
			if r.Type != TypeNetwork || r.Action != wantAction || r.Host != "127.0.0.2" || r.Reason != "raw-ip" || r.Proto != "connect" || r.Errno != "" {
				data, _ := json.Marshal(r)
				t.Errorf("record %s", data)
			}
			if want := "network raw-ip 127.0.0.2:" + port; !strings.HasPrefix(r.Summary(), want) {
				t.Errorf("summary %q, want it to start %q", r.Summary(), want)
			}
		})
	}
}

// The listener's descriptor reaches a detached monitor with Info.
func TestInfoCarriesTheListener(t *testing.T) {
	r, w, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lf, addr := listenerFile(t)
	defer lf.Close()
	data, _ := json.Marshal(Info{Cgroup: "/sys/fs/cgroup/x", InitPid: 7, Egress: &EgressConfig{List: []string{"pypi.org:443"}}})
	big := append(data, make([]byte, 200<<10)...) // beyond one read: the rest follows
	go func() {
		_ = sendInfo(w, big, lf)
		w.Close()
	}()
	got, files, err := recvInfo(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(big) || string(got[:len(data)]) != string(data) {
		t.Errorf("info: %d bytes, want %d", len(got), len(big))
	}
	if len(files) != 1 {
		t.Fatalf("%d descriptors came with Info, want the listener", len(files))
	}
	ln := files[0]
	defer ln.Close()
	l, err := net.FileListener(ln)
	if err != nil {
		t.Fatal(err)
	}
	if l.Addr().String() != addr {
		t.Errorf("listener at %s, want %s", l.Addr(), addr)
	}
	l.Close()
	// Without one: the bytes alone.
	r2, w2, _ := socketPair()
	go func() { _ = sendInfo(w2, data); w2.Close() }()
	got, files, err = recvInfo(r2)
	r2.Close()
	if err != nil || len(files) != 0 || string(got) != string(data) {
		t.Errorf("without a listener: %q %v %v", got, files, err)
	}
}

// Info's descriptors are sorted by what Info says comes with it; a count
// that does not match keeps none.
func TestInfoFiles(t *testing.T) {
	open := func() *os.File {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := open(), open()
	eg, ag, err := infoFiles(Info{Egress: &EgressConfig{}, Agent: true}, []*os.File{a, b})
	if err != nil || eg != a || ag != b {
		t.Errorf("egress and agent: %v %v %v", eg, ag, err)
	}
	c := open()
	if eg, ag, err = infoFiles(Info{Agent: true}, []*os.File{c}); err != nil || eg != nil || ag != c {
		t.Errorf("agent alone: %v %v %v", eg, ag, err)
	}
	d, e := open(), open()
	if _, _, err = infoFiles(Info{Agent: true}, []*os.File{d, e}); err == nil {
		t.Error("two descriptors for the agent alone were taken")
	}
	if _, err := d.Stat(); err == nil {
		t.Error("a descriptor of a refused Info was kept open")
	}
	if _, _, err = infoFiles(Info{Egress: &EgressConfig{}}, nil); err == nil {
		t.Error("egress without its listener was taken")
	}
	for _, f := range []*os.File{a, b, c} {
		f.Close()
	}
}

// This host's own addresses are known (loopback among them), and nothing
// else is.
func TestLocalAddrs(t *testing.T) {
	l := &localAddrs{}
	if !l.has(netip.MustParseAddr("127.0.0.1")) {
		t.Error("127.0.0.1 is not this host's")
	}
	if l.has(netip.MustParseAddr("192.0.2.254")) {
		t.Error("a documentation address is this host's")
	}
}
