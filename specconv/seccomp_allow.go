package specconv

import "golang.org/x/sys/unix"

// allowedSyscalls is maka's allowlist: what ordinary programs (busybox,
// glibc, musl, Go, interpreters, servers) and libcontainer's init (between
// loading the filter and execve: capset, setgroups, setres[ug]id, prctl,
// chdir, the exec fifo's reopen, closing fds, execve) call. Written for
// maka in the spirit of containerd's and Podman's default profiles, without
// io_uring (its operations run outside seccomp's reach), without anything
// WatchedSyscalls or deniedSyscalls name, and without the kernel surface
// listed in excludedSyscalls. Names unknown to the running libseccomp are
// skipped by libcontainer; names of other architectures are harmless.
//
// open, openat, openat2 and creat are added by DefaultSeccomp (file audit
// notifies their write-mode forms); clone, personality and socket are
// allowed only with some arguments (see conditionalAllows).
var allowedSyscalls = []string{
	// Files, directories, descriptors.
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
	"close", "close_range", "lseek", "_llseek", "dup", "dup2", "dup3", "fcntl", "fcntl64", "flock", "ioctl",
	"stat", "fstat", "lstat", "stat64", "fstat64", "lstat64", "newfstatat", "fstatat64", "statx",
	"statfs", "fstatfs", "statfs64", "fstatfs64", "access", "faccessat", "faccessat2",
	"readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir", "umask",
	"mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2",
	"link", "linkat", "symlink", "symlinkat", "mknod", "mknodat",
	"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
	"chown32", "fchown32", "lchown32",
	"truncate", "ftruncate", "truncate64", "ftruncate64", "fallocate",
	"fsync", "fdatasync", "sync", "syncfs", "sync_file_range", "sync_file_range2", "arm_sync_file_range",
	"utime", "utimes", "utimensat", "utimensat_time64", "futimesat",
	"pipe", "pipe2", "sendfile", "sendfile64", "splice", "tee", "vmsplice", "copy_file_range",
	"fadvise64", "fadvise64_64", "arm_fadvise64_64", "readahead",
	"getxattr", "lgetxattr", "fgetxattr", "setxattr", "lsetxattr", "fsetxattr",
	"listxattr", "llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr",
	"getxattrat", "setxattrat", "listxattrat", "removexattrat",
	"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "memfd_create",
	// Waiting for descriptors and events; POSIX AIO (not io_uring).
	"poll", "ppoll", "ppoll_time64", "select", "_newselect", "pselect6", "pselect6_time64",
	"epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_wait", "epoll_wait_old",
	"epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "signalfd", "signalfd4",
	"timerfd_create", "timerfd_settime", "timerfd_gettime", "timerfd_settime64", "timerfd_gettime64",
	"io_setup", "io_destroy", "io_submit", "io_getevents", "io_pgetevents", "io_pgetevents_time64", "io_cancel",
	// Memory.
	"brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore",
	"mlock", "mlock2", "munlock", "mlockall", "munlockall", "remap_file_pages",
	"pkey_alloc", "pkey_free", "pkey_mprotect", "membarrier", "mseal", "map_shadow_stack", "cachestat",
	// Processes and threads (clone: see conditionalAllows).
	"fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "waitpid",
	"getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid",
	"getuid", "geteuid", "getgid", "getegid", "getuid32", "geteuid32", "getgid32", "getegid32",
	"getresuid", "getresgid", "getresuid32", "getresgid32",
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
	"setuid32", "setgid32", "setreuid32", "setregid32", "setresuid32", "setresgid32", "setfsuid32", "setfsgid32",
	"getgroups", "setgroups", "getgroups32", "setgroups32", "capget", "capset",
	"prctl", "arch_prctl", "set_tid_address", "set_robust_list", "get_robust_list", "rseq",
	"set_thread_area", "get_thread_area", "set_tls", "cacheflush", "breakpoint", "riscv_flush_icache",
	"futex", "futex_time64", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",
	"sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_setparam",
	"sched_getscheduler", "sched_setscheduler", "sched_get_priority_max", "sched_get_priority_min",
	"sched_rr_get_interval", "sched_rr_get_interval_time64", "sched_getattr", "sched_setattr",
	"getpriority", "setpriority", "ioprio_get", "ioprio_set",
	"getrlimit", "setrlimit", "prlimit64", "ugetrlimit", "getrusage", "times", "uname", "sysinfo", "getcpu",
	"pidfd_open", "pidfd_send_signal", "getrandom", "restart_syscall",
	// A process may narrow itself further: more seccomp filters, Landlock.
	"seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
	// Time.
	"alarm", "pause", "nanosleep", "clock_nanosleep", "clock_nanosleep_time64",
	"clock_gettime", "clock_gettime64", "clock_getres", "clock_getres_time64", "gettimeofday", "time",
	"getitimer", "setitimer", "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
	"timer_delete", "timer_settime64", "timer_gettime64",
	// Signals.
	"kill", "tkill", "tgkill", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend",
	"rt_sigpending", "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
	"sigaction", "sigprocmask", "sigreturn", "sigsuspend", "sigpending", "signal", "sigaltstack",
	// System V and POSIX IPC (in the sandbox's own IPC namespace).
	"shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semtimedop_time64", "semctl",
	"msgget", "msgsnd", "msgrcv", "msgctl", "ipc",
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedsend_time64", "mq_timedreceive",
	"mq_timedreceive_time64", "mq_notify", "mq_getsetattr",
	// Sockets (socket itself: see conditionalAllows).
	"socketpair", "bind", "connect", "listen", "accept", "accept4", "getsockname", "getpeername",
	"sendto", "recvfrom", "send", "recv", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "recvmmsg_time64",
	"shutdown", "setsockopt", "getsockopt",
}

// excludedSyscalls are left out of the allowlist on purpose (the default
// action refuses them with EPERM) and named here so that the profile's
// counts and the tests see them: kernel surface an untrusted program does
// not need, or that acts beyond the sandbox.
var excludedSyscalls = []string{
	// io_uring: its operations are not seen by seccomp (nor the file audit).
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// Another process's resources, NUMA placement of others' pages.
	"process_madvise", "process_mrelease", "move_pages", "migrate_pages",
	"mbind", "set_mempolicy", "get_mempolicy", "set_mempolicy_home_node",
	// Whole-system watches, secret memory, LSM attributes, the host name.
	"fanotify_init", "fanotify_mark", "memfd_secret",
	"lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules",
	"sethostname", "setdomainname", "modify_ldt", "uretprobe",
	// socketcall multiplexes socket(2) with its family in memory, out of
	// seccomp's reach: 32-bit programs must use the direct socket calls.
	"socketcall",
}

// Conditional allows: the argument values an ordinary program passes.
var (
	// personality: query (0xffffffff), PER_LINUX, and the two flags
	// containerd's and Podman's profiles also allow (UNAME26,
	// ADDR_NO_RANDOMIZE, which only touch the caller).
	allowedPersonalities = []uint64{0x0, 0x0008, 0x20000, 0x20008, 0xffffffff}
	// socket families: local, IPv4/IPv6, netlink (ip, getaddrinfo) and
	// packet (still needs CAP_NET_RAW); not the rarely used, often buggy
	// rest (vsock, alg, rds, tipc, bluetooth, ...).
	allowedSocketFamilies = []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK, unix.AF_PACKET}
)
