package monitor

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/maka-runtime/maka/internal/agent"
	"golang.org/x/sys/unix"
)

// AgentSocketFile, in the state directory of a sandbox whose init is
// maka's agent, is where `maka exec` asks the sandbox's monitor for a
// connection of its own to the agent.
const AgentSocketFile = "agent.sock"

// dialAgentWait bounds DialAgent's wait for the monitor's answer (an
// emulated, loaded machine is slow).
const dialAgentWait = 30 * time.Second

// ServeAgent holds the agent's holder end (holder, taken over: the agent,
// and with it the sandbox, ends when the monitor closes it) and serves
// AgentSocketFile: each connection of maka's own user gets a new
// connection to the agent (agent.Attach), passed as a descriptor; the
// monitor carries none of its traffic. The socket is reachable only in
// the state directory, by maka's user; the agent takes at most
// agent.MaxClients connections at once.
func (m *Monitor) ServeAgent(holder *os.File) error {
	path := filepath.Join(m.cfg.StateDir, AgentSocketFile)
	// The state directory is maka's user's alone (0700): the socket's
	// mode is narrowed after bind (a process-wide umask would race with
	// the embedding program's other files).
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err == nil {
		if err = os.Chmod(path, 0o600); err != nil {
			ln.Close()
		}
	}
	if err != nil {
		holder.Close()
		return fmt.Errorf("monitor %s: the agent's socket: %w", m.cfg.ID, err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		ln.Close()
		holder.Close()
		return fmt.Errorf("monitor %s: closed", m.cfg.ID)
	}
	m.lns = append(m.lns, ln)
	m.agentEnd = holder
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			conn, err := ln.AcceptUnix()
			if err != nil {
				return // closed
			}
			if sameUser(conn) {
				_ = giveAgent(conn, holder)
			}
			conn.Close()
		}
	}()
	return nil
}

// giveAgent sends conn a new connection to the agent behind holder.
func giveAgent(conn *net.UnixConn, holder *os.File) error {
	f, err := agent.Attach(holder)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, err = conn.WriteMsgUnix([]byte{1}, unix.UnixRights(int(f.Fd())), nil)
	return err
}

// DialAgent asks the monitor of the sandbox in stateDir for a connection
// to its agent, for agent.NewClient. os.ErrNotExist: the sandbox's init is
// not the agent (or its monitor is gone).
func DialAgent(stateDir string) (*os.File, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(stateDir, AgentSocketFile), Net: "unix"})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// A monitor that does not answer is not waited for.
	_ = conn.SetDeadline(time.Now().Add(dialAgentWait))
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	_, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("the agent's socket: %w", err)
	}
	fds := rights(oob[:oobn])
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the agent's socket: %d descriptors, want 1", len(fds))
	}
	unix.CloseOnExec(fds[0])
	return os.NewFile(uintptr(fds[0]), "agent-client"), nil
}
