// The egress listener's helper: maka re-executes itself with
// _MAKA_EGRESS_LISTEN set, and this constructor, run before the Go runtime
// starts any thread, joins the sandbox's network namespace (and, for a
// sandbox with a user namespace, that user namespace first: a process with
// threads cannot, and rootless maka has no other way into the network
// namespace), makes the proxy's listening socket there, hands it to maka
// over a socket and exits. Nothing of maka's stays inside the sandbox.
//
// Inherited: fd 3 a pidfd of the sandbox's init (parked: it runs no code of
// the sandbox's yet), fd 4 the socket to send the listener on.
// _MAKA_EGRESS_LISTEN is "PORT" or "PORT:user".
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PIDFD_FD 3
#define SEND_FD 4

static void fail(const char *what)
{
	fprintf(stderr, "maka egress listener: %s: %s\n", what, strerror(errno));
	_exit(3);
}

__attribute__((constructor)) static void maka_egressns(void)
{
	const char *spec = getenv("_MAKA_EGRESS_LISTEN");
	if (spec == NULL)
		return;
	// Not to be read or traced by anyone while it is inside.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fail("prctl");
	// Nothing but its two descriptors (and stdio) goes into the sandbox's
	// namespaces with it, whatever its parent left open.
	if (syscall(SYS_close_range, SEND_FD + 1, ~0U, 0) < 0)
		for (int fd = SEND_FD + 1; fd < 1024; fd++)
			close(fd);
	char *end;
	long port = strtol(spec, &end, 10);
	if (end == spec || port < 1 || port > 65535 || (*end != '\0' && strcmp(end, ":user") != 0)) {
		errno = EINVAL;
		fail("_MAKA_EGRESS_LISTEN");
	}
	int flags = CLONE_NEWNET;
	if (strcmp(end, ":user") == 0)
		flags |= CLONE_NEWUSER;
	if (setns(PIDFD_FD, flags) < 0)
		fail("setns");
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		fail("socket");
	int one = 1;
	if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		fail("setsockopt");
	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		fail("bind");
	if (listen(s, 128) < 0)
		fail("listen");
	char byte = 'L';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &s, sizeof(int));
	if (sendmsg(SEND_FD, &msg, 0) != 1)
		fail("sendmsg");
	_exit(0);
}
