package launch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/maka-runtime/maka/internal/agent"
	"github.com/maka-runtime/maka/internal/agentexe"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// agentStartWait bounds a command's start through the agent (an emulated,
// loaded machine forks slowly).
const agentStartWait = 30 * time.Second

// RunAgent is RunBounded through the sandbox's resident agent (cl): no
// process of maka's is started and no namespace is joined; the agent forks
// the command, which waits before running any code of its own until maka
// has checked its pid (the kernel's, never the agent's word) and placed it
// in the command's child cgroup.
func RunAgent(ctx context.Context, ctr *libmaka.Container, cl *agent.Client, ps *specs.Process, stdio Stdio, limit int64, destroy func() error) (*Output, error) {
	return runBounded(ctx, ctr, stdio, limit, destroy, func(_, subDir string, in, out, errw *os.File) (func() int, error) {
		p, err := cl.Start(agent.Command{Args: ps.Args, Env: ps.Env, Cwd: ps.Cwd, Stdin: in, Stdout: out, Stderr: errw}, agentStartWait)
		if err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", ctr.ID(), err)
		}
		if err := placeCommand(p.HostPid, ctr.CgroupPath(), subDir); err != nil {
			p.Signal(unix.SIGKILL)
			return nil, fmt.Errorf("sandbox %s: the command's process: %w", ctr.ID(), err)
		}
		if err := p.Go(); err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", ctr.ID(), err)
		}
		return func() int {
			e, err := p.Wait()
			if err != nil {
				return 255
			}
			return e.Code()
		}, nil
	})
}

// placeCommand moves pid into subDir, a child cgroup of cgroup, once it is
// seen in cgroup itself: a pid outside the sandbox is never moved. The pid
// comes from the kernel and its process waits, blocked, for maka's go; a
// pidfd taken first makes sure it is still that process after the move.
func placeCommand(pid int, cgroup, subDir string) error {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pidfd)
	in, err := cgroupOfPid(pid)
	if err != nil {
		return err
	}
	if in != cgroup {
		return fmt.Errorf("pid %d is in %s, not in the sandbox's cgroup %s", pid, in, cgroup)
	}
	if err := os.WriteFile(filepath.Join(subDir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return err
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("pid %d ended while it was placed: %w", pid, err)
	}
	return nil
}

// cgroupOfPid is pid's cgroup v2 directory under /sys/fs/cgroup.
func cgroupOfPid(pid int) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("0::")); ok {
			return filepath.Join("/sys/fs/cgroup", string(rest)), nil
		}
	}
	return "", fmt.Errorf("pid %d: no cgroup v2 line", pid)
}

// AgentInit makes p, an idle sandbox's init process, maka's resident agent:
// libcontainer's init execs the agent's sealed memfd (agentexe, fd 4, which
// the agent closes first thing; it is not dumpable) holding the agent's end
// of a socket pair on fd 3. It returns the client, and release, to call
// once the init has started (it closes this process's copy of the agent's
// end). agentexe.ErrNotCarried: this program has no agent to give.
func AgentInit(p *libcontainer.Process) (*agent.Client, func(), error) {
	exe, err := agentexe.Open()
	if err != nil {
		return nil, nil, err
	}
	cf, af, err := agent.Pair()
	if err != nil {
		return nil, nil, err
	}
	cl, err := agent.NewClient(cf)
	if err != nil {
		af.Close()
		return nil, nil, err
	}
	p.Args = []string{"/proc/self/fd/4"}
	p.ExtraFiles = []*os.File{af, exe}
	return cl, func() { af.Close() }, nil
}
