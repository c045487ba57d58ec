package launch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
	return runBounded(ctx, ctr, stdio, limit, destroy, func(_, subDir string, in, out, errw *os.File) (func() (int, Usage, error), error) {
		p, err := startChecked(ctx, ctr, cl, ps, subDir, in, out, errw)
		if err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", ctr.ID(), err)
		}
		return func() (int, Usage, error) {
			e, err := p.Wait()
			if err != nil {
				return 255, Usage{}, err // the agent is gone: so is the sandbox
			}
			return e.Code(), Usage{User: e.User, System: e.System, MaxRSSKiB: e.MaxRSSKiB}, nil
		}, nil
	})
}

// startChecked starts ps through cl, checks the command's process and
// places it in subDir ("": left in the sandbox's cgroup), then lets it
// run. The wait for the agent's answer ends with ctx too.
func startChecked(ctx context.Context, ctr *libmaka.Container, cl *agent.Client, ps *specs.Process, subDir string, in, out, errw *os.File) (*agent.Proc, error) {
	wait := agentStartWait
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait = max(time.Until(d), time.Millisecond)
	}
	p, err := cl.Start(agent.Command{Args: ps.Args, Env: ps.Env, Cwd: ps.Cwd, Stdin: in, Stdout: out, Stderr: errw}, wait)
	if err != nil {
		return nil, err
	}
	initPid := 0
	if st, err := ctr.OCIState(); err == nil {
		initPid = st.Pid
	}
	if err := placeCommand(p.HostPid, initPid, ctr.CgroupPath(), subDir); err != nil {
		p.Abort()
		return nil, fmt.Errorf("the command's process: %w", err)
	}
	if err := p.Go(); err != nil {
		return nil, err
	}
	return p, nil
}

// placeCommand moves pid into subDir, a child cgroup of cgroup, once it is
// seen in cgroup itself: a pid outside the sandbox is never moved ("": it
// stays in cgroup, only checked), nor the sandbox's init (initPid: an agent
// that sent its own credentials). The pid comes from the kernel and its
// process waits, blocked, for maka's go; a pidfd taken first, and found
// alive after each step by pid, makes sure each concerned that process
// (its pid cannot have been reused while it lives).
func placeCommand(pid, initPid int, cgroup, subDir string) error {
	if pid == initPid {
		return fmt.Errorf("pid %d is the sandbox's init, not a command", pid)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pidfd)
	in, err := cgroupOfPid(pid)
	if err != nil {
		return err
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("pid %d ended while it was checked: %w", pid, err)
	}
	if in != cgroup {
		return fmt.Errorf("pid %d is in %s, not in the sandbox's cgroup %s", pid, in, cgroup)
	}
	if subDir != "" {
		if err := os.WriteFile(filepath.Join(subDir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return err
		}
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("pid %d ended while it was placed: %w", pid, err)
	}
	return nil
}

// StartAgent starts ps through the sandbox's agent (cl) with the given
// stdio, as `maka exec` does without bounds: the command stays in the
// sandbox's cgroup, checked there (the kernel's pid, never the agent's
// word) before it runs any code of its own. The caller waits for it
// (Proc.Wait) and forwards signals (Proc.Signal).
func StartAgent(ctr *libmaka.Container, cl *agent.Client, ps *specs.Process, stdin, stdout, stderr *os.File) (*agent.Proc, error) {
	p, err := startChecked(context.Background(), ctr, cl, ps, "", stdin, stdout, stderr)
	if err != nil {
		return nil, fmt.Errorf("exec in %s: %w", ctr.ID(), err)
	}
	return p, nil
}

// AgentCan reports whether the agent can start ps as libcontainer's exec
// would: the agent's commands are its own children, so they have the
// init's (initPs) credentials, filter, limits and no terminal; a command
// that asks for anything else of its own goes libcontainer's way.
func AgentCan(ps, initPs *specs.Process) bool {
	if ps == nil || initPs == nil || ps.Terminal || ps.ConsoleSize != nil {
		return false
	}
	same := func(a, b any) bool { return reflect.DeepEqual(a, b) }
	return same(ps.User, initPs.User) && same(ps.Capabilities, initPs.Capabilities) &&
		ps.NoNewPrivileges == initPs.NoNewPrivileges && ps.ApparmorProfile == initPs.ApparmorProfile &&
		ps.SelinuxLabel == initPs.SelinuxLabel && same(ps.Rlimits, initPs.Rlimits) &&
		same(ps.OOMScoreAdj, initPs.OOMScoreAdj) && same(ps.Scheduler, initPs.Scheduler) &&
		same(ps.IOPriority, initPs.IOPriority) && same(ps.ExecCPUAffinity, initPs.ExecCPUAffinity)
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

// IdleArgs is an init that idles until the sandbox is destroyed, for a
// root with a POSIX shell: commands run beside it. It reaps: what a
// command leaves behind is reparented to the sandbox's init, and once
// killed must not linger as zombies holding pids (a shell's wait reaps any
// child while one of its jobs runs). A sandbox whose process is this runs
// maka's resident agent as its init instead, where the program carries it
// (agentInit).
var IdleArgs = []string{"/bin/sh", "-c", "while :; do sleep 3600 & wait; done"}

// agentInit makes p, the init's process of b, maka's resident agent when
// b's process is the idle init (IdleArgs), without a terminal or
// descriptors of the caller's (the agent keeps none), and this program
// carries the agent: libcontainer's init execs the agent's sealed memfd
// (agentexe, fd 4, which the agent closes first thing; it is not
// dumpable), holding the agent's end of a socket pair on fd 3. It returns
// the holder's end (nil: the init is as b says), and release, to call once
// the init has started (it closes this process's copy of the agent's end).
func agentInit(b *libmaka.Boundary, p *libcontainer.Process) (holder *os.File, release func(), err error) {
	if !slices.Equal(b.Process.Args, IdleArgs) || b.Process.Terminal || len(p.ExtraFiles) > 0 || !agentexe.Carried() {
		return nil, func() {}, nil
	}
	exe, err := agentexe.Open()
	if err != nil {
		return nil, nil, err
	}
	holder, af, err := agent.Pair()
	if err != nil {
		return nil, nil, err
	}
	p.Args = []string{"/proc/self/fd/4"}
	p.ExtraFiles = []*os.File{af, exe}
	return holder, func() { af.Close() }, nil
}
