#!/usr/bin/env bats
# The flags of `create` (and `run`, which shares them): bundle, pid file,
# no-pivot, no-new-keyring, preserve-fds, LISTEN_FDS, console socket.

load helpers

bats_require_minimum_version 1.5.0

teardown() { teardown_all_containers; }

# nothing_left ID: no state, no cgroup named ID.
nothing_left() {
  [ ! -e "$MAKA_ROOT/$1" ] || { echo "state dir $MAKA_ROOT/$1 left" >&2; return 1; }
  [ -z "$(find /sys/fs/cgroup -type d -name "$1" 2>/dev/null)" ] || { echo "cgroup of $1 left" >&2; return 1; }
}

@test "create --bundle: absolute, -b relative to the caller's cwd, and the cwd when omitted" {
  local b=$BATS_TEST_TMPDIR/bundles/one
  make_bundle "$b" sleep 100
  run maka_io create --bundle "$b" cr-abs
  [ "$status" -eq 0 ]
  [ "$(maka state cr-abs | jq -r .bundle)" = "$b" ]

  cd "$BATS_TEST_TMPDIR/bundles"
  run maka_io create -b one cr-rel
  [ "$status" -eq 0 ]
  [ "$(maka state cr-rel | jq -r .bundle)" = "$b" ]

  cd "$b"
  run maka_io create cr-cwd
  [ "$status" -eq 0 ]
  [ "$(maka state cr-cwd | jq -r .bundle)" = "$b" ]
  [ "$(maka state cr-cwd | jq -r .status)" = created ]

  # no bundle flag and no config.json in the cwd: refused, naming it
  cd "$BATS_TEST_TMPDIR"
  run maka_io create cr-none
  [ "$status" -eq 1 ]
  [[ "$output" == *config.json* ]]
  [[ "$output" == *"$BATS_TEST_TMPDIR"* ]]
  nothing_left cr-none
}

@test "create --pid-file: relative to the caller's cwd, written atomically, there when create returns" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  mkdir -p "$BATS_TEST_TMPDIR/caller/pids"
  cd "$BATS_TEST_TMPDIR/caller"
  run maka_io create -b "$BATS_TEST_TMPDIR/b" --pid-file pids/c.pid cr-pid
  [ "$status" -eq 0 ]
  # checked right after create returned, before anything else runs
  [ -f pids/c.pid ]
  local pid content
  content=$(cat pids/c.pid)
  pid=$(maka state cr-pid | jq -r .pid)
  [ "$content" = "$pid" ]
  [ "$(wc -c <pids/c.pid)" -eq "${#pid}" ]          # the number alone, as runc
  [ "$(ls -A pids)" = c.pid ]                       # no temporary file left
  [ ! -e "$BATS_TEST_TMPDIR/b/pids" ]               # not resolved against the bundle
  [ "$(stat -c %a pids/c.pid)" = 644 ]
  # an existing pid file is replaced
  echo stale >pids/d.pid
  run maka_io create -b "$BATS_TEST_TMPDIR/b" --pid-file "$PWD/pids/d.pid" cr-pid2
  [ "$status" -eq 0 ]
  [ "$(cat pids/d.pid)" = "$(maka state cr-pid2 | jq -r .pid)" ]
  [ "$(ls -A pids | sort | tr '\n' ' ')" = "c.pid d.pid " ]

  # runc's create.bats fd-leak test: the created init holds only what runc's
  # holds (the caller's stdio, anonymous inodes, sockets, pipes, the exec
  # fifo, a procfs handle), and maka's binary sealed against CVE-2019-5736
  # (an overlayfs file "/maka", as runc's "/runc"): nothing of maka's state,
  # store, root or scaffold.
  local link target fd bad=
  for link in /proc/"$pid"/fd/*; do
    target=$(readlink "$link") || continue
    fd=$(basename "$link")
    echo "fd $fd -> $target"
    [ "$fd" -le 2 ] && continue
    if [ "$target" = /maka ] && [ -f "$link" ] && cmp -s "$link" "$MAKA_BINARY"; then
      continue
    fi
    grep -Eqx 'anon_inode:\[.+\]|/(proc)?|socket:\[[0-9]+\]|pipe:\[[0-9]+\]|.*/exec\.fifo|(/proc)?/1/task/1/fd|/memfd:runc_cloned:/proc/self/exe \(deleted\)' <<<"$target" || bad+=" $target"
  done
  [ -z "$bad" ] || { echo "leaked:$bad"; false; }
}

@test "create --pid-file in a missing directory fails and leaves nothing" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  run maka_io create -b "$BATS_TEST_TMPDIR/b" --pid-file "$BATS_TEST_TMPDIR/no/such/dir/c.pid" cr-piderr
  [ "$status" -eq 1 ]
  [[ "$output" == *"$BATS_TEST_TMPDIR/no/such/dir/c.pid"* ]]
  nothing_left cr-piderr
}

@test "create --no-pivot: the container still runs on its rootfs alone, and the choice is recorded" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'cat /etc/os-release; cat /proc/self/mountinfo'
  run maka run --no-pivot -b "$BATS_TEST_TMPDIR/b" cr-nopivot
  [ "$status" -eq 0 ]
  [[ "$output" == *'NAME="maka test rootfs"'* ]]
  # the host's mounts (/work over 9p, the guest's /tmp) are not in the container
  ! grep -q ' 9p \| /work' <<<"$output"
  grep -q '^[0-9]* [0-9]* [0-9:]* [^ ]* / ro,' <<<"$output"

  # the flag reaches libcontainer (runc's state.json field)
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  run maka_io create --no-pivot -b "$BATS_TEST_TMPDIR/b" cr-np1
  [ "$status" -eq 0 ]
  run maka_io create -b "$BATS_TEST_TMPDIR/b" cr-np2
  [ "$status" -eq 0 ]
  [ "$(jq -r .config.no_pivot_root "$MAKA_ROOT/cr-np1/state.json")" = true ]
  [ "$(jq -r '.config.no_pivot_root // false' "$MAKA_ROOT/cr-np2/state.json")" = false ]
}

@test "create --no-new-keyring: no session keyring named after the container (there is one without it)" {
  local b=$BATS_TEST_TMPDIR/b
  make_bundle "$b" sleep 100
  # /proc/keys is masked in the sandbox under every profile: the host's
  # /proc/keys shows the keyrings (uid 0's, viewable by the host's root).
  maka_io run -d -b "$b" cr-keyring
  maka_io run -d --no-new-keyring -b "$b" cr-nokeyring
  grep -q ' keyring *_ses\.cr-keyring: ' /proc/keys
  ! grep -q '_ses\.cr-nokeyring' /proc/keys
  maka delete --force cr-keyring
  maka delete --force cr-nokeyring
}

@test "create --preserve-fds N passes fds 3..3+N-1 (readable and writable) and no others" {
  local b=$BATS_TEST_TMPDIR/b in=$BATS_TEST_TMPDIR/in out=$BATS_TEST_TMPDIR/fd5
  echo from-fd4 >"$in"
  make_bundle "$b" sh -c '
    cat <&4
    echo to-fd5 >&5
    for fd in 3 4 5 6 7; do [ -e /proc/1/fd/$fd ] && echo "has $fd"; done; true'
  : >"$out"
  run maka run --preserve-fds 3 -b "$b" cr-fds 3</dev/null 4<"$in" 5>>"$out" 6</dev/null 7</dev/null
  [ "$status" -eq 0 ]
  [ "$(sed -n 1p <<<"$output")" = from-fd4 ]
  [ "$(sed -n '2,$p' <<<"$output" | tr '\n' ' ')" = "has 3 has 4 has 5 " ]
  [ "$(cat "$out")" = to-fd5 ]

  # without the flag, nothing beyond stdio
  make_bundle "$b" sh -c 'for fd in 3 4 5; do [ -e /proc/1/fd/$fd ] && echo "has $fd"; done; true'
  run maka run -b "$b" cr-nofds 3</dev/null 4<"$in" 5>>"$out"
  [ "$status" -eq 0 ]
  [ -z "$output" ]

  run maka run --preserve-fds -1 -b "$b" cr-negfds
  [ "$status" -eq 1 ]
  [[ "$output" == *preserve-fds* ]]
  nothing_left cr-negfds
}

# with_listen_fds N CMD...: CMD with LISTEN_PID set to its own pid (as
# systemd does for the service it activates) and LISTEN_FDS=N.
with_listen_fds() {
  local n=$1; shift
  sh -c 'LISTEN_PID=$$ LISTEN_FDS=$0; export LISTEN_PID LISTEN_FDS; exec "$@"' "$n" "$@"
}

@test "LISTEN_FDS (socket activation): fds 3.. pass to the container with LISTEN_FDS and LISTEN_PID=1, before --preserve-fds ones" {
  local b=$BATS_TEST_TMPDIR/b in3=$BATS_TEST_TMPDIR/in3 in4=$BATS_TEST_TMPDIR/in4
  echo listen-fd3 >"$in3"
  echo preserved-fd4 >"$in4"
  make_bundle "$b" sh -c 'echo "LISTEN_FDS=$LISTEN_FDS LISTEN_PID=$LISTEN_PID"; cat <&3; [ -e /proc/1/fd/4 ] && cat <&4; true'
  run with_listen_fds 1 "$MAKA_BINARY" --root "$MAKA_ROOT" run -b "$b" cr-listen 3<"$in3" 4<"$in4"
  [ "$status" -eq 0 ]
  [ "$output" = "LISTEN_FDS=1 LISTEN_PID=1
listen-fd3" ]

  run with_listen_fds 1 "$MAKA_BINARY" --root "$MAKA_ROOT" run --preserve-fds 1 -b "$b" cr-listen2 3<"$in3" 4<"$in4"
  [ "$status" -eq 0 ]
  [ "$output" = "LISTEN_FDS=1 LISTEN_PID=1
listen-fd3
preserved-fd4" ]
}

@test "LISTEN_FDS meant for another process (LISTEN_PID not maka's) is ignored, as runc" {
  local b=$BATS_TEST_TMPDIR/b in3=$BATS_TEST_TMPDIR/in3
  echo listen-fd3 >"$in3"
  make_bundle "$b" sh -c 'echo "LISTEN_FDS=${LISTEN_FDS-unset}"; [ -e /proc/1/fd/3 ] && echo "has 3"; true'
  LISTEN_FDS=1 LISTEN_PID=1 run maka run -b "$b" cr-stale 3<"$in3"
  [ "$status" -eq 0 ]
  [ "$output" = "LISTEN_FDS=unset" ]
}

@test "create --console-socket (relative path) with process.terminal: the socket receives the pty master" {
  command -v python3 >/dev/null || skip "python3 not installed"
  local b=$BATS_TEST_TMPDIR/b d=$BATS_TEST_TMPDIR/console
  mkdir -p "$d"
  make_bundle "$b" sh -c 'read line; echo "got <$line>"; tty; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-tty'
  update_config "$b" '.process.terminal = true'
  printf 'hello\n' >"$d/in"
  python3 "$BATS_TEST_DIRNAME/fixtures/recvtty.py" "$d/sock" "$d/out" "$d/in" 3>&- &
  local rpid=$!
  local i
  for i in $(seq 100); do [ -S "$d/sock" ] && break; sleep 0.1; done
  [ -S "$d/sock" ]

  cd "$d"
  run maka_io create --console-socket sock -b "$b" cr-console
  [ "$status" -eq 0 ]
  [ "$(maka state cr-console | jq -r .status)" = created ]
  run maka start cr-console
  [ "$status" -eq 0 ]
  wait_for_status cr-console stopped
  # the receiver stops when the container's side of the pty is closed
  for i in $(seq 100); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
  wait "$rpid"
  grep -q 'got <hello>' "$d/out"
  grep -q '^/dev/pts/[0-9]' "$d/out"
  grep -q 'all-tty' "$d/out"
}

@test "create with process.terminal and no --console-socket is refused, naming the socket; nothing left" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh
  update_config "$BATS_TEST_TMPDIR/b" '.process.terminal = true'
  run maka_io create -b "$BATS_TEST_TMPDIR/b" cr-tty-nosock
  [ "$status" -eq 1 ]
  [[ "$output" == *console-socket* ]]
  [[ "$output" == *terminal* ]]
  nothing_left cr-tty-nosock
}

@test "create --console-socket without process.terminal is refused; nothing left" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  run maka_io create --console-socket "$BATS_TEST_TMPDIR/sock" -b "$BATS_TEST_TMPDIR/b" cr-sock-notty
  [ "$status" -eq 1 ]
  [[ "$output" == *console-socket* ]]
  [[ "$output" == *terminal* ]]
  nothing_left cr-sock-notty
}

@test "create --console-socket to a path nobody listens on fails, naming it; nothing left" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh
  update_config "$BATS_TEST_TMPDIR/b" '.process.terminal = true'
  run maka_io create --console-socket "$BATS_TEST_TMPDIR/nosock" -b "$BATS_TEST_TMPDIR/b" cr-nosock
  [ "$status" -eq 1 ]
  [[ "$output" == *"$BATS_TEST_TMPDIR/nosock"* ]]
  nothing_left cr-nosock
}
