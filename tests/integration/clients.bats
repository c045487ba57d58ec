#!/usr/bin/env bats
# Real clients drive maka: Podman 4.3 (through conmon) and containerd 1.6
# (through its runc v2 shim), Debian's packages, side by side with Debian's
# runc in the same guest. Each scenario runs once per runtime and prints a
# transcript; the transcripts must be equal, except where maka's policy is
# stricter by design (each such difference is asserted).
#
# The configuration comes out of docs/clients.md (the block after each
# "file:" line), so the documented snippets are the tested ones.
#
# Costs (emulated guest): a Podman or ctr operation takes 1-10 s; the file
# shares one image import and one containerd for all tests. Each operation's
# time goes to build/clients-times.txt.

load helpers
bats_require_minimum_version 1.5.0

IMG=localhost/busybox:latest
RUNTIMES="runc maka"
# make soak's repeated OOM test with more rounds, delays or load than fit
# the default: MAKA_OOM_TIMEOUT seconds per test.
[ -z "${MAKA_OOM_TIMEOUT:-}" ] || BATS_TEST_TIMEOUT=$MAKA_OOM_TIMEOUT

# pm RUNTIME ARGS...: podman with runc (Debian's) or maka (containers.conf's table).
pm() {
  local rt=$1
  shift
  case $rt in
    runc) timed "podman-runc $1" podman --runtime /usr/sbin/runc "$@" ;;
    maka) timed "podman-maka $1" podman --runtime maka "$@" ;;
  esac
}

# runtime_binary RUNTIME: the binary the runc v2 shim runs (ctr --runc-binary).
runtime_binary() {
  case $1 in
    runc) echo /usr/sbin/runc ;;
    maka) echo "$CL_MAKA" ;;
  esac
}

# ctrt RUNTIME LABEL ARGS...: ctr, timed.
ctrt() {
  local rt=$1 label=$2
  shift 2
  timed "ctr-$rt $label" ctr "$@"
}

# task_status ID: the task's status in `ctr task ls` (RUNNING, PAUSED, STOPPED).
task_status() {
  ctr task ls | awk -v id="$1" '$1 == id { print $3 }'
}

wait_task_status() {
  local id=$1 want=$2 i
  for i in $(seq 1 100); do
    [ "$(task_status "$id")" = "$want" ] && return 0
    sleep 0.2
  done
  echo "task $id is $(task_status "$id"), not $want" >&2
  return 1
}

setup_file() {
  # Starts containerd on the default socket, mounts tmpfs on the engines'
  # storage and writes /etc/maka/policy.json: only in the throw-away guest.
  if [ ! -e /run/vmrun/cmd ]; then
    skip "starts containerd and writes /etc/maka/policy.json: runs only in the test guest (tests/vm)"
  fi
  command -v podman >/dev/null && command -v containerd >/dev/null && command -v ctr >/dev/null ||
    skip "needs podman, containerd and ctr"
  maka_setup_file
  export CL=$BATS_FILE_TMPDIR/clients
  export MAKA_TIMES=$MAKA_REPO/build/clients-times.txt
  mkdir -p "$CL/bin" "$(dirname "$MAKA_TIMES")"
  : > "$MAKA_TIMES"
  # maka from the guest's tmpfs, as runc comes from the (cached) root: the
  # shared work tree is read over uncached 9p at every exec.
  cp "$MAKA_BINARY" "$CL/bin/maka"
  export CL_MAKA=$CL/bin/maka
  # The policy reaches maka through the file only (see docs/clients.md).
  export MAKA_POLICY=
  local d
  for d in /var/lib/containers /var/lib/containerd; do
    mkdir -p "$d"
    mountpoint -q "$d" || mount -t tmpfs tmpfs "$d"
  done
  mkdir -p /etc/maka
  doc_block clients.md /etc/maka/policy.json > "$CL/policy.json"
  cp "$CL/policy.json" /etc/maka/policy.json
  doc_block clients.md containers.conf | sed "s#/usr/local/bin/maka#$CL_MAKA#" > "$CL/containers.conf"
  doc_block clients.md config.toml | sed "s#/usr/local/bin/maka#$CL_MAKA#" > "$CL/config.toml"
  grep -q "$CL_MAKA" "$CL/containers.conf" && grep -q "$CL_MAKA" "$CL/config.toml"
  export CONTAINERS_CONF=$CL/containers.conf

  tar -C "$MAKA_ROOTFS" -cf "$CL/rootfs.tar" .
  timed "podman import" podman import -q "$CL/rootfs.tar" "$IMG" >/dev/null
  timed "podman save" podman save -q --format oci-archive -o "$CL/busybox.tar" "$IMG"

  containerd --config "$CL/config.toml" config dump > "$CL/config-dump.toml"
  containerd --config "$CL/config.toml" </dev/null >"$CL/containerd.log" 2>&1 3>&- &
  echo $! > "$CL/containerd.pid"
  local i
  for i in $(seq 1 100); do
    ctr version >/dev/null 2>&1 && break
    sleep 0.2
  done
  timed "ctr image import" ctr image import "$CL/busybox.tar" >/dev/null
  ctr image ls -q | grep -qxF "$IMG"
}

teardown_file() {
  [ -n "${CL:-}" ] || return 0
  podman rm -af -t 0 >/dev/null 2>&1 || true
  local id
  for id in $(ctr task ls -q 2>/dev/null); do
    ctr task kill -s KILL "$id" >/dev/null 2>&1 || true
    ctr task delete -f "$id" >/dev/null 2>&1 || true
  done
  for id in $(ctr container ls -q 2>/dev/null); do
    ctr container delete "$id" >/dev/null 2>&1 || true
  done
  if [ -s "$CL/containerd.pid" ]; then
    kill "$(cat "$CL/containerd.pid")" 2>/dev/null || true
  fi
  rm -f /etc/maka/policy.json
  maka_teardown_file
}

teardown() {
  # A test that switches the policy gets the documented one back.
  [ -z "${CL:-}" ] || cp "$CL/policy.json" /etc/maka/policy.json
}

# on_terminal CMD: run the shell command CMD on a fresh pseudo-terminal
# (script(1); the guest gives the tests none) and print what the terminal
# showed; the status is CMD's.  script's stdin stays open until the terminal
# has shown /dev/pts/ (the container's `tty`), then closes: at its stdin's EOF
# script types the terminal's EOF character, and a client whose terminal is
# not raw yet reads that as the end of its input, closes the container's
# stdin, and the runc v2 shim then closes the console before the output is
# copied (an empty transcript, with runc as with maka).  ctr, on the other
# hand, returns only once its stdin has ended, so it must end.
on_terminal() {
  local fifo=$BATS_TEST_TMPDIR/term.in out=$BATS_TEST_TMPDIR/term.out pid w i rc=0
  rm -f "$fifo" "$out"
  mkfifo "$fifo"
  exec {w}<>"$fifo"
  script -qec "$1" /dev/null <"$fifo" >"$out" 2>&1 3>&- &
  pid=$!
  for i in $(seq 1 600); do
    grep -q /dev/pts/ "$out" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.2
  done
  exec {w}>&-
  wait $pid || rc=$?
  cat "$out"
  return $rc
}

# ---------------------------------------------------------------- Podman

@test "podman: run --rm and run -it give the same output with runc and maka; MAKA_POLICY in podman's environment does not reach maka" {
  local rt
  for rt in $RUNTIMES; do
    # A policy file that does not exist would fail maka's create if the
    # variable reached it: the documented file governs.
    MAKA_POLICY=/nonexistent/policy.json run pm $rt run --rm --network none "$IMG" echo hello
    echo "$rt: $output"
    [ "$status" -eq 0 ]
    [ "$output" = hello ]
    run timed "podman-$rt run-it" on_terminal "podman --runtime $(
      [ $rt = runc ] && echo /usr/sbin/runc || echo maka) run -it --rm --network none $IMG sh -c 'test -t 0 && test -t 1 && echo tty-ok; tty'"
    echo "$rt: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == *tty-ok* ]]
    [[ "$output" == */dev/pts/0* ]]
  done
}

# podman_lifecycle RUNTIME: a transcript of run -d, exec, ps, pause, unpause,
# stop, kill, wait, rm.
podman_lifecycle() {
  local rt=$1 c=pl-$1 k=pk-$1 out
  pm $rt run -d --name $c --network none "$IMG" sh -c 'trap "exit 0" TERM; sleep 100 & wait' >/dev/null
  echo "run-d: $(podman inspect $c --format '{{.State.Status}}')"
  echo "exec: $(pm $rt exec $c sh -c 'echo exec-ok; id -u')"
  pm $rt exec $c sh -c 'exit 3'
  echo "exec-status: $?"
  echo "ps: $(pm $rt ps --filter name=$c --format '{{.Names}} {{.Status}}' | awk '{print $1, $2}')"
  echo "top: $(pm $rt top $c pid args | sed 1d | wc -l)"
  pm $rt pause $c >/dev/null
  echo "pause: $(podman inspect $c --format '{{.State.Status}}')"
  pm $rt unpause $c >/dev/null
  echo "unpause: $(podman inspect $c --format '{{.State.Status}}')"
  pm $rt stop -t 20 $c >/dev/null
  echo "stop: $(podman inspect $c --format '{{.State.Status}} {{.State.ExitCode}}')"
  pm $rt rm $c >/dev/null
  echo "rm: $(podman ps -a --filter name=$c --format '{{.Names}}' | wc -l)"
  pm $rt run -d --name $k --network none "$IMG" sleep 100 >/dev/null
  pm $rt kill $k >/dev/null
  echo "kill-wait: $(pm $rt wait $k)"
  pm $rt rm $k >/dev/null
  echo "rm: $(podman ps -a --filter name=$k --format '{{.Names}}' | wc -l)"
}

@test "podman with runc: run -d, exec, ps, top, pause, unpause, stop, kill, wait and rm" {
  run podman_lifecycle runc
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "run-d: running
exec: exec-ok
0
exec-status: 3
ps: pl-runc Up
top: 2
pause: paused
unpause: running
stop: exited 0
rm: 0
kill-wait: 137
rm: 0" ]
  echo "${output//runc/RT}" > "$BATS_FILE_TMPDIR/podman-lifecycle.runc"
}

@test "podman with maka: the same transcript as with runc" {
  [ -s "$BATS_FILE_TMPDIR/podman-lifecycle.runc" ] || { echo "no runc transcript: the previous test failed" >&2; false; }
  run podman_lifecycle maka
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${output//maka/RT}" = "$(cat "$BATS_FILE_TMPDIR/podman-lifecycle.runc")" ]
}

@test "podman: --memory, --pids-limit and --cpus land in the cgroup files, --read-only gives a read-only root, the default container keeps the default capabilities" {
  local rt runc_limits runc_caps
  for rt in $RUNTIMES; do
    run pm $rt run --rm --network none --memory 64m --pids-limit 50 --cpus 0.5 --read-only "$IMG" sh -c '
      cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max /sys/fs/cgroup/cpu.max
      touch /x 2>/dev/null && echo root-rw || echo root-ro
      touch /tmp/x && echo tmp-rw'
    echo "$rt: $output"
    [ "$status" -eq 0 ]
    [ "$output" = "67108864
50
50000 100000
root-ro
tmp-rw" ]
    run pm $rt run --rm --network none "$IMG" sh -c 'grep CapEff /proc/self/status; touch /x && echo root-rw'
    echo "$rt: $output"
    [ "$status" -eq 0 ]
    # Podman's default set, which baseline allows: CHOWN DAC_OVERRIDE FOWNER
    # FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT
    # MKNOD AUDIT_WRITE SETFCAP.
    [ "$output" = "CapEff:	00000000a80425fb
root-rw" ]
  done
}

@test "podman: a missing command fails with status 127 and the runtime's message in podman's output" {
  local rt
  for rt in $RUNTIMES; do
    run -127 pm $rt run --rm --network none "$IMG" /nonexistent
    echo "$rt: $output"
    [ "$status" -eq 127 ]
    # Podman names the runtime by its path (runc) or its containers.conf name.
    [[ "$output" == "Error: "*"$rt: "*"/nonexistent"* ]]
  done
}

@test "podman under the restricted policy: maka refuses the default container with every reason in podman's output, runc runs it (stricter by design)" {
  echo '{"profile": "restricted"}' > /etc/maka/policy.json
  run pm runc run --rm --network none "$IMG" echo hello
  [ "$status" -eq 0 ]
  [ "$output" = hello ]
  run pm maka run --rm --name pr-maka --network none "$IMG" echo hello
  echo "$output"
  [ "$status" -eq 126 ]
  [[ "$output" == *"Error: OCI runtime error: maka: BOUNDARY_REJECTED: "[0-9]*" items refused by profile restricted: "* ]]
  # conmon passed the message on whole (a long one reached podman cut short).
  [[ "$output" != *"unexpected end of input"* ]]
  [[ "$output" == *"process.capabilities: CAP_"*" (bounding"*") is not allowed by profile restricted"* ]]
  [[ "$output" == *"linux.resources.pids.limit: 2048 pids exceed the largest allowed by profile restricted"* ]]
  [[ "$output" != *hello* ]]
  # podman run --rm removed its container after the refusal.
  [ -z "$(podman ps -a --filter name=pr-maka --format '{{.Names}}')" ]
}

@test "podman under baseline: a container may bind its own userdata, never another container's (runc binds it: maka is stricter by design)" {
  local victim other
  pm runc run -d --name pv-victim --network none "$IMG" sleep 100 >/dev/null
  victim=$(podman inspect pv-victim --format '{{.ID}}')
  # The victim's hosts, resolv.conf, hostname: podman's files of another container.
  run pm runc run --rm --network none -v "/run/containers/storage/overlay-containers/$victim/userdata:/v" "$IMG" ls /v/hosts
  [ "$status" -eq 0 ]
  run pm maka run --rm --name pv-maka --network none -v "/run/containers/storage/overlay-containers/$victim/userdata:/v" "$IMG" ls /v/hosts
  echo "$output"
  pm runc rm -f pv-victim >/dev/null
  [ "$status" -eq 126 ]
  [[ "$output" == *"BOUNDARY_REJECTED"* ]]
  [[ "$output" == *"binding the host path /run/containers/storage/overlay-containers/$victim/userdata is not allowed by profile baseline for container "* ]]
  [[ "$output" != *"/v/hosts"* ]]
  [ -z "$(podman ps -a --filter name=pv-maka --format '{{.Names}}')" ]
  # Its own files (the default binds) it keeps: the default container ran
  # above; here with its hostname read back.
  run pm maka run --rm --hostname own-files --network none "$IMG" cat /etc/hostname
  [ "$status" -eq 0 ]
  [ "$output" = own-files ]
}

@test "podman info reports maka's --version lines" {
  run pm maka info --format '{{.Host.OCIRuntime.Name}}|{{.Host.OCIRuntime.Version}}'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == "maka|maka version "*"commit: "*"spec: 1."* ]]
}

# ---------------------------------------------------------------- containerd

@test "containerd parses the documented config.toml: the maka runtime handler runs the runc v2 shim with BinaryName" {
  # The runtime's table, up to the next one that is not its options.
  run awk '/^ *\[/ { on = ($0 ~ /runtimes\.maka(\.options)?\]/) } on' "$CL/config-dump.toml"
  echo "$output"
  [[ "$output" == *'runtime_type = "io.containerd.runc.v2"'* ]]
  [[ "$output" == *"BinaryName = \"$CL_MAKA\""* ]]
  # and the CRI plugin loaded with it (it refuses a table without the default handler)
  [ "$(ctr plugins ls | awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" { print $NF }')" = ok ]
}

# ctr_lifecycle RUNTIME: a transcript of ctr run --rm, run -d, task exec,
# task ps, pause, resume, kill, delete.
ctr_lifecycle() {
  local rt=$1 bin c=cl-$1
  bin=$(runtime_binary $rt)
  echo "run-rm: $(ctrt $rt run-rm run --rm --runc-binary "$bin" "$IMG" cr-$rt echo hello)"
  ctrt $rt run-d run -d --runc-binary "$bin" "$IMG" $c sh -c 'trap "exit 0" TERM; sleep 100 & wait'
  echo "run-d: $(task_status $c)"
  echo "exec: $(ctrt $rt exec task exec --exec-id e1 $c sh -c 'echo exec-ok')"
  ctrt $rt exec task exec --exec-id e2 $c sh -c 'exit 3'
  echo "exec-status: $?"
  echo "ps: $(ctrt $rt ps task ps $c | sed 1d | wc -l)"
  ctrt $rt pause task pause $c
  echo "pause: $(task_status $c)"
  ctrt $rt resume task resume $c
  echo "resume: $(task_status $c)"
  ctrt $rt kill task kill $c
  wait_task_status $c STOPPED && echo "kill: STOPPED"
  echo "delete: $(ctrt $rt delete task delete $c 2>&1)"
  ctrt $rt container-delete container delete $c
  echo "left: $(ctr task ls -q | grep -c "^$c\$"; ctr container ls -q | grep -c "^$c\$")"
}

@test "containerd with runc: ctr run --rm, run -d, task exec, ps, pause, resume, kill, delete" {
  run ctr_lifecycle runc
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "run-rm: hello
run-d: RUNNING
exec: exec-ok
exec-status: 3
ps: 2
pause: PAUSED
resume: RUNNING
kill: STOPPED
delete: 
left: 0
0" ]
  echo "$output" > "$BATS_FILE_TMPDIR/ctr-lifecycle.runc"
}

@test "containerd with maka: the same transcript as with runc" {
  [ -s "$BATS_FILE_TMPDIR/ctr-lifecycle.runc" ] || { echo "no runc transcript: the previous test failed" >&2; false; }
  run ctr_lifecycle maka
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "$(cat "$BATS_FILE_TMPDIR/ctr-lifecycle.runc")" ]
}

# containerd 1.6's runc v2 shim reads memory.events only after an inotify
# event, through a watch it adds after `start` returns, in a goroutine of
# its own, and stops reading once the cgroup is empty or gone: its
# /tasks/oom is best effort. make soak's repeated test (clients.bats,
# below) saw it missed for runc and for maka on a loaded guest, with the
# task kept or removed, 1 s or 3 s after start (docs/clients.md). So each
# runtime gets three tries here; an event that never comes through maka in
# three is maka's failure.
@test "containerd: an out-of-memory kill reaches ctr events as /tasks/oom with exit status 137, with runc and maka" {
  local rt out try
  for rt in $RUNTIMES; do
    for try in 1 2 3; do
      out=$(oom_round "$rt" "co-$rt-$try" keep 3)
      echo "[$rt, try $try] $out"
      grep -q "/tasks/exit {\"container_id\":\"co-$rt-$try\".*\"exit_status\":137" <<<"$out"
      [[ "$out" != "oom 137"* ]] || break
    done
    [[ "$out" == "oom 137"* ]]
  done
}

@test "containerd: ctr run -t gives the container a terminal, with runc and maka" {
  local rt
  for rt in $RUNTIMES; do
    run timed "ctr-$rt run-t" on_terminal "ctr run --rm -t --runc-binary $(runtime_binary $rt) $IMG ct-$rt sh -c 'test -t 0 && echo tty-ok; tty'"
    echo "$rt: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == *tty-ok* ]]
    [[ "$output" == */dev/pts/0* ]]
  done
}

@test "containerd logged no error while driving runc and maka" {
  run grep 'level=error' "$CL/containerd.log"
  echo "$output"
  [ "$status" -eq 1 ]
}

@test "containerd under the restricted policy: maka's refusal reaches ctr's output, runc runs the container (stricter by design)" {
  echo '{"profile": "restricted"}' > /etc/maka/policy.json
  run ctrt runc run-rm run --rm --runc-binary /usr/sbin/runc "$IMG" cx-runc echo hello
  [ "$status" -eq 0 ]
  [ "$output" = hello ]
  run ctrt maka run-rm run --rm --runc-binary "$CL_MAKA" "$IMG" cx-maka echo hello
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"BOUNDARY_REJECTED: "[0-9]*" items refused by profile restricted: "* ]]
  [[ "$output" != *"unexpected end of input"* ]]
  [[ "$output" == *"process.capabilities"* ]]
  [[ "$output" != *hello* ]]
  ctr container delete cx-maka 2>/dev/null || true
  [ -z "$(ctr task ls -q | grep -x cx-maka)" ]
}

@test "refusals of every size reach podman and ctr whole: bounded, the code and count first, the rest named in maka boundary (100 refused binds, all capabilities, the default container)" {
  echo '{"profile": "restricted"}' > /etc/maka/policy.json
  local i vols=() mounts=()
  for i in $(seq 1 100); do
    vols+=(-v "/etc:/m$i:ro")
    mounts+=(--mount "type=bind,src=/etc,dst=/m$i,options=rbind:ro")
  done
  local mix
  for mix in "" "--cap-add ALL" "--cap-add ALL ${vols[*]}"; do
    # shellcheck disable=SC2086
    run pm maka run --rm --name pr-mix --network none $mix "$IMG" echo hello
    echo "podman [${mix:0:40}]: ${#output} bytes"
    echo "$output" | head -c 600
    [ "$status" -eq 126 ]
    [[ "$output" == *"Error: OCI runtime error: maka: BOUNDARY_REJECTED: "[0-9]*" items refused by profile restricted: "* ]]
    [[ "$output" != *"unexpected end of input"* && "$output" != *readString* && "$output" != *"syncInfo"* ]]
    [[ "$output" == *"process.capabilities"* ]]
    [[ "$output" != *hello* ]]
    [ -z "$(podman ps -a --filter name=pr-mix --format '{{.Names}}')" ]
  done
  # the 100 binds: cut at whole lines, with the count of the rest
  [[ "$output" == *"mounts["*"].source"* ]]
  [[ "$output" == *" more: \`maka boundary\` on the bundle lists every item"* ]]
  [ "${#output}" -lt 6400 ]

  run ctrt maka run-rm run --rm --runc-binary "$CL_MAKA" "${mounts[@]}" "$IMG" cx-mix echo hello
  echo "ctr: ${#output} bytes"
  echo "$output" | head -c 600
  [ "$status" -ne 0 ]
  [[ "$output" == *"BOUNDARY_REJECTED: "[0-9]*" items refused by profile restricted: "* ]]
  [[ "$output" == *" more: \`maka boundary\` on the bundle lists every item"* ]]
  [[ "$output" != *hello* ]]
  ctr container delete cx-mix 2>/dev/null || true
  [ -z "$(ctr task ls -q | grep -x cx-mix)" ]
}

# ---------------------------------------------------------------- maka itself

@test "a writable root gets missing mount points created in it (Podman's /run/.containerenv); a read-only root gets them outside it" {
  local wr=$BATS_TEST_TMPDIR/wr-rootfs
  cp -a "$MAKA_ROOTFS" "$wr"
  make_bundle "$BATS_TEST_TMPDIR/b" cat /.containerenv /nowhere/f
  echo env-ok > "$BATS_TEST_TMPDIR/containerenv"
  echo dir-ok > "$BATS_TEST_TMPDIR/f"
  update_config "$BATS_TEST_TMPDIR/b" '.root = {path: $wr, readonly: false}
    | .mounts += [{destination: "/.containerenv", type: "bind", source: $env, options: ["rbind", "ro"]},
                  {destination: "/nowhere/f", type: "bind", source: $f, options: ["rbind", "ro"]}]' \
    --arg wr "$wr" --arg env "$BATS_TEST_TMPDIR/containerenv" --arg f "$BATS_TEST_TMPDIR/f"
  local policy=$MAKA_REPO/tests/integration/fixtures/policy-baseline.json
  run maka --policy "$policy" run --bundle "$BATS_TEST_TMPDIR/b" wr-mp
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "env-ok
dir-ok" ]
  [ -f "$wr/.containerenv" ]
  [ -d "$wr/nowhere" ]
  rm -rf "${wr:?}/nowhere" "$wr/.containerenv"
  update_config "$BATS_TEST_TMPDIR/b" '.root.readonly = true'
  run maka_io --policy "$policy" run --bundle "$BATS_TEST_TMPDIR/b" wr-mp
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "env-ok
dir-ok" ]
  [ ! -e "$wr/.containerenv" ]
  [ ! -e "$wr/nowhere" ]
}

# oom_round RUNTIME ID RM DELAY: one out-of-memory kill through containerd
# (with --rm when RM is "rm", else the task is kept until the check), the
# process allocating DELAY seconds after its start; prints "oom" or
# "no-oom", then maka's journal and the events seen.
oom_round() {
  local rt=$1 c=$2 rm=$3 delay=$4 bin ev evpid st i
  bin=$(runtime_binary "$rt")
  ev=$BATS_TEST_TMPDIR/ev.$c
  ctr events > "$ev" 2>&1 3>&- &
  evpid=$!
  local rmflag=(--rm)
  [ "$rm" = rm ] || rmflag=()
  st=0
  ctr run "${rmflag[@]}" --runc-binary "$bin" --memory-limit 16777216 "$IMG" "$c" \
    sh -c "sleep $delay; "'x=a; while true; do x=$x$x; done' >/dev/null 2>&1 || st=$?
  for i in $(seq 50); do
    grep -q "/tasks/oom {\"container_id\":\"$c\"}" "$ev" && break
    sleep 0.1
  done
  if grep -q "/tasks/oom {\"container_id\":\"$c\"}" "$ev"; then echo "oom $st"; else echo "no-oom $st"; fi
  if [ "$rm" != rm ]; then
    [ "$rt" != maka ] || "$bin" --root /run/containerd/runc/default violations "$c" 2>&1 | tail -3
    ctr task delete "$c" >/dev/null 2>&1 || true
    ctr container delete "$c" >/dev/null 2>&1 || true
  fi
  kill "$evpid"; wait "$evpid" 2>/dev/null || true
  grep -E "/tasks/(oom|exit)" "$ev" | sed 's/^/  /'
}

# bats test_tags=soak
@test "soak: an out-of-memory kill reaches ctr events as /tasks/oom, MAKA_OOM_ROUNDS rounds per runtime: with the task kept and removed; maka misses no more than runc (the shim's races)" {
  local rt r n=${MAKA_OOM_ROUNDS:-2} out hogs=() h d delays=${MAKA_OOM_DELAYS:-3} key mode
  # MAKA_OOM_LOAD=N: N busy loops beside the rounds, as a loaded CI host
  # starves the guest (the races need it); MAKA_OOM_DELAYS: the seconds
  # the process waits before it allocates (1 shows the late watch).
  for h in $(seq "${MAKA_OOM_LOAD:-0}"); do
    sh -c 'while :; do :; done' 3>&- &
    hogs+=($!)
  done
  declare -A missed=()
  for r in $(seq "$n"); do
    for d in $delays; do
      for rt in $RUNTIMES; do
        for mode in keep rm; do
          out=$(oom_round "$rt" "oom-$rt-$mode-$d-$r" "$mode" "$d")
          echo "[$rt $mode delay $d, round $r] $out"
          key="$mode $d $rt"
          missed[$key]=${missed[$key]:-0}
          [[ "$out" == "oom 137"* ]] || missed[$key]=$((missed[$key] + 1))
        done
      done
    done
  done
  [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}"
  for key in "${!missed[@]}"; do echo "missed ($key): ${missed[$key]} of $n"; done
  # The shim's misses are the same for every runtime: maka may lose no more
  # than runc does (all modes and delays), give or take two.
  local m=0 rc=0
  for key in "${!missed[@]}"; do
    if [[ $key == *maka ]]; then m=$((m + missed[$key])); else rc=$((rc + missed[$key])); fi
  done
  echo "maka missed $m, runc $rc"
  [ "$m" -le $((rc + 2)) ]
}
