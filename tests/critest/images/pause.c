/* tests/critest/images/pause.c: the pod sandbox's process in the pause image
 * make-images.py builds for `make critest` (registry.k8s.io/pause), as
 * Kubernetes' build/pause/linux/pause.c does: PID 1 of the pod, it reaps
 * orphans and waits; SIGINT and SIGTERM end it (PID 1 of a PID namespace gets
 * no default action for them). Static, no libc beyond the calls below. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { _exit(0); (void)sig; }

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
}

int main(int argc, char **argv) {
  struct sigaction sa;
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("pause (maka critest stand-in)");
    return 0;
  }
  if (getpid() != 1)
    fprintf(stderr, "pause: warning: not PID 1\n");
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = quit;
  if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0)
    return 1;
  sa.sa_handler = reap;
  sa.sa_flags = SA_NOCLDSTOP;
  if (sigaction(SIGCHLD, &sa, NULL) < 0)
    return 2;
  for (;;)
    pause();
}
