// maka-agent is the resident agent of a tool sandbox (issue 26): a small
// static program, carried inside maka as maka-monitor is (internal/agentexe
// embeds it; maka verifies its digest and execs it from a sealed memfd), so
// that it runs in any root, whatever the image's libc. It is the sandbox's
// init, exec'd by libcontainer's init after the seccomp filter is loaded,
// so it and every command it starts run with the sandbox's own
// credentials, filter and limits. It holds one end of a socket pair (fd 3,
// SOCK_SEQPACKET) whose other end is maka's, outside, and on request starts
// a command: maka passes the command's stdin, stdout and stderr and a
// per-command sync socket as descriptors, so the output cap and the
// deadline stay outside. Before the command runs any code of its own it
// sends its credentials on the sync socket (the kernel translates its pid
// into maka's pid namespace, so maka never trusts a pid the agent reports),
// and waits until maka has placed it in the command's own cgroup.
//
// The agent accepts only this protocol, with bounded messages, answers
// nothing else, and is not dumpable: no process of the sandbox can read
// its memory or its descriptors. Its socket is unreachable by path and is
// closed in every command. A dead agent is a dead sandbox: maka treats the
// end of the socket as the end of the sandbox.
//
// Protocol (little-endian; struct layouts below, shared with
// internal/agent/agent.go):
//   maka -> agent  START: header, then cwd, argv and env as NUL-terminated
//                  strings; SCM_RIGHTS: stdin, stdout, stderr, sync (4 fds)
//                  SIGNAL: header with the id and the signal in flags
//   agent -> maka  STARTED (id, the pid as the sandbox sees it), EXITED (id,
//                  wait status, user and system µs, max RSS KiB), FAILED (id,
//                  errno) for a START it refused or could not fork.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CTL_FD 3
#define MAGIC 0x314b414dU /* "MAK1" */
#define MSG_START 1
#define MSG_SIGNAL 2
#define MSG_ATTACH 3
#define MSG_STARTED 16
#define MSG_EXITED 17
#define MSG_FAILED 18
#define MAX_MSG (256 * 1024)
#define MAX_STRINGS 4096
#define MAX_CMDS 64
#define MAX_CONNS 16

struct header {
	uint32_t magic, type, id, flags;
	uint32_t argc, envc;
};

struct reply {
	uint32_t magic, type, id, pad;
	int64_t a, b, c, d;
};

// A command belongs to the connection that started it: its replies go
// there, and only that connection may signal it.
struct cmd {
	uint32_t id;
	pid_t pid;
	int conn;
};

static struct cmd cmds[MAX_CMDS];
static char msg[MAX_MSG];
// conns[0] is fd 3, whose holder (maka, or the detached sandbox's monitor)
// is the sandbox's life: its end is the agent's. The others were attached
// through it (MSG_ATTACH), one per `maka exec`; -1: a free slot.
static int conns[MAX_CONNS];

static void drop_conn(int c)
{
	close(conns[c]);
	conns[c] = -1;
	for (int i = 0; i < MAX_CMDS; i++)
		if (cmds[i].pid > 0 && cmds[i].conn == c)
			cmds[i].conn = -1; // runs on; its end is reported to nobody
}

static void reply(int c, uint32_t type, uint32_t id, int64_t a, int64_t b, int64_t d1, int64_t d2)
{
	struct reply r = {.magic = MAGIC, .type = type, .id = id, .a = a, .b = b, .c = d1, .d = d2};
	if (c < 0 || conns[c] < 0)
		return;
	// The peer reads every reply; one that cannot be sent means it is
	// gone: the sandbox's holder (the agent ends), or one exec's client.
	// An exec's client that does not read is dropped rather than let it
	// stall the agent for every other.
	int flags = MSG_NOSIGNAL | (c == 0 ? 0 : MSG_DONTWAIT);
	if (send(conns[c], &r, sizeof(r), flags) != (ssize_t)sizeof(r) && errno != EINTR) {
		if (c == 0)
			_exit(0);
		drop_conn(c);
	}
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

// strings walks n NUL-terminated strings from *p, within end, into out.
static int strings(char **p, char *end, uint32_t n, char **out)
{
	for (uint32_t i = 0; i < n; i++) {
		char *s = *p;
		char *nul = memchr(s, '\0', end - s);
		if (nul == NULL)
			return -1;
		out[i] = s;
		*p = nul + 1;
	}
	out[n] = NULL;
	return 0;
}

// child runs in the forked command: sync with maka, then exec.
static void child(char *cwd, char **argv, char **envp, int *fds, const sigset_t *old)
{
	for (int c = 0; c < MAX_CONNS; c++)
		if (conns[c] >= 0)
			close(conns[c]);
	sigprocmask(SIG_SETMASK, old, NULL);
	signal(SIGPIPE, SIG_DFL);
	setsid();
	// Its credentials (pid, uid, gid), which maka receives translated by
	// the kernel, and then wait for maka's go: it is then in its cgroup.
	char b = 'R';
	if (write(fds[3], &b, 1) != 1)
		_exit(126);
	if (read(fds[3], &b, 1) != 1 || b != 'G')
		_exit(126);
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			_exit(126);
	for (int i = 0; i < 4; i++)
		if (fds[i] > 2)
			close(fds[i]);
	if (chdir(cwd) < 0) {
		dprintf(2, "maka: cwd %s: %s\n", cwd, strerror(errno));
		_exit(126);
	}
	environ = envp;
	execvpe(argv[0], argv, envp);
	dprintf(2, "maka: exec %s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

// attrs are what a command inherits from the agent that another process of
// the sandbox may change from outside it (its own uid owns the agent):
// limits, priority, scheduling, CPUs, I/O priority, OOM score and core dump
// filter. Each read keeps its result, a refused read included.
struct attrs {
	struct rlimit rl[RLIM_NLIMITS];
	int rlrc[RLIM_NLIMITS];
	int prio, policy, ioprio;
	struct sched_param sp;
	cpu_set_t cpus;
	int cpusrc;
	char oom[32], coredump[32];
};

static struct attrs initial;

static void read_file(const char *path, char *buf, size_t n)
{
	memset(buf, 0, n);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (read(fd, buf, n - 1) < 0)
		buf[0] = '\0';
	close(fd);
}

static void read_attrs(struct attrs *a)
{
	memset(a, 0, sizeof(*a));
	for (int i = 0; i < RLIM_NLIMITS; i++)
		a->rlrc[i] = getrlimit(i, &a->rl[i]) < 0 ? errno : 0;
	errno = 0;
	a->prio = getpriority(PRIO_PROCESS, 0);
	if (errno != 0)
		a->prio = -1000 - errno;
	a->policy = sched_getscheduler(0);
	if (sched_getparam(0, &a->sp) < 0)
		a->sp.sched_priority = -1;
	a->cpusrc = sched_getaffinity(0, sizeof(a->cpus), &a->cpus) < 0 ? errno : 0;
	a->ioprio = (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
	read_file("/proc/self/oom_score_adj", a->oom, sizeof(a->oom));
	read_file("/proc/self/coredump_filter", a->coredump, sizeof(a->coredump));
}

// tampered reports whether the agent's inherited attributes are not what
// they were when it started: a command changed them (prlimit, renice,
// sched_setscheduler, taskset, ionice, oom_score_adj), and they would pass
// to every later command. The agent cannot always change them back (a
// lowered hard limit stays lowered), so it refuses to start any further
// command: maka ends the sandbox.
static int tampered(void)
{
	struct attrs now;
	read_attrs(&now);
	for (int i = 0; i < RLIM_NLIMITS; i++)
		if (now.rlrc[i] != initial.rlrc[i] || now.rl[i].rlim_cur != initial.rl[i].rlim_cur ||
		    now.rl[i].rlim_max != initial.rl[i].rlim_max)
			return 1;
	return now.prio != initial.prio || now.policy != initial.policy ||
	       now.sp.sched_priority != initial.sp.sched_priority || now.cpusrc != initial.cpusrc ||
	       !CPU_EQUAL(&now.cpus, &initial.cpus) || now.ioprio != initial.ioprio ||
	       strcmp(now.oom, initial.oom) != 0 || strcmp(now.coredump, initial.coredump) != 0;
}

static void start(int c, struct header *h, char *body, char *end, int *fds, int nfds, const sigset_t *old)
{
	static char *argv[MAX_STRINGS + 1], *envp[MAX_STRINGS + 1];
	char *p = body, *cwd;
	int slot = -1;
	for (int i = 0; i < MAX_CMDS; i++)
		if (cmds[i].pid == 0) {
			slot = i;
			break;
		}
	if (nfds != 4 || h->argc < 1 || h->argc > MAX_STRINGS || h->envc > MAX_STRINGS || slot < 0) {
		reply(c, MSG_FAILED, h->id, slot < 0 ? EAGAIN : EINVAL, 0, 0, 0);
		close_fds(fds, nfds);
		return;
	}
	if (tampered()) {
		reply(c, MSG_FAILED, h->id, ENOTRECOVERABLE, 0, 0, 0);
		close_fds(fds, nfds);
		return;
	}
	char *one[2];
	if (strings(&p, end, 1, one) < 0 || strings(&p, end, h->argc, argv) < 0 || strings(&p, end, h->envc, envp) < 0 ||
	    argv[0][0] == '\0') {
		reply(c, MSG_FAILED, h->id, EINVAL, 0, 0, 0);
		close_fds(fds, nfds);
		return;
	}
	cwd = one[0];
	pid_t pid = fork();
	if (pid < 0) {
		reply(c, MSG_FAILED, h->id, errno, 0, 0, 0);
		close_fds(fds, nfds);
		return;
	}
	if (pid == 0)
		child(cwd, argv, envp, fds, old);
	close_fds(fds, nfds);
	cmds[slot].id = h->id;
	cmds[slot].pid = pid;
	cmds[slot].conn = c;
	reply(c, MSG_STARTED, h->id, pid, 0, 0, 0);
}

static void signal_cmd(int c, struct header *h)
{
	int sig = (int)h->flags;
	if (sig < 1 || sig > 64)
		return;
	for (int i = 0; i < MAX_CMDS; i++)
		if (cmds[i].pid > 0 && cmds[i].conn == c && cmds[i].id == h->id)
			kill(cmds[i].pid, sig);
}

// attach takes a new connection from the primary's holder: it must be one
// end of a SOCK_SEQPACKET pair (its other end goes to one `maka exec`).
static void attach(int *fds, int nfds)
{
	int type = 0;
	socklen_t len = sizeof(type);
	int slot = -1;
	for (int c = 1; c < MAX_CONNS && slot < 0; c++)
		if (conns[c] < 0)
			slot = c;
	if (nfds != 1 || slot < 0 || getsockopt(fds[0], SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET) {
		close_fds(fds, nfds); // its client reads the end
		return;
	}
	conns[slot] = fds[0];
}

// request reads one message from connection c; 0 means its peer closed
// its end.
static int request(int c, const sigset_t *old)
{
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = msg, .iov_len = sizeof(msg)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t n = recvmsg(conns[c], &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	int fds[8], nfds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int i = 0; i < k && nfds < 8; i++)
			memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	struct header h;
	if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof(h)) {
		close_fds(fds, nfds);
		return 1; // not the protocol: ignored
	}
	memcpy(&h, msg, sizeof(h));
	if (h.magic != MAGIC) {
		close_fds(fds, nfds);
		return 1;
	}
	switch (h.type) {
	case MSG_START:
		start(c, &h, msg + sizeof(h), msg + n, fds, nfds, old);
		break;
	case MSG_SIGNAL:
		close_fds(fds, nfds);
		signal_cmd(c, &h);
		break;
	case MSG_ATTACH:
		// Only the sandbox's holder attaches clients.
		if (c == 0)
			attach(fds, nfds);
		else
			close_fds(fds, nfds);
		break;
	default:
		close_fds(fds, nfds);
	}
	return 1;
}

// reap collects every child that ended (commands, and what the sandbox
// left to its init), reporting the commands'.
static void reap(void)
{
	for (;;) {
		int status;
		struct rusage ru;
		pid_t pid = wait4(-1, &status, WNOHANG, &ru);
		if (pid <= 0)
			return;
		for (int i = 0; i < MAX_CMDS; i++)
			if (cmds[i].pid == pid) {
				int64_t ut = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
				int64_t st = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
				reply(cmds[i].conn, MSG_EXITED, cmds[i].id, status, ut, st, ru.ru_maxrss);
				cmds[i].pid = 0;
			}
	}
}

static int agent_main(void)
{
	// Not dumpable: no process of the sandbox may read its memory or
	// its descriptors through /proc, nor trace it.
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	// Only the control socket stays: the binary's descriptor (it was
	// exec'd from one) and anything else inherited go.
	if (syscall(SYS_close_range, CTL_FD + 1, ~0U, 0) < 0) {
		struct rlimit rl;
		int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
		for (int fd = CTL_FD + 1; fd < max; fd++)
			close(fd);
	}
	// fd 3 must be maka's end of a SOCK_SEQPACKET pair, nothing else.
	int type = 0;
	socklen_t len = sizeof(type);
	if (getsockopt(CTL_FD, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
		return 1;
	if (fcntl(CTL_FD, F_SETFD, FD_CLOEXEC) < 0)
		return 1;
	read_attrs(&initial);
	signal(SIGPIPE, SIG_IGN);
	// SIGCHLD, and the signals that end a container (`maka kill`'s
	// default, a foreground run's ^C), through a descriptor: the last
	// end the sandbox only when sent from outside its pid namespace (the
	// kernel then reports no sender's pid). The init of a pid namespace
	// gets no signal from inside that it does not handle, and these it
	// ignores from inside: no command ends the sandbox by signalling it.
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return 1;
	conns[0] = CTL_FD;
	for (int c = 1; c < MAX_CONNS; c++)
		conns[c] = -1;
	for (;;) {
		struct pollfd p[MAX_CONNS + 1] = {{.fd = sfd, .events = POLLIN}};
		for (int c = 0; c < MAX_CONNS; c++)
			p[c + 1] = (struct pollfd){.fd = conns[c], .events = POLLIN}; // -1: ignored
		// A second's timeout: orphans reparented to the init are reaped
		// even if a SIGCHLD was merged away.
		int n = poll(p, MAX_CONNS + 1, 1000);
		if (n < 0 && errno != EINTR)
			return 1;
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				if (si.ssi_signo != SIGCHLD && si.ssi_pid == 0 && si.ssi_code == SI_USER)
					return 128 + (int)si.ssi_signo;
		}
		reap();
		for (int c = 0; c < MAX_CONNS; c++) {
			if (conns[c] < 0 || p[c + 1].fd != conns[c] || !(p[c + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (request(c, &old))
				continue;
			if (c == 0)
				return 0; // the holder is gone: the sandbox ends with its init
			drop_conn(c);
		}
	}
}

int main(void)
{
	return agent_main();
}
