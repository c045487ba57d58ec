/* tests/critest/images/nnp.c: Kubernetes' test/images/nonewprivs program
 * (registry.k8s.io/e2e-test-images/nonewprivs:1.3, which critest's
 * NoNewPrivs specs run), rewritten: installed setuid root by make-images.py,
 * it prints the effective uid it runs with. critest runs it as uid 1000 and
 * expects 0 without no_new_privs (the setuid bit took effect) and 1000 with
 * it. Static. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("Effective uid: %d\n", (int)geteuid());
  return 0;
}
