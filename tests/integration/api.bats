#!/usr/bin/env bats
# The Go API (libmaka/sandbox): its tests that launch real sandboxes
# (guest_test.go, built by `make fixtures` into sandbox.test) and the
# example program, run here in the guest.

load helpers

@test "Go API: launch, bounded commands (output cap, deadlines, queue), detached children killed, violations typed, nothing left" {
  run env MAKA_GUEST_TESTS=1 MAKA_ROOTFS="$MAKA_ROOTFS" "$MAKA_FIXTURES/sandbox.test" -test.v -test.run Guest -test.timeout 600s
  echo "$output"
  [ "$status" -eq 0 ]
  # every guest test ran: none skipped, none missing
  [ "$(grep -c '^--- PASS: TestGuest' <<<"$output")" -eq 4 ]
  ! grep -q '^--- SKIP' <<<"$output"
}

@test "examples/toolsandbox runs a command in a sandbox and removes it" {
  # Its defaults are /run/maka and /var/lib/maka: the guest's are throw-away.
  run "$MAKA_FIXTURES/toolsandbox" "$MAKA_ROOTFS"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "exit 0: done" ]
  # nothing of tool-1 is left: no state, no record, no cgroup
  run "$MAKA_BINARY" --root /run/maka --state-dir /var/lib/maka list -q
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  [ ! -e /run/maka/tool-1 ]
  [ -z "$(find /sys/fs/cgroup -name tool-1 -type d)" ]
}
