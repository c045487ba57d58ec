#!/usr/bin/env bats
# maka exec: a new process in a running container, as runc v1.5.3 runs it.

load helpers

# One long-running container ("ex") serves every test that only needs a
# running container: each container op costs seconds under emulation.
# Its process spec sets FROMSPEC=spec, gid 100 and noNewPrivileges=false,
# the base that exec inherits.
setup_file() {
  maka_setup_file
  make_bundle "$BATS_FILE_TMPDIR/ex" sleep 100000
  update_config "$BATS_FILE_TMPDIR/ex" \
    '.process.env += ["FROMSPEC=spec"] | .process.user.gid = 100 | .process.noNewPrivileges = false'
  maka_io run -d --bundle "$BATS_FILE_TMPDIR/ex" ex
  wait_for_status ex running
}

teardown_file() {
  maka delete --force ex >/dev/null 2>&1 || true
  maka_teardown_file
}

# script_run CMD: run the shell command CMD on a fresh pseudo-terminal (the
# guest gives the tests none); script's status is CMD's.
script_run() {
  script -qec "$1" /dev/null </dev/null
}

@test "exec runs the command inside the container's namespaces" {
  run maka exec ex sh -c 'echo hello; readlink /proc/self/ns/pid; readlink /proc/self/ns/mnt'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = hello ]
  local pid
  pid=$(container_pid ex)
  [ "${lines[1]}" = "$(readlink "/proc/$pid/ns/pid")" ]
  [ "${lines[2]}" = "$(readlink "/proc/$pid/ns/mnt")" ]
  [ "${lines[1]}" != "$(readlink /proc/self/ns/pid)" ]
}

@test "exec passes the exit status through: exit 7 gives 7, death by signal N gives 128+N" {
  run maka exec ex sh -c 'exit 7'
  [ "$status" -eq 7 ]
  run maka exec ex sh -c 'kill -KILL $$'
  [ "$status" -eq 137 ]
  run maka exec ex sh -c 'kill -TERM $$'
  [ "$status" -eq 143 ]
  run maka exec ex true
  [ "$status" -eq 0 ]
  [ "$output" = "" ]
}

@test "exec fails with 255 when the command does not exist" {
  run maka exec ex /no/such/binary
  [ "$status" -eq 255 ]
  [[ "$output" == *"/no/such/binary"* ]]
}

@test "exec --process FILE runs the runtime-spec process given in the file" {
  cat > "$BATS_TEST_TMPDIR/process.json" <<'JSON'
{
  "args": ["sh", "-c", "echo FOO=$FOO FROMSPEC=${FROMSPEC:-unset}; pwd; id -u; id -g"],
  "env": ["PATH=/bin:/sbin:/usr/bin", "FOO=fromfile"],
  "cwd": "/tmp",
  "user": {"uid": 1000, "gid": 1001}
}
JSON
  run maka exec --process "$BATS_TEST_TMPDIR/process.json" ex
  [ "$status" -eq 0 ]
  # The file is the whole process: the container's env is not merged in.
  [ "${lines[0]}" = "FOO=fromfile FROMSPEC=unset" ]
  [ "${lines[1]}" = /tmp ]
  [ "${lines[2]}" = 1000 ]
  [ "${lines[3]}" = 1001 ]

  # No env in the file: no PATH either, hence the absolute path.
  echo '{"args": ["/bin/sh", "-c", "exit 9"], "cwd": "/"}' > "$BATS_TEST_TMPDIR/p9.json"
  run maka exec -p "$BATS_TEST_TMPDIR/p9.json" ex
  [ "$status" -eq 9 ]

  echo '{"args": [' > "$BATS_TEST_TMPDIR/bad.json"
  run maka exec --process "$BATS_TEST_TMPDIR/bad.json" ex
  [ "$status" -eq 255 ]
}

@test "exec --detach --pid-file returns at once, writes the pid atomically, the process shows in ps" {
  mkdir "$BATS_TEST_TMPDIR/piddir"
  local pidfile=$BATS_TEST_TMPDIR/piddir/exec.pid
  run maka_io exec --detach --pid-file "$pidfile" ex sleep 4242
  [ "$status" -eq 0 ]
  [ "$output" = "" ]
  # Only the pid file: no temporary file left beside it.
  [ "$(ls -A "$BATS_TEST_TMPDIR/piddir")" = exec.pid ]
  local pid
  pid=$(cat "$pidfile")
  [[ "$pid" =~ ^[0-9]+$ ]]
  [ "$(tr '\0' ' ' < "/proc/$pid/cmdline")" = "sleep 4242 " ]
  run maka ps --format json ex
  [ "$status" -eq 0 ]
  jq -e --argjson p "$pid" 'index($p) != null' <<<"$output"
  kill -KILL "$pid"
}

@test "exec -d with a relative --pid-file writes it relative to the caller's directory" {
  cd "$BATS_TEST_TMPDIR"
  run maka_io exec -d --pid-file rel.pid ex true
  [ "$status" -eq 0 ]
  [[ "$(cat "$BATS_TEST_TMPDIR/rel.pid")" =~ ^[0-9]+$ ]]
}

@test "exec inherits the container's process.env; --env/-e adds and overrides variables" {
  run maka exec ex env
  [ "$status" -eq 0 ]
  [[ "$output" == *"FROMSPEC=spec"* ]]
  [[ "$output" == *"TERM=xterm"* ]]
  [[ "$output" == *"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"* ]]

  run maka exec --env NEWVAR=new -e FROMSPEC=over -e TERM=dumb --env LIST=a,b,c ex env
  [ "$status" -eq 0 ]
  # A comma is part of the value (no splitting of repeatable flags).
  [ "$(grep '^LIST=' <<<"$output")" = LIST=a,b,c ]
  [ "$(grep -c '^NEWVAR=' <<<"$output")" -eq 1 ]
  [ "$(grep '^NEWVAR=' <<<"$output")" = NEWVAR=new ]
  [ "$(grep '^FROMSPEC=' <<<"$output")" = FROMSPEC=over ]
  [ "$(grep '^TERM=' <<<"$output")" = TERM=dumb ]
  [[ "$output" == *"PATH=/usr/local/sbin:"* ]]

  # HOME, which the spec does not declare: maka's contract adds the init
  # user's; an exec'd process of another user gets its own, as under runc
  # (nobody's in the root's /etc/passwd, / for a uid without an entry), and
  # --env HOME wins. Each exactly once.
  run maka exec ex sh -c 'tr "\0" "\n" </proc/$$/environ | grep -c ^HOME=; echo "$HOME"'
  [ "$output" = "$(printf '1\n/root')" ]
  run maka exec --user 65534:65534 ex sh -c 'echo "$HOME"'
  [ "$output" = /nonexistent ]
  run maka exec --user 4242:4242 ex sh -c 'echo "$HOME"'
  [ "$output" = / ]
  run maka exec --user 65534:65534 -e HOME=/o ex sh -c 'tr "\0" "\n" </proc/$$/environ | grep -c ^HOME=; echo "$HOME"'
  [ "$output" = "$(printf '1\n/o')" ]
}

@test "exec --cwd sets the working directory (default: the container's process.cwd)" {
  run maka exec ex pwd
  [ "$status" -eq 0 ]
  [ "$output" = / ]
  run maka exec --cwd /tmp ex pwd
  [ "$status" -eq 0 ]
  [ "$output" = /tmp ]
  run maka exec --cwd /no/such/dir ex pwd
  [ "$status" -ne 0 ]
}

@test "exec --cgroup runs the process in an existing sub-cgroup of the container's (runc's), never outside it" {
  local dir
  dir=$(cgroup_dir_of ex)
  mkdir "$dir/sub"
  run maka exec --cgroup sub ex cat /proc/self/cgroup
  [ "$status" -eq 0 ]
  [ "$output" = "0::/sub" ]   # seen through the container's cgroup namespace
  run maka exec --cgroup /sub ex cat /proc/self/cgroup
  [ "$output" = "0::/sub" ]
  run maka exec --cgroup ../.. ex true
  [ "$status" -ne 0 ]
  [[ "$output" == *'--cgroup "../..": bad sub cgroup path: must stay below the container'* ]]
  run maka exec --cgroup nosuch ex true
  [ "$status" -ne 0 ]
  [[ "$output" == *'--cgroup "nosuch": no such sub-cgroup of the container'"'"'s cgroup: no such file or directory'* ]]   # runc's words end it
  [ ! -e "$dir/nosuch" ]
  rmdir "$dir/sub"
}

@test "exec --user UID:GID runs as that user and group; --user UID keeps the spec's gid" {
  run maka exec --user 1000:1000 ex sh -c 'id -u; id -g'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 1000 ]
  [ "${lines[1]}" = 1000 ]
  run maka exec -u 1001 ex sh -c 'id -u; id -g'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 1001 ]
  [ "${lines[1]}" = 100 ]
  run maka exec ex sh -c 'id -u; id -g'
  [ "${lines[0]}" = 0 ]
  [ "${lines[1]}" = 100 ]
  run maka exec --user nobody ex id -u
  [ "$status" -ne 0 ]
}

@test "exec --additional-gids adds supplementary groups" {
  run maka exec --user 1000:1000 --additional-gids 2000 -g 3000 ex id -G
  [ "$status" -eq 0 ]
  [ "$output" = "1000 2000 3000" ]
  run maka exec --user 1000:1000 ex id -G
  [ "$output" = 1000 ]
}

@test "exec --tty gives the process a terminal on stdin and stdout" {
  run script_run "$MAKA_BINARY --root $MAKA_ROOT exec --tty ex sh -c 'tty; test -t 0 && echo STDIN-TTY; test -t 1 && echo STDOUT-TTY'"
  [ "$status" -eq 0 ]
  [[ "$output" =~ /dev/pts/[0-9]+ ]]
  [[ "$output" == *STDIN-TTY* ]]
  [[ "$output" == *STDOUT-TTY* ]]
  # The exit status passes through the terminal too.
  run script_run "$MAKA_BINARY --root $MAKA_ROOT exec -t ex sh -c 'exit 6'"
  [ "$status" -eq 6 ]
  # Without --tty (and maka's stdio not a terminal) the process has none.
  run maka exec ex sh -c 'test -t 0 || test -t 1 || echo NO-TTY' </dev/null
  [ "$status" -eq 0 ]
  [ "$output" = NO-TTY ]
}

@test "exec --tty --detach --console-socket hands the pty master to the socket" {
  local sock=$BATS_TEST_TMPDIR/console.sock out=$BATS_TEST_TMPDIR/console.out
  python3 "$BATS_TEST_DIRNAME/fixtures/recvtty.py" "$sock" "$out" \
    </dev/null >"$BATS_TEST_TMPDIR/recvtty.log" 2>&1 3>&- &
  local rpid=$! i
  for i in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
  [ -S "$sock" ]
  run maka_io exec --tty --detach --console-socket "$sock" --pid-file "$BATS_TEST_TMPDIR/p" \
    ex sh -c 'tty; test -t 0 && echo STDIN-TTY; echo END'
  [ "$status" -eq 0 ]
  [ -s "$BATS_TEST_TMPDIR/p" ]
  # recvtty ends at the terminal's EOF, when the process has exited.
  for i in $(seq 300); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
  ! kill -0 "$rpid" 2>/dev/null
  wait "$rpid"
  cat "$out"
  grep -Eq '^/dev/pts/[0-9]+' "$out"
  grep -q STDIN-TTY "$out"
  grep -q END "$out"
}

@test "exec --console-socket without --tty is refused" {
  run maka exec --console-socket "$BATS_TEST_TMPDIR/none.sock" ex true
  [ "$status" -ne 0 ]
  [[ "$output" == *console-socket* ]]
}

@test "exec --tty --detach without --console-socket is refused" {
  run maka exec -t -d ex true
  [ "$status" -ne 0 ]
  [[ "$output" == *console-socket* ]]
}

@test "exec --preserve-fds N passes fds 3..3+N-1 to the process" {
  echo preserved-data > "$BATS_TEST_TMPDIR/fd3"
  run maka exec --preserve-fds 1 ex sh -c 'cat <&3' 3<"$BATS_TEST_TMPDIR/fd3"
  [ "$status" -eq 0 ]
  [ "$output" = preserved-data ]
  # Without the flag fd 3 is not passed.
  run maka exec ex sh -c 'cat <&3' 3<"$BATS_TEST_TMPDIR/fd3"
  [ "$status" -ne 0 ]
  [[ "$output" != *preserved-data* ]]
}

@test "exec --no-new-privs sets no_new_privs (the container's spec has it off)" {
  run maka exec ex grep NoNewPrivs /proc/self/status
  [ "$status" -eq 0 ]
  [[ "$output" =~ NoNewPrivs:[[:space:]]+0 ]]
  run maka exec --no-new-privs ex grep NoNewPrivs /proc/self/status
  [ "$status" -eq 0 ]
  [[ "$output" =~ NoNewPrivs:[[:space:]]+1 ]]
}

@test "exec --cap adds the capability to the effective set" {
  run maka exec ex sh -c 'grep CapEff /proc/self/status'
  [ "$status" -eq 0 ]
  local base=${output##*[[:space:]]}
  # CAP_NET_RAW (13) is not in the container's set, and baseline allows it.
  [ $(( 16#$base & (1 << 13) )) -eq 0 ]
  run maka exec --cap CAP_NET_RAW ex sh -c 'grep CapEff /proc/self/status'
  [ "$status" -eq 0 ]
  # No warning about ambient capabilities (the spec has no inheritable set).
  [ "${#lines[@]}" -eq 1 ]
  local with=${output##*[[:space:]]}
  [ $(( 16#$with )) -eq $(( 16#$base | (1 << 13) )) ]
}

@test "exec --cap of a capability the policy refuses is rejected with the field" {
  run maka exec --cap CAP_SYS_ADMIN ex true
  [ "$status" -ne 0 ]
  [[ "$output" == "BOUNDARY_REJECTED: "* ]]
  [[ "$output" == *"process.capabilities: CAP_SYS_ADMIN (bounding"*") is not allowed by profile baseline"* ]]
}

@test "foreground exec returns when its process exits, not when its background children do" {
  local start=$SECONDS rc=0
  maka exec ex sh -c 'sleep 120 & exit 0' >"$BATS_TEST_TMPDIR/out" 2>&1 </dev/null || rc=$?
  [ "$rc" -eq 0 ]
  [ $((SECONDS - start)) -lt 60 ]
}

@test "exec in a stopped container fails with 255 and names the state" {
  make_bundle "$BATS_TEST_TMPDIR/b" true
  run maka_io run -d --bundle "$BATS_TEST_TMPDIR/b" exstop
  [ "$status" -eq 0 ]
  wait_for_status exstop stopped
  run maka exec exstop echo hi
  [ "$status" -eq 255 ]
  [[ "$output" == *stopped* ]]
  [[ "$output" != *hi* ]]
  maka delete exstop
}

@test "exec in a missing container fails with 255 and \"does not exist\"" {
  run maka exec no-such-ctr true
  [ "$status" -eq 255 ]
  [[ "$output" == *"does not exist"* ]]
}

@test "exec in a paused container fails unless --ignore-paused" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100000
  maka_io run -d --bundle "$BATS_TEST_TMPDIR/b" expause
  wait_for_status expause running
  maka pause expause
  run maka exec expause echo hi
  [ "$status" -eq 255 ]
  [[ "$output" == *paused* ]]
  [[ "$output" != *hi* ]]
  # With --ignore-paused the exec proceeds once the container is resumed.
  ( sleep 3; "$MAKA_BINARY" --root "$MAKA_ROOT" resume expause ) </dev/null >/dev/null 2>&1 3>&- &
  local resumer=$!
  run maka exec --ignore-paused expause echo ok
  [ "$status" -eq 0 ]
  [ "$output" = ok ]
  wait "$resumer"
  [ "$(maka state expause | jq -r .status)" = running ]
  maka delete --force expause
}

@test "exec in a created (not started) container runs, as in runc, and leaves it created" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100000
  maka_io create --bundle "$BATS_TEST_TMPDIR/b" excreated
  wait_for_status excreated created
  run maka exec excreated sh -c 'echo in-created; readlink /proc/self/ns/pid'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = in-created ]
  [ "${lines[1]}" = "$(readlink "/proc/$(container_pid excreated)/ns/pid")" ]
  run maka state excreated
  [ "$(jq -r .status <<<"$output")" = created ]
  maka delete --force excreated
}

@test "exec without a command (and without --process) is refused" {
  run maka exec ex
  [ "$status" -ne 0 ]
  [[ "$output" == *"exec"* ]]
}

@test "exec is refused (255) when the container's maka.json is missing: nothing to hold the command to" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100000
  maka_io create --bundle "$BATS_TEST_TMPDIR/b" exnojson
  wait_for_status exnojson created
  rm "$MAKA_ROOT/exnojson/maka.json"
  run maka exec exnojson sh -c 'echo ran'
  echo "$output"
  [ "$status" -eq 255 ]
  [[ "$output" != *ran* ]]
  [[ "$output" == *"exnojson"*"maka.json"*"missing"* ]]
  run maka exec --timeout 10s exnojson sh -c 'echo ran'
  [ "$status" -eq 255 ]
  [[ "$output" == *"maka.json"*"missing"* ]]
  maka delete --force exnojson
  assert_nothing_left exnojson
}
