package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/maka-runtime/maka/libmaka/egress"
	"golang.org/x/sys/unix"
)

// SocketFile is the name of the monitor's socket in the state directory:
// libcontainer dials it (configs.Seccomp.ListenerPath) to hand over the
// seccomp notification fd of every process it starts in the container.
const SocketFile = "monitor.sock"

// Config is what a monitor enforces.
type Config struct {
	ID       string
	StateDir string // the container's state directory (journal, peaks)
	// OnViolation: "deny" (record, refuse the syscall) or "kill" (also
	// destroy the sandbox).
	OnViolation string
	// Timeout is how long the sandbox may live (0: no limit).
	Timeout time.Duration
	// GetcwdErrno, if not 0: getcwd is handed to the monitor because
	// the init calls it after its filter is loaded and config.json's
	// profile refuses it (specconv.InitGetcwdErrno). A call before
	// Attach is the init's own and runs; every later one is answered
	// with this errno, as the profile says, and is not a violation.
	GetcwdErrno uint
}

// Monitor watches one container.
type Monitor struct {
	cfg     Config
	journal *Journal
	// stopR/stopW: closing stopW wakes every poll loop.
	stopR, stopW *os.File
	wg           sync.WaitGroup
	lns          []*net.UnixListener

	mu     sync.Mutex
	cgroup string // the container's cgroup directory, once known
	// cgroupFD is that directory, opened at Attach (-1 before): the kill
	// writes cgroup.kill through it, so that it can never reach a cgroup
	// made later at the same path (once the container's is removed, the
	// open fails).
	cgroupFD int
	// attached: Attach ran (the init is past its set-up; the user's
	// process may run from now on).
	attached bool
	tmpfs    []tmpfsMount
	first    *Record // the first violation
	killedBy *Record // the violation (or timeout) that destroyed the sandbox
	// killTiming: how long the sandbox took to empty after killedBy
	// arrived, set (closing killMeasured) once measured.
	killTiming   *KillTiming
	killMeasured chan struct{}
	timer        *time.Timer
	timing       sync.WaitGroup // a timeout being recorded
	closed       bool
	// journalFailed: a write of the journal failed (logged once).
	journalFailed bool
	// proxy serves the sandbox's egress (ServeEgress), egress counts it;
	// egressKill: a refusal destroys the sandbox (onEgressRefusal kill).
	proxy      *egress.Proxy
	egress     *egressRecorder
	egressKill bool
	// agentEnd is the holder end of the sandbox's agent (ServeAgent).
	agentEnd *os.File
	quit     chan struct{} // closed by Close: stops the tmpfs sampler
	done     chan struct{} // closed when the container's cgroup is empty or gone
	doneOnce sync.Once
}

// New opens the journal (created empty, so that followers can watch it).
func New(cfg Config) (*Monitor, error) {
	if cfg.OnViolation != ActionDeny && cfg.OnViolation != ActionKill {
		return nil, fmt.Errorf("monitor: onViolation %q is not deny or kill", cfg.OnViolation)
	}
	j, err := OpenJournal(filepath.Join(cfg.StateDir, JournalFile))
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		j.Close()
		return nil, err
	}
	m := &Monitor{cfg: cfg, journal: j, stopR: r, stopW: w, quit: make(chan struct{}), done: make(chan struct{}), cgroupFD: -1}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.flushJournal()
	}()
	return m, nil
}

// Listen creates the monitor's socket in dir (the state directory). It must
// exist before the container's init starts: libcontainer dials it then.
func Listen(dir string) (*net.UnixListener, error) {
	path := filepath.Join(dir, SocketFile)
	if len(path) >= len(unix.RawSockaddrUnix{}.Path) {
		return nil, fmt.Errorf("monitor socket %s: the path is longer than a unix socket allows (%d bytes): use a shorter --root", path, len(unix.RawSockaddrUnix{}.Path)-1)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("monitor socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("monitor socket: %w", err)
	}
	return ln, nil
}

// Serve accepts libcontainer's connections on ln, each carrying one
// process's seccomp notification fd, and answers their notifications
// until Close.
func (m *Monitor) Serve(ln *net.UnixListener) {
	m.mu.Lock()
	m.lns = append(m.lns, ln)
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			conn, err := ln.AcceptUnix()
			if err != nil {
				return // closed
			}
			if !sameUser(conn) {
				conn.Close()
				continue
			}
			fd, pid, err := recvNotifyFd(conn)
			conn.Close()
			if err != nil {
				continue
			}
			m.setCgroupFrom(pid)
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				m.serveNotify(fd)
			}()
		}
	}()
}

// sameUser accepts only connections from our own uid (libcontainer, in
// maka create, run or exec).
func sameUser(conn *net.UnixConn) bool {
	raw, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	return err == nil && cred != nil && int(cred.Uid) == os.Geteuid()
}

// recvNotifyFd reads libcontainer's message: a specs.ContainerProcessState
// JSON document with the notification fd attached (SCM_RIGHTS).
func recvNotifyFd(conn *net.UnixConn) (fd, pid int, err error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return -1, 0, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return -1, 0, err
	}
	fd = -1
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, f := range fds {
			if fd < 0 {
				fd = f
			} else {
				unix.Close(f)
			}
		}
	}
	if fd < 0 {
		return -1, 0, errors.New("no fd in the message")
	}
	// Only the pid is needed; the document may be cut at the buffer's end.
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal(buf[:n], &st); err != nil {
		// A long document arrives in pieces: find the pid by hand.
		if i := strings.Index(string(buf[:n]), `"pid":`); i >= 0 {
			_, _ = fmt.Sscanf(string(buf[i+6:n]), "%d", &st.Pid) // none: pid 0, unknown
		}
	}
	return fd, st.Pid, nil
}

// serveNotify answers the notifications of one filter until no process
// uses it any more, or Close.
func (m *Monitor) serveNotify(fd int) {
	defer unix.Close(fd)
	for waitReadable(fd, int(m.stopR.Fd())) {
		n, err := recvNotif(fd)
		at := time.Now().UTC() // the violation's time, from which a kill is timed
		if err != nil {
			if errors.Is(err, unix.ENOENT) { // the process went away meanwhile
				continue
			}
			return
		}
		m.handle(fd, n, at)
	}
}

// handle records one notification, received at at, and answers it.
func (m *Monitor) handle(fd int, n *seccompNotif, at time.Time) {
	name := SyscallName(n.Data.Arch, n.Data.Nr)
	hostPid := int(n.Pid)
	comm, pid := procInfo(hostPid)
	if !idValid(fd, n.ID) {
		return // the process died (or was killed) meanwhile: the pid may be another's
	}
	if isOpen(name) {
		m.audit(fd, n, at, name, hostPid, pid, comm)
		return
	}
	if name == "getcwd" && m.cfg.GetcwdErrno != 0 {
		m.mu.Lock()
		attached := m.attached
		m.mu.Unlock()
		errno := unix.Errno(m.cfg.GetcwdErrno)
		if !attached {
			errno = 0 // the init's own cwd check: it runs
		}
		_ = respond(fd, n.ID, errno)
		return
	}
	r := Record{
		Time: at, Type: TypeSyscall, Action: ActionDeny, Errno: "EPERM",
		Pid: pid, HostPid: hostPid, Comm: comm, Syscall: name, Args: syscallArgs(name, n.Data.Args),
	}
	m.violation(r, hostPid)
	_ = respond(fd, n.ID, unix.EPERM)
}

// violation records r; under kill it destroys the sandbox first (the
// record says so), so that no other syscall of the sandbox runs after it,
// and measures how long the sandbox takes to empty from r.Time (when the
// violation reached the monitor).
func (m *Monitor) violation(r Record, hostPid int) {
	m.mu.Lock()
	kill := m.cfg.OnViolation == ActionKill || r.Kind == LimitTimeout
	if r.Type == TypeNetwork {
		// A refusal is refused under every onViolation; only the
		// policy's onEgressRefusal makes it fatal, and only a refusal of
		// the list's (a network's or a client's hiccup is recorded), and
		// only the first: the sessions still in flight when the sandbox
		// dies are recorded as refusals, under the journal's bounds (a
		// kill's record passes them).
		kill = m.egressKill && egress.PolicyReason(r.Reason) && m.killedBy == nil
	}
	m.mu.Unlock()
	if kill {
		r.Action, r.Errno = ActionKill, ""
	}
	m.mu.Lock()
	if m.first == nil {
		rc := r
		m.first = &rc
	}
	var measured chan struct{}
	if kill && m.killedBy == nil {
		rc := r
		m.killedBy = &rc
		// Set with killedBy: Close, even if the sandbox's end makes
		// it run right now, waits for the timing.
		measured = make(chan struct{})
		m.killMeasured = measured
	}
	cg, cgfd := m.cgroup, m.cgroupFD
	m.mu.Unlock()
	// Written before the kill, flushed after it: whoever sees the sandbox
	// stopped also sees why, and the kill does not wait for the disk.
	m.journalErr(m.journal.Append(r))
	if kill {
		if cg == "" && hostPid > 0 {
			cg, _ = cgroupOf(hostPid)
		}
		switch {
		case cgfd >= 0:
			if err := killAt(cgfd); err != nil {
				// The log (a foreground run's stderr, a detached
				// monitor's monitor.log); the teardown kills again.
				fmt.Fprintf(os.Stderr, "maka: container %s: the kill of the sandbox failed: %v\n", m.cfg.ID, err)
			}
		case cg != "":
			// Before Attach: the violating process's own cgroup, just read.
			_ = os.WriteFile(filepath.Join(cg, "cgroup.kill"), []byte("1"), 0)
		}
		if measured != nil {
			m.measureKill(cg, r.Time, measured)
		}
	}
	if kill {
		m.journalErr(m.journal.Flush())
	}
}

// journalErr reports a failed write of the journal: the stats count it
// (`maka violations` shows it), and the first one is logged on stderr (a
// foreground run's; a detached monitor's goes to its log file).
func (m *Monitor) journalErr(err error) {
	if err == nil {
		return
	}
	m.mu.Lock()
	first := !m.journalFailed
	m.journalFailed = true
	m.mu.Unlock()
	if first {
		fmt.Fprintf(os.Stderr, "maka: container %s: %v (further errors are counted in %s)\n", m.cfg.ID, err, StatsFile)
	}
}

// flushJournal flushes the journal every FlushInterval until Close.
func (m *Monitor) flushJournal() {
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-tick.C:
			m.journalErr(m.journal.Flush())
		}
	}
}

// measureKill times, in the background, how long the killed sandbox in
// cgroup cg takes to empty after the violation that arrived at violation,
// and closes measured.
func (m *Monitor) measureKill(cg string, violation time.Time, measured chan struct{}) {
	if cg == "" { // no cgroup known: nothing to time
		close(measured)
		return
	}
	go func() {
		empty, ok := waitEmpty(cg, KillWait)
		m.mu.Lock()
		m.killTiming = newKillTiming(violation, empty, ok)
		m.mu.Unlock()
		close(measured)
	}()
}

// setCgroupFrom learns the container's cgroup from its init's pid, for a
// kill that comes before Attach.
func (m *Monitor) setCgroupFrom(pid int) {
	if pid <= 0 {
		return
	}
	cg, err := cgroupOf(pid)
	if err != nil {
		return
	}
	m.mu.Lock()
	if m.cgroup == "" {
		m.cgroup = cg
	}
	m.mu.Unlock()
}

// Attach starts what needs the running container: the cgroup's limit
// events, the end of the container, and the timeout. cgroupDir is the
// container's cgroup v2 directory, initPid its init (host pid) and tmpfs
// the container paths of its writable tmpfs mounts, whose use is recorded
// when it stops.
func (m *Monitor) Attach(cgroupDir string, initPid int, tmpfs []string) error {
	held := holdTmpfs(initPid, tmpfs)
	cgfd, err := unix.Open(cgroupDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		cgfd = -1 // gone already: there is nothing left to kill
	}
	m.mu.Lock()
	m.cgroup = cgroupDir
	if m.cgroupFD >= 0 {
		unix.Close(m.cgroupFD)
	}
	m.cgroupFD = cgfd
	m.attached = true
	m.tmpfs = held
	if m.cfg.Timeout > 0 {
		m.timer = time.AfterFunc(m.cfg.Timeout, m.timeout)
	}
	m.mu.Unlock()
	if len(held) > 0 {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.sampleTmpfs()
		}()
	}
	w, err := watchCgroup(cgroupDir)
	if err != nil {
		return fmt.Errorf("monitor %s: %w", m.cfg.ID, err)
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer m.markDone()
		w.run(int(m.stopR.Fd()), func(kind string, count uint64, limit int64) {
			m.violation(Record{Time: time.Now().UTC(), Type: TypeLimit, Action: ActionAudit, Kind: kind, Count: count, Limit: limit}, 0)
		})
	}()
	return nil
}

func (m *Monitor) timeout() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	// Close waits for this record: the kill below ends the container, and
	// with it a detached monitor, before the record would be synced.
	m.timing.Add(1)
	m.mu.Unlock()
	defer m.timing.Done()
	m.violation(Record{Time: time.Now().UTC(), Type: TypeLimit, Kind: LimitTimeout, Limit: int64(m.cfg.Timeout / time.Second)}, 0)
}

// sampleTmpfs samples the held tmpfs mounts every TmpfsSampleInterval
// until Close, which takes the last sample.
func (m *Monitor) sampleTmpfs() {
	tick := time.NewTicker(TmpfsSampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-tick.C:
			m.mu.Lock()
			for i := range m.tmpfs {
				m.tmpfs[i].sample()
			}
			m.mu.Unlock()
		}
	}
}

// MarkAttached says the init is past its set-up: from now on only the
// user's processes run (Attach does it too). A foreground run that cannot
// attach (no cgroup known) still calls it: a call handed to the monitor
// for the init's sake (Config.GetcwdErrno) is then answered as the
// profile says.
func (m *Monitor) MarkAttached() {
	m.mu.Lock()
	m.attached = true
	m.mu.Unlock()
}

func (m *Monitor) markDone() { m.doneOnce.Do(func() { close(m.done) }) }

// Done is closed when the container's cgroup has no process left (or is
// gone): the container stopped.
func (m *Monitor) Done() <-chan struct{} { return m.done }

// Close records the peak usage and the kill's timing (once, while the
// cgroup still exists), stops every loop and closes the journal. After a
// kill it first waits (at most KillWait) for the sandbox to empty.
func (m *Monitor) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	if m.timer != nil {
		m.timer.Stop()
	}
	measured := m.killMeasured
	proxy := m.proxy
	m.mu.Unlock()
	// Fail closed first: no connection outlives the watch.
	if proxy != nil {
		proxy.Close()
	}
	if measured != nil {
		<-measured
	}
	close(m.quit)
	m.mu.Lock()
	cg := m.cgroup
	lns := m.lns
	// The final sample: the container has stopped, the fds still hold
	// its tmpfs mounts.
	var tmpfs []TmpfsUse
	for i := range m.tmpfs {
		m.tmpfs[i].sample()
		tmpfs = append(tmpfs, m.tmpfs[i].use)
		unix.Close(m.tmpfs[i].fd)
	}
	m.tmpfs = nil
	killed := m.killTiming
	var eg *egress.Snapshot
	if m.egress != nil {
		snap := m.egress.Snapshot()
		eg = &snap
	}
	m.mu.Unlock()
	m.timing.Wait()
	if cg != "" {
		_ = writePeak(m.cfg.StateDir, cg, tmpfs, killed, eg)
	}
	for _, ln := range lns {
		ln.Close()
	}
	m.mu.Lock()
	if m.agentEnd != nil {
		m.agentEnd.Close()
	}
	m.mu.Unlock()
	m.stopW.Close()
	m.wg.Wait()
	m.stopR.Close()
	m.mu.Lock()
	if m.cgroupFD >= 0 {
		unix.Close(m.cgroupFD)
		m.cgroupFD = -1
	}
	m.mu.Unlock()
	m.markDone()
	err := m.journal.Close()
	m.journalErr(err)
	return err
}

// Err is the error a foreground run reports: the violation (or timeout)
// that destroyed the sandbox, nil if none did.
func (m *Monitor) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.killedBy == nil {
		return nil
	}
	return &KilledError{ID: m.cfg.ID, Record: *m.killedBy, Timing: m.killTiming}
}

// First is the first violation recorded by this monitor, if any.
func (m *Monitor) First() *Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.first
}

// Error codes that lead the message of a KilledError.
const (
	ViolationCode = "SANDBOX_BOUNDARY_VIOLATION"
	TimeoutCode   = "SANDBOX_TIMEOUT"
)

// KilledError says the monitor destroyed the sandbox, why, and (once
// measured: after Close) how long the sandbox took to empty.
type KilledError struct {
	ID     string
	Record Record
	Timing *KillTiming
}

// Code is the machine-readable code leading the message.
func (e *KilledError) Code() string {
	if e.Record.Type == TypeLimit && e.Record.Kind == LimitTimeout {
		return TimeoutCode
	}
	return ViolationCode
}

func (e *KilledError) Error() string {
	if e.Code() == TimeoutCode {
		return fmt.Sprintf("%s: container %s ran longer than its timeout of %d s and was killed%s", TimeoutCode, e.ID, e.Record.Limit, e.emptied())
	}
	return fmt.Sprintf("%s: container %s was killed: %s%s", ViolationCode, e.ID, e.Record.Summary(), e.emptied())
}

// emptied says how long the sandbox took to empty, when it was measured.
func (e *KilledError) emptied() string {
	switch {
	case e.Timing == nil:
		return ""
	case e.Timing.EmptyAfterMs == nil:
		return fmt.Sprintf(" (still not empty %s after)", KillWait)
	}
	return fmt.Sprintf(" (empty after %.1f ms)", *e.Timing.EmptyAfterMs)
}

// EmptyAfterMs is how long the sandbox took to empty, in milliseconds,
// if it was measured and it did.
func (e *KilledError) EmptyAfterMs() (float64, bool) {
	if e.Timing == nil || e.Timing.EmptyAfterMs == nil {
		return 0, false
	}
	return *e.Timing.EmptyAfterMs, true
}
