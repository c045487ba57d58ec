#!/usr/bin/env bats
# Foreground `maka run`: the terminal (process.terminal), plain stdio,
# signal forwarding.

load helpers

teardown() {
  teardown_container tt
}

# script_run CMD: run the shell command CMD on a fresh pseudo-terminal (the
# guest gives the tests none); script's status is CMD's.  Its stdin is the
# caller's (default here: /dev/null, so that the pty has no size).
script_run() {
  script -qec "$1" /dev/null
}

# tty_bundle ARGS...: bundle $BATS_TEST_TMPDIR/b with process.terminal=true.
tty_bundle() {
  make_bundle "$BATS_TEST_TMPDIR/b" "$@"
  update_config "$BATS_TEST_TMPDIR/b" '.process.terminal = true'
}

MK() { echo "$MAKA_BINARY --root $MAKA_ROOT"; }

@test "run with process.terminal: the container sees a tty, its output and status reach the caller" {
  tty_bundle sh -c 'tty; test -t 0 && echo STDIN-TTY; test -t 1 && echo STDOUT-TTY
    for f in 0 1 2; do echo "fd$f -> $(readlink /proc/$$/fd/$f)"; done; echo bye; exit 4'
  run script_run "$(MK) run --bundle $BATS_TEST_TMPDIR/b tt" </dev/null
  [ "$status" -eq 4 ]
  [[ "$output" =~ fd0\ -\>\ /dev/pts/[0-9]+ ]]
  [[ "$output" =~ fd1\ -\>\ /dev/pts/[0-9]+ ]]
  [[ "$output" =~ fd2\ -\>\ /dev/pts/[0-9]+ ]]
  [[ "$output" =~ /dev/pts/[0-9]+ ]]
  [[ "$output" == *STDIN-TTY* ]]
  [[ "$output" == *STDOUT-TTY* ]]
  [[ "$output" == *bye* ]]
  # A foreground run removes its container.
  run maka state tt
  [ "$status" -eq 1 ]
}

@test "run with process.terminal: output has plain newlines (ONLCR off, as runc)" {
  tty_bundle printf 'l1\nl2\n'
  # script's stdin stays open: at EOF script types a byte into the terminal,
  # which maka relays and the container's terminal echoes ("^@"), before or
  # after the output (seen in the guest with </dev/null; any runtime would).
  run script_run "$(MK) run --bundle $BATS_TEST_TMPDIR/b tt >$BATS_TEST_TMPDIR/out" \
    < <(exec 2>/dev/null 3>&-; sleep 60)
  [ "$status" -eq 0 ]
  od -c "$BATS_TEST_TMPDIR/out"
  cmp "$BATS_TEST_TMPDIR/out" <(printf 'l1\nl2\n')
}

@test "run with process.terminal: stdin reaches the container's shell" {
  tty_bundle sh
  run bash -c "printf 'echo h\"\"i\nexit 5\n' | script -qec '$(MK) run --bundle $BATS_TEST_TMPDIR/b tt' /dev/null"
  [ "$status" -eq 5 ]
  # "h""i" typed, "hi" printed by the shell.
  [[ "$output" == *hi* ]]
}

@test "run with process.terminal: process.consoleSize sets the size when the caller's terminal has none" {
  tty_bundle stty size
  update_config "$BATS_TEST_TMPDIR/b" '.process.consoleSize = {height: 10, width: 110}'
  run script_run "$(MK) run --bundle $BATS_TEST_TMPDIR/b tt" </dev/null
  [ "$status" -eq 0 ]
  [[ "$output" == *"10 110"* ]]
}

@test "run with process.terminal: the caller's terminal size is applied, and followed on SIGWINCH" {
  # Print the size once it is 30x100 (the caller's at start), then once it
  # becomes 40x120 (after the caller's resize and SIGWINCH). The caller
  # resizes only once the first line is in script's typescript (-f: written
  # as it comes), so a slow start cannot see the second size first.
  tty_bundle sh -c '
    want() { i=0; while [ "$(stty size)" != "$1" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo "size: $(stty size)"; }
    want "30 100"; want "40 120"'
  local ts=$BATS_TEST_TMPDIR/typescript
  run script -qfec "stty rows 30 cols 100
    $(MK) run --bundle $BATS_TEST_TMPDIR/b tt & p=\$!
    i=0; until grep -q 'size: 30 100' $ts || [ \$i -ge 1200 ]; do sleep 0.1; i=\$((i+1)); done
    stty rows 40 cols 120; kill -WINCH \$p; wait \$p" "$ts" </dev/null
  [ "$status" -eq 0 ]
  [[ "$output" == *"size: 30 100"* ]]
  [[ "$output" == *"size: 40 120"* ]]
}

@test "run without a terminal passes stdin, stdout and stderr through, separately" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'cat; echo to-stderr >&2; exit 2'
  local rc=0
  echo piped-data | maka run --bundle "$BATS_TEST_TMPDIR/b" tt \
    >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" || rc=$?
  [ "$rc" -eq 2 ]
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = piped-data ]
  [ "$(cat "$BATS_TEST_TMPDIR/err")" = to-stderr ]
}

@test "run with process.terminal works when the caller has no terminal at all" {
  # runc would fail opening /dev/tty here; maka gives the container its pty
  # and copies its output.
  tty_bundle sh -c 'tty; stty size'
  run maka run --bundle "$BATS_TEST_TMPDIR/b" tt </dev/null
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ ^/dev/pts/[0-9]+ ]]
}

@test "a foreground run forwards the signals it receives to the container" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c \
    'trap "echo got-USR1" USR1; trap "echo got-TERM; exit 3" TERM; echo ready; while :; do sleep 0.1; done'
  "$MAKA_BINARY" --root "$MAKA_ROOT" run --bundle "$BATS_TEST_TMPDIR/b" tt \
    </dev/null >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
  local p=$! i
  for i in $(seq 300); do grep -q ready "$BATS_TEST_TMPDIR/out" && break; sleep 0.1; done
  grep -q ready "$BATS_TEST_TMPDIR/out"
  kill -USR1 "$p"
  for i in $(seq 300); do grep -q got-USR1 "$BATS_TEST_TMPDIR/out" && break; sleep 0.1; done
  grep -q got-USR1 "$BATS_TEST_TMPDIR/out"
  kill -0 "$p"
  kill -TERM "$p"
  local rc=0
  wait "$p" || rc=$?
  cat "$BATS_TEST_TMPDIR/out"
  [ "$rc" -eq 3 ]
  grep -q got-TERM "$BATS_TEST_TMPDIR/out"
}

@test "a foreground run with --console-socket is refused (as runc: the socket is for detached runs)" {
  tty_bundle true
  run maka run --bundle "$BATS_TEST_TMPDIR/b" --console-socket "$BATS_TEST_TMPDIR/s.sock" tt
  [ "$status" -ne 0 ]
  [[ "$output" == *console-socket* ]]
  run maka state tt
  [ "$status" -eq 1 ]
}

@test "run -d with process.terminal and --console-socket: the socket gets the terminal" {
  tty_bundle sh -c 'tty; echo from-console'
  local sock=$BATS_TEST_TMPDIR/c.sock out=$BATS_TEST_TMPDIR/c.out i
  python3 "$BATS_TEST_DIRNAME/fixtures/recvtty.py" "$sock" "$out" \
    </dev/null >"$BATS_TEST_TMPDIR/recvtty.log" 2>&1 3>&- &
  local rpid=$!
  for i in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
  run maka_io run -d --console-socket "$sock" --bundle "$BATS_TEST_TMPDIR/b" tt
  [ "$status" -eq 0 ]
  for i in $(seq 300); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
  wait "$rpid"
  grep -Eq '^/dev/pts/[0-9]+' "$out"
  grep -q from-console "$out"
}
