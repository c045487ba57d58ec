// maka-guard is a detached monitor's guard (libmaka/monitor/guard.go): the
// process that kills a sandbox whose monitor died, however it died. It is
// a separate program, and a freestanding one (no libc, a few KiB), because
// it is started for every detached sandbox while `maka start` or an engine
// waits: a guard that was a second start of the monitor's Go binary cost
// about a third of `maka start`'s time under emulation
// (docs/dev/performance.md, change 15). It does nothing until its monitor
// ends, and then only what must happen at once: the kill. What may wait
// (the journal's record of why) is written by the monitor's own binary,
// exec'd in this process once the sandbox is dead.
//
// Descriptors, set by the monitor (guard.go):
//   3  the sandbox's cgroup directory (a descriptor, never a path)
//   4  the read end of a pipe whose only write end the monitor holds
//   5  the monitor's own executable (for the record)
//   6  this program (a sealed memfd; closed at once)
// argv: maka-guard PROGRAM ARGS...: the record's command line, exec'd from
// fd 5 with the kill's result in MAKA_GUARD_KILL (0, or the errno of the
// failed cgroup.kill write).
//
// A byte 'd' on the pipe: the monitor ended in order; exit 0 and kill
// nothing. End of file (the kernel closed the monitor's write end): if the
// cgroup still has a process, kill it (cgroup.kill), then exec the record.
#include <asm/unistd.h>
#include <linux/fcntl.h>

#define CGROUP_FD 3
#define PIPE_FD 4
#define EXE_FD 5
#define SELF_FD 6
#define DISARM 'd'

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#define PR_SET_NAME_ 15
#define E_INTR 4
#define E_NOENT 2
#define E_NODEV 19

#if defined(__x86_64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
__asm__(".text\n.globl _start\n_start:\n"
	"\txor %rbp, %rbp\n\tmov %rsp, %rdi\n\tand $-16, %rsp\n\tcall guard_main\n\thlt\n");
#elif defined(__aarch64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory", "cc");
	return x0;
}
__asm__(".text\n.globl _start\n_start:\n\tmov x0, sp\n\tbl guard_main\n\tbrk #0\n");
#else
#error "maka-guard: x86_64 and aarch64 only"
#endif

#define sys3(n, a, b, c) sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define retry(n, a, b, c) retry_((n), (long)(a), (long)(b), (long)(c))

static void quit(int code)
{
	for (;;)
		sys3(__NR_exit_group, code, 0, 0);
}

static long retry_(long n, long a, long b, long c)
{
	long r;
	do
		r = sys3(n, a, b, c);
	while (r == -E_INTR);
	return r;
}

// populated: whether the cgroup has a process ("populated 1" in
// cgroup.events). A cgroup that is gone has none; one whose events cannot
// be read is taken as populated (killing an empty cgroup does no harm).
static int populated(void)
{
	static const char want[] = "populated 1";
	char buf[512];
	long fd = retry(__NR_openat, CGROUP_FD, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fd != -E_NOENT && fd != -E_NODEV;
	long n = retry(__NR_read, fd, buf, sizeof buf);
	sys3(__NR_close, fd, 0, 0);
	if (n < 0)
		return 1;
	for (long i = 0; i + (long)sizeof want - 1 <= n; i++) {
		long k = 0;
		while (k < (long)sizeof want - 1 && buf[i + k] == want[k])
			k++;
		if (k == (long)sizeof want - 1 && (i == 0 || buf[i - 1] == '\n'))
			return 1;
	}
	return 0;
}

// kill_cgroup writes cgroup.kill: 0, or the errno of the failure. A cgroup
// that is gone has nothing left to kill.
static long kill_cgroup(void)
{
	long fd = retry(__NR_openat, CGROUP_FD, "cgroup.kill", O_WRONLY | O_CLOEXEC);
	if (fd == -E_NOENT || fd == -E_NODEV)
		return 0;
	if (fd < 0)
		return -fd;
	long n = retry(__NR_write, fd, "1", 1);
	sys3(__NR_close, fd, 0, 0);
	if (n < 0 && n != -E_NODEV)
		return -n;
	return 0;
}

void guard_main(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	char c = 0;

	sys3(__NR_close, SELF_FD, 0, 0);
	// Its name, not the memfd's number it was exec'd as ("6").
	sys3(__NR_prctl, PR_SET_NAME_, "maka-guard", 0);
	long n = retry(__NR_read, PIPE_FD, &c, 1);
	if (n == 1 && c == DISARM)
		quit(0);
	sys3(__NR_close, PIPE_FD, 0, 0);
	// The monitor is gone. Nothing to do if the sandbox has no process
	// (it stopped, and its monitor with it).
	if (!populated())
		quit(0);
	long err = kill_cgroup();
	if (argc < 2)
		quit(err ? 2 : 1);
	// "MAKA_GUARD_KILL=" and the errno in decimal.
	char env[32] = "MAKA_GUARD_KILL=";
	char digits[12];
	int k = 0, i = 16;
	do
		digits[k++] = (char)('0' + err % 10);
	while ((err /= 10) > 0 && k < 11);
	while (k > 0)
		env[i++] = digits[--k];
	env[i] = 0;
	char *envp[] = {env, 0};
	// The record holds neither the cgroup nor its own executable.
	sys3(__NR_close, CGROUP_FD, 0, 0);
	sys3(__NR_fcntl, EXE_FD, F_SETFD, FD_CLOEXEC);
	sys6(__NR_execveat, EXE_FD, (long)"", (long)(argv + 1), (long)envp, AT_EMPTY_PATH, 0);
	// No record: maka's next command finds the sandbox dead without one.
	quit(3);
}
