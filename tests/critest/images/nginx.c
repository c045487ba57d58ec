/* tests/critest/images/nginx.c: a stand-in for nginx in the web server images
 * make-images.py builds for `make critest` (critest pulls
 * registry.k8s.io/e2e-test-images/nginx:1.14-2 and
 * gcr.io/k8s-staging-cri-tools/hostnet-nginx-amd64; nginx itself is not
 * built here). It does what critest looks at, nothing more:
 *   - its command line reads "nginx: master process nginx -g daemon off;"
 *     (the ContainerPID test greps /proc/1/cmdline for "master process"), and
 *     its name is nginx (`pidof nginx` in the HostPID test);
 *   - its PID is in /var/run/nginx.pid (the HostPID test reads it);
 *   - it answers every HTTP request with 200 and a page on port $NGINX_PORT
 *     (80; 12003 in the hostnet image), on every address (port mapping and
 *     port forwarding tests);
 *   - SIGTERM, SIGINT and SIGQUIT end it (as PID 1 it needs handlers).
 * One connection at a time, each read bounded by a 5 s timeout. Static. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define TITLE "nginx: master process nginx -g daemon off;"

static const char page[] =
    "<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n"
    "<body><h1>Welcome to nginx!</h1><p>A stand-in for critest (maka).</p></body></html>\n";

static void quit(int sig) { _exit(0); (void)sig; }

int main(int argc, char **argv) {
  /* Re-exec under the title nginx gives its master process: execve of the
   * file itself (not /proc/self/exe) keeps the process name "nginx". */
  if (argc < 1 || strncmp(argv[0], "nginx: ", 7) != 0) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *args[] = {TITLE, NULL};
    if (n > 0) {
      self[n] = 0;
      execv(self, args);
    }
    execv("/usr/sbin/nginx", args);
    perror("nginx: re-exec");
    /* carry on without the title */
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = quit;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGQUIT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  const char *p = getenv("NGINX_PORT");
  int port = p ? atoi(p) : 80;
  if (port <= 0 || port > 65535) {
    fprintf(stderr, "nginx: bad NGINX_PORT %s\n", p);
    return 1;
  }
  int s = socket(AF_INET6, SOCK_STREAM, 0), fam6 = 1;
  if (s < 0) { /* no IPv6 in this network namespace */
    s = socket(AF_INET, SOCK_STREAM, 0);
    fam6 = 0;
  }
  if (s < 0) {
    perror("nginx: socket");
    return 1;
  }
  int one = 1, zero = 0;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (fam6) {
    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    struct sockaddr_in6 a6;
    memset(&a6, 0, sizeof(a6));
    a6.sin6_family = AF_INET6;
    a6.sin6_addr = in6addr_any;
    a6.sin6_port = htons(port);
    rc = bind(s, (struct sockaddr *)&a6, sizeof(a6));
  } else {
    struct sockaddr_in a4;
    memset(&a4, 0, sizeof(a4));
    a4.sin_family = AF_INET;
    a4.sin_addr.s_addr = htonl(INADDR_ANY);
    a4.sin_port = htons(port);
    rc = bind(s, (struct sockaddr *)&a4, sizeof(a4));
  }
  if (rc < 0 || listen(s, 64) < 0) {
    perror("nginx: bind/listen");
    return 1;
  }
  FILE *f = fopen("/var/run/nginx.pid", "w");
  if (f) {
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
  } else {
    perror("nginx: /var/run/nginx.pid");
  }
  fprintf(stderr, "nginx (stand-in): listening on port %d\n", port);

  char buf[8192], head[256];
  int hl = snprintf(head, sizeof(head),
                    "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html\r\n"
                    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                    sizeof(page) - 1);
  for (;;) {
    int c = accept(s, NULL, NULL);
    if (c < 0) {
      if (errno == EINTR)
        continue;
      perror("nginx: accept");
      sleep(1);
      continue;
    }
    struct timeval tv = {5, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    size_t got = 0;
    while (got < sizeof(buf) - 1) {
      ssize_t n = read(c, buf + got, sizeof(buf) - 1 - got);
      if (n <= 0)
        break;
      got += (size_t)n;
      buf[got] = 0;
      if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
        break;
    }
    if (got > 0) {
      if (write(c, head, (size_t)hl) == hl && strncmp(buf, "HEAD ", 5) != 0)
        (void)!write(c, page, sizeof(page) - 1);
    }
    close(c);
  }
}
