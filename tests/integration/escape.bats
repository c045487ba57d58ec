#!/usr/bin/env bats
# Escape regressions (issue 15): each known way out of a container tried
# for real from inside, under restricted (the default) and baseline, with a
# config.json written to help the attacker where one can. Every test checks
# the outcome on the host side (the guest outside the container): a host
# file's checksum, a sysctl's value, the kernel log, mountinfo, the cgroup
# tree, a listener's log, a neighbour's or the monitor's process.
#
# Several attacks share a container: a container start costs seconds under
# emulation.

MAKA_POLICY=   # restricted, the default
load helpers
bats_require_minimum_version 1.5.0

# Under emulation on a loaded machine a container start takes 5–20 s and
# several tests start six or more: a wider hang detector.
BATS_TEST_TIMEOUT=$(( ${BATS_TEST_TIMEOUT:-240} > 600 ? ${BATS_TEST_TIMEOUT:-240} : 600 ))

HOSTDIR=/tmp/maka-escape   # host files the attacks aim at (guest's /tmp)

setup_file() {
  maka_setup_file
  install_escape
  BASELINE=$MAKA_REPO/tests/integration/fixtures/policy-baseline.json
  echo '{"profile": "restricted", "onViolation": "deny"}' > "$BATS_FILE_TMPDIR/deny.json"
  # Host targets: a file, a directory, a marker only the host can read.
  rm -rf "$HOSTDIR"
  mkdir -p "$HOSTDIR/victim" "$HOSTDIR/src"
  echo "host target $$" > "$HOSTDIR/target"
  echo "HOSTSECRET-$$-$RANDOM" > "$HOSTDIR/marker"
  chmod 0666 "$HOSTDIR/target"   # writable by anyone who reaches it
  chmod 1777 "$HOSTDIR/victim"
  # A host sysctl with a value no default has: a write from inside would change it.
  cat /proc/sys/kernel/core_pattern > "$BATS_FILE_TMPDIR/core_pattern.saved"
  echo "core-maka-escape-$$" > /proc/sys/kernel/core_pattern
}

teardown_file() {
  cat "$BATS_FILE_TMPDIR/core_pattern.saved" > /proc/sys/kernel/core_pattern 2>/dev/null || true
  rm -rf "$HOSTDIR"
  maka_teardown_file
}

teardown() { teardown_all_containers; }

BASELINE=$MAKA_REPO/tests/integration/fixtures/policy-baseline.json
baseline() { maka --policy "$BASELINE" "$@"; }
deny() { maka --policy "$BATS_FILE_TMPDIR/deny.json" "$@"; }

# policy_args NAME: the --policy arguments of restricted, baseline or deny.
policy_args() {
  case $1 in
    restricted) ;;
    baseline) echo "--policy $BASELINE" ;;
    deny) echo "--policy $BATS_FILE_TMPDIR/deny.json" ;;
  esac
}

# run_bg POLICY ID BUNDLE: run -d, the container's output in $BATS_TEST_TMPDIR/ID.out.
run_bg() {
  # shellcheck disable=SC2046
  "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" $(policy_args "$1") \
    run -d --bundle "$3" "$2" </dev/null >"$BATS_TEST_TMPDIR/$2.out" 2>&1
}

# run_fg POLICY ID BUNDLE: run in the foreground; $output and $status as `run`.
run_fg() {
  # shellcheck disable=SC2046
  run maka_io $(policy_args "$1") run --bundle "$3" "$2"
}

host_core() { cat /proc/sys/kernel/core_pattern; }
host_sum() { sha256sum "$1" | cut -d' ' -f1; }

# evil_root NAME: a copy of the rootfs the test may plant symlinks in; prints its path.
evil_root() {
  local r=$BATS_TEST_TMPDIR/$1
  cp -a "$MAKA_ROOTFS" "$r"
  chmod 0755 "$r"
  echo "$r"
}

@test "CVE-2019-5736: /proc/PID/exe of exec'd processes and of pid 1 never opens the runtime binary for writing; maka's checksum unchanged (restricted, baseline)" {
  local before busybox p
  before=$(host_sum "$MAKA_BINARY")
  busybox=$(host_sum "$MAKA_ROOTFS/bin/busybox")
  # The init tries every /proc/N/exe it sees, over and over until the
  # container is deleted, while the host execs into the container (each
  # exec's runtime init passes through the container's pid namespace).
  # shellcheck disable=SC2016
  local attacker='while :; do
    for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] && continue
      c=$(cat $d/comm 2>/dev/null) && [ "$c" != sh ] && [ "$c" != cat ] && echo "SAW $c"
      if { echo pwn >>"$d/exe"; } 2>/dev/null; then echo "WROTE $d/exe"; fi
    done; done'
  for p in baseline restricted; do
    make_bundle "$BATS_TEST_TMPDIR/$p" sh -c "$attacker"
    run_bg "$p" "ex-$p" "$BATS_TEST_TMPDIR/$p"
    # shellcheck disable=SC2046
    run maka $(policy_args "$p") exec "ex-$p" escape openrw:/proc/self/exe openrw:/proc/1/exe write:/proc/1/exe
    echo "$p: $output"
    [ "$status" -eq 0 ] || { echo "attacker:"; cat "$BATS_TEST_TMPDIR/ex-$p.out"; maka violations "ex-$p"; false; }
    [ "$(grep -c 'ret=-1 errno=\(ETXTBSY\|EACCES\|EPERM\|EROFS\)' <<<"$output")" -eq 3 ]
    # shellcheck disable=SC2046
    maka $(policy_args "$p") exec "ex-$p" sleep 2
    maka delete --force "ex-$p"
    echo "$p attacker:"; sort "$BATS_TEST_TMPDIR/ex-$p.out" | uniq -c
    ! grep -q WROTE "$BATS_TEST_TMPDIR/ex-$p.out" || false
    grep -q '^SAW ' "$BATS_TEST_TMPDIR/ex-$p.out"   # it did see the exec'd processes
  done
  [ "$(host_sum "$MAKA_BINARY")" = "$before" ]
  [ "$(host_sum "$MAKA_ROOTFS/bin/busybox")" = "$busybox" ]
}

@test "CVE-2024-21626: exec --cwd and process.cwd /proc/self/fd/N (every fd a created init holds, and 3..9) stay in the root or are refused; the host marker is never read nor written (baseline, restricted)" {
  local pid link fds=" 3 4 5 6 7 8 9" n out
  # The descriptors of a created init (create.bats checks what they are).
  make_bundle "$BATS_TEST_TMPDIR/c" sleep 300
  run maka_io --policy "$BASELINE" create -b "$BATS_TEST_TMPDIR/c" cw-created
  [ "$status" -eq 0 ]
  pid=$(container_pid cw-created)
  for link in /proc/"$pid"/fd/*; do
    n=${link##*/}
    [ "$n" -gt 2 ] && [[ "$fds" != *" $n"* ]] && fds+=" $n"
  done
  echo "fds:$fds"
  baseline start cw-created
  # shellcheck disable=SC2016
  local probe='pwd -P; cat ../../../../../../../..'"$HOSTDIR"'/marker ../../../..'"$HOSTDIR"'/marker 2>&1;
    echo pwn > ../../../../../../../..'"$HOSTDIR"'/victim/pwn-$N 2>&1; ls ../../../../../../../.. | tr "\n" " "'
  for n in $fds; do
    run baseline exec --cwd "/proc/self/fd/$n" --env "N=$n" cw-created sh -c "$probe"
    echo "exec --cwd /proc/self/fd/$n: $status: $output"
    [[ "$output" != *HOSTSECRET* ]]
  done
  # config.json's cwd, under both profiles: refused (nothing left), or
  # inside the root. The lowest and the highest fd of the list.
  local some
  # shellcheck disable=SC2086
  some="$(set -- $fds; echo "$1 ${!#}")"
  for n in $some; do
    for p in baseline restricted; do
      make_bundle "$BATS_TEST_TMPDIR/cwd$n" sh -c "$probe"
      update_config "$BATS_TEST_TMPDIR/cwd$n" ".process.cwd = \"/proc/self/fd/$n\" | .process.env += [\"N=$n\"]"
      run_fg "$p" "cw-$p-$n" "$BATS_TEST_TMPDIR/cwd$n"
      echo "$p process.cwd /proc/self/fd/$n: $status: $output"
      [[ "$output" != *HOSTSECRET* ]]
      if [ "$status" -ne 0 ]; then assert_nothing_left "cw-$p-$n"; fi
    done
  done
  # Host side: nothing was written to the host's directory.
  [ -z "$(ls -A "$HOSTDIR/victim")" ]
}

@test "a root whose /proc or /sys is a symlink is refused (libcontainer: not an ordinary directory); nothing left, the host's core_pattern unchanged (restricted, baseline)" {
  local r p what core
  core=$(host_core)
  for what in proc sys; do
    r=$(evil_root "root-$what")
    mkdir -p "$r/elsewhere"
    rm -rf "${r:?}/$what"
    ln -s /elsewhere "$r/$what"
    for p in restricted baseline; do
      make_bundle "$BATS_TEST_TMPDIR/b-$what-$p" sh -c 'echo core > /proc/sys/kernel/core_pattern; echo never > /sys/kernel/mm/transparent_hugepage/enabled; cat /proc/self/mountinfo'
      update_config "$BATS_TEST_TMPDIR/b-$what-$p" '.root.path = $r' --arg r "$r"
      run_fg "$p" "sl-$what-$p" "$BATS_TEST_TMPDIR/b-$what-$p"
      echo "$p, /$what -> /elsewhere: $status: $output"
      [ "$status" -ne 0 ]
      [[ "$output" == *"\"/$what\""*"must be mounted on ordinary directory"* ]]
      assert_nothing_left "sl-$what-$p"
    done
  done
  [ "$(host_core)" = "$core" ]
}

@test "symlinks out of the root at a mount destination, a masked path, a read-only path and /dev/null leave the host target, core_pattern and mountinfo unchanged (baseline, restricted)" {
  local r p sum core mounts
  sum=$(host_sum "$HOSTDIR/target")
  core=$(host_core)
  mounts=$(awk '{print $5}' /proc/self/mountinfo | sort)
  r=$(evil_root root-links)
  ln -s "$HOSTDIR/victim" "$r/mnt-link"                       # a bind's destination
  ln -s ../../../../../../../..$HOSTDIR/victim "$r/mnt-rel"     # the same, relative
  ln -s /proc/sys/kernel/core_pattern "$r/mask-link"          # a masked path
  ln -s ../../../../../../../..$HOSTDIR/target "$r/ro-link"     # a read-only path
  rm -f "$r/dev/null"; ln -s "$HOSTDIR/target" "$r/dev/null"  # /dev/null (under the /dev tmpfs)
  # shellcheck disable=SC2016
  local probe='for f in /mnt-link/pwn /mnt-rel/pwn /mask-link /ro-link /dev/null /dev/console; do
      echo pwn > $f 2>/dev/null && echo "wrote $f"; done; cat /proc/self/mountinfo'
  for p in baseline restricted; do
    make_bundle "$BATS_TEST_TMPDIR/b-$p" sh -c "$probe"
    update_config "$BATS_TEST_TMPDIR/b-$p" '.root.path = $r
        | .linux.maskedPaths += ["/mask-link"] | .linux.readonlyPaths += ["/ro-link"]' --arg r "$r"
    if [ "$p" = baseline ]; then
      update_config "$BATS_TEST_TMPDIR/b-$p" '.mounts += [
          {destination: "/mnt-link", type: "bind", source: $s, options: ["rbind", "rw"]},
          {destination: "/mnt-rel", type: "bind", source: $s, options: ["rbind", "rw"]}]' --arg s "$HOSTDIR/src"
    fi
    run_fg "$p" "ml-$p" "$BATS_TEST_TMPDIR/b-$p"
    echo "$p: $status: $output"
    echo "# $p: exit $status: $(grep -vE '^[0-9]+ [0-9]+ ' <<<"$output" | cut -c1-160 | tr '\n' ' ')" >&3
    if [ "$status" -ne 0 ]; then
      assert_nothing_left "ml-$p"
    fi
    [ "$(host_sum "$HOSTDIR/target")" = "$sum" ]
    [ "$(host_core)" = "$core" ]
    [ -z "$(ls -A "$HOSTDIR/victim")" ]
    [ "$(awk '{print $5}' /proc/self/mountinfo | sort)" = "$mounts" ]
    if [ "$p" = baseline ] && [ "$status" -eq 0 ]; then
      # The link was resolved in the root: the write went to the declared bind's source.
      [ "$(cat "$HOSTDIR/src/pwn")" = pwn ]
    fi
  done
}

# kernel_log_has TEXT: the host's kernel log holds TEXT.
kernel_log_has() { dmesg 2>/dev/null | grep -qF -- "$1"; }

@test "writes to /proc/sys, /proc/sysrq-trigger, /sys and /sys/fs/cgroup fail, also with config.json's masked and read-only lists dropped or /sys, /sys/fs/cgroup, /proc/sys asked read-write (refused, or read-only all the same); host sysctls, kernel log and cgroup tree unchanged" {
  local core thp cgroups p sysrq_before
  core=$(host_core)
  thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled)
  cgroups=$(find /sys/fs/cgroup -type d | sort)
  # The kernel log shows a sysrq write (the control: the host's own).
  echo h > /proc/sysrq-trigger
  sysrq_before=$(dmesg | grep -c 'sysrq: ' || true)
  [ "$sysrq_before" -ge 1 ]
  # shellcheck disable=SC2016
  local probe='cat /proc/sys/kernel/core_pattern
    echo core > /proc/sys/kernel/core_pattern && echo "WROTE core_pattern"
    echo h > /proc/sysrq-trigger && echo "WROTE sysrq-trigger"
    echo never > /sys/kernel/mm/transparent_hugepage/enabled && echo "WROTE thp"
    cg=/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)
    echo 4096 > $cg/memory.max && echo "WROTE memory.max"
    echo 1 > $cg/cgroup.kill && echo "WROTE cgroup.kill"
    mkdir /sys/fs/cgroup/maka-escape-child && echo "MADE cgroup"
    mkdir $cg/maka-escape-child && echo "MADE cgroup"
    awk "\$5 == \"/sys\" || \$5 == \"/sys/fs/cgroup\" || \$5 == \"/proc/sys\" {print \"mount\", \$5, \$6}" /proc/self/mountinfo
    echo done'
  for p in restricted baseline baseline-dropped; do
    make_bundle "$BATS_TEST_TMPDIR/$p" sh -c "$probe"
    [ "$p" = baseline-dropped ] && update_config "$BATS_TEST_TMPDIR/$p" '.linux.maskedPaths = [] | .linux.readonlyPaths = []'
    run_fg "${p%-dropped}" "sy-$p" "$BATS_TEST_TMPDIR/$p"
    echo "$p: $status: $output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "$core" ]   # the knob seen inside is the host's
    [[ "$output" == *done* ]]
    [[ "$output" != *WROTE* ]]
    [[ "$output" != *MADE* ]]
  done
  # A config.json that mounts /sys or /sys/fs/cgroup read-write, or
  # /proc/sys writable: refused before anything exists, or mounted
  # read-only all the same.
  local f pf
  for pf in 'restricted|(.mounts[] | select(.destination == "/sys") | .options) -= ["ro"]' \
           'baseline|(.mounts[] | select(.destination == "/sys") | .options) -= ["ro"]' \
           'baseline|(.mounts[] | select(.destination == "/sys/fs/cgroup") | .options) -= ["ro"]' \
           'baseline|.mounts += [{destination: "/proc/sys", type: "bind", source: "/proc/sys", options: ["rbind", "rw"]}]'; do
    p=${pf%%|*} f=${pf#*|}
    {
      make_bundle "$BATS_TEST_TMPDIR/rw" sh -c "$probe"
      update_config "$BATS_TEST_TMPDIR/rw" "$f"
      run_fg "$p" "sy-rw" "$BATS_TEST_TMPDIR/rw"
      echo "$p, $f: $status: $output"
      echo "# $p, $f: exit $status: $(grep -E '^mount |^BOUNDARY' <<<"$output" | cut -c1-120 | tr '\n' ' ')" >&3
      [[ "$output" != *WROTE* ]]
      [[ "$output" != *MADE* ]]
      if [ "$status" -eq 0 ]; then
        [[ "$output" == *done* ]]
        ! grep -E '^mount /(sys|sys/fs/cgroup|proc/sys) rw' <<<"$output" || false
      else
        [ "$status" -eq 1 ]
        [[ "$output" == BOUNDARY_REJECTED:* ]]
      fi
      assert_nothing_left sy-rw
    }
  done
  # Host side.
  [ "$(host_core)" = "$core" ]
  [ "$(cat /sys/kernel/mm/transparent_hugepage/enabled)" = "$thp" ]
  [ "$(dmesg | grep -c 'sysrq: ' || true)" = "$sysrq_before" ]
  [ "$(find /sys/fs/cgroup -type d -name maka-escape-child)" = "" ]
}

@test "io_uring, userfaultfd, bpf, perf, keyrings, modules, kexec, mknod and host devices are refused; watched calls recorded by the host's monitor; no module, kexec image, key or kernel-log line reaches the host (restricted, baseline)" {
  local modules kexec token=maka-escape-kmsg-$$-$RANDOM p
  modules=$(cut -d' ' -f1 /proc/modules | sort)
  kexec=$(cat /sys/kernel/kexec_loaded)
  # The kernel log shows what reaches /dev/kmsg (the control: the host's own).
  echo "maka-escape-control-$$" > /dev/kmsg
  dmesg | grep -qF "maka-escape-control-$$"
  local attempts="io_uring userfaultfd bpf perf add_key keyctl init_module module kexec mknod:/dev/kmsg-x:1:11 mknod:/dev/loop-x:7:0 openrw:/dev/kmsg-x"
  # shellcheck disable=SC2016
  local probe='escape '"$attempts"'; [ -c /dev/kmsg-x ] && echo '"$token"' > /dev/kmsg-x && echo "WROTE kmsg"; echo done'
  for p in deny baseline; do
    make_bundle "$BATS_TEST_TMPDIR/$p" sh -c "$probe"
    # baseline, helped: the capabilities it allows (CAP_MKNOD among them).
    [ "$p" = baseline ] && update_config "$BATS_TEST_TMPDIR/$p" '.process.capabilities = {
        bounding: $c, effective: $c, permitted: $c}' --argjson c \
        '["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FSETID","CAP_FOWNER","CAP_MKNOD","CAP_SETGID","CAP_SETUID","CAP_KILL"]'
    run_bg "$p" "sc-$p" "$BATS_TEST_TMPDIR/$p"
    wait_for_status "sc-$p" stopped 120
    output=$(cat "$BATS_TEST_TMPDIR/sc-$p.out")
    echo "$p: $output"
    [[ "$output" == *done* ]]
    [[ "$output" != *WROTE* ]]
    local a
    for a in $attempts; do
      case "$p:$a" in
        # CAP_MKNOD under baseline, but no device rule allows mknod (runc's
        # implicit "c *:* m" and "b *:* m" are not maka's): refused, so no
        # node is made and there is nothing to open.
        *:openrw:*) continue ;;
        *:io_uring) grep -Eq "^$a pid=[0-9]+ ret=-1 errno=(EPERM|ENOSYS)\$" <<<"$output" ;;
        *) grep -Eq "^$a pid=[0-9]+ ret=-1 errno=EPERM\$" <<<"$output" ;;
      esac || { echo "attempt $a not refused with EPERM"; false; }
    done
    run maka violations --format json "sc-$p"
    echo "$output"
    [ "$status" -eq 0 ]
    # The watched ones, recorded on the host side with their syscall.
    jq -e '[.[] | .syscall] as $s | ["userfaultfd", "bpf", "perf_event_open", "add_key", "keyctl",
        "init_module", "finit_module", "kexec_load"] | all(. as $w | $s | index($w))' <<<"$output"
    maka delete "sc-$p"
  done
  # Host side.
  [ "$(cut -d' ' -f1 /proc/modules | sort)" = "$modules" ]
  [ "$(cat /sys/kernel/kexec_loaded)" = "$kexec" ]
  ! grep -qF maka-escape /proc/keys 2>/dev/null || false
  ! dmesg | grep -qF "$token" || false
}

@test "a host abstract unix socket is unreachable from the closed network namespace; the host's listener sees only the host's own connection (restricted, baseline)" {
  local name=maka-escape-$$-$RANDOM log=$BATS_TEST_TMPDIR/listener.log p
  socat "ABSTRACT-LISTEN:$name,fork" SYSTEM:"echo connected >> $log; echo HOSTSIDE" &
  local lpid=$!
  # The listener works: the host reaches it (the control connection).
  local i
  for i in $(seq 50); do
    [ "$(socat -u "ABSTRACT-CONNECT:$name" - 2>/dev/null)" = HOSTSIDE ] && break
    sleep 0.2
  done
  [ "$(cat "$log")" = connected ]
  for p in restricted baseline; do
    make_bundle "$BATS_TEST_TMPDIR/$p" escape "abstract:$name"
    run_fg "$p" "ab-$p" "$BATS_TEST_TMPDIR/$p"
    echo "$p: $status: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == "abstract:$name pid="*" ret=-1 errno=ECONNREFUSED" ]]
    [[ "$output" != *HOSTSIDE* ]]
  done
  kill "$lpid"
  [ "$(cat "$log")" = connected ]   # only the host's own connection
}

# alive PID START: process PID still runs and is the one that started at START
# (field 22 of /proc/PID/stat).
alive() { [ "$(awk '{print $22}' "/proc/$1/stat" 2>/dev/null)" = "$2" ]; }
start_time() { awk '{print $22}' "/proc/$1/stat"; }

@test "another sandbox's processes, files and cgroup are out of reach: kill, /proc reads and cgroup writes from one fail, the other runs on with its file and limits (restricted, baseline)" {
  local p bpid bstart bcg bmem
  for p in restricted baseline; do
    make_bundle "$BATS_TEST_TMPDIR/vb-$p" sh -c 'echo neighbour-secret > /dev/shm/secret; exec sleep 300'
    run_bg "$p" "nb-b-$p" "$BATS_TEST_TMPDIR/vb-$p"
    bpid=$(container_pid "nb-b-$p")
    bstart=$(start_time "$bpid")
    bcg=$(cgroup_dir_of "nb-b-$p")
    bmem=$(cat "$bcg/memory.max")
    # The attacker knows the neighbour's host pid and cgroup.
    # shellcheck disable=SC2016
    local probe='kill -9 '"$bpid"' && echo "KILLED host pid"
      for d in /proc/[0-9]*; do [ "${d#/proc/}" = 1 ] || [ "${d#/proc/}" = $$ ] || echo "SEES $(cat $d/comm 2>/dev/null)"; done
      cat /proc/'"$bpid"'/root/dev/shm/secret /proc/'"$bpid"'/environ 2>/dev/null && echo "READ"
      ls /sys/fs/cgroup'"${bcg#/sys/fs/cgroup}"' >/dev/null 2>&1 && echo "sees its cgroup"
      echo 1 > /sys/fs/cgroup'"${bcg#/sys/fs/cgroup}"'/cgroup.kill && echo "WROTE cgroup.kill"
      echo 4096 > /sys/fs/cgroup'"${bcg#/sys/fs/cgroup}"'/memory.max && echo "WROTE memory.max"
      echo 1 > /sys/fs/cgroup'"${bcg#/sys/fs/cgroup}"'/cgroup.freeze && echo "WROTE cgroup.freeze"
      kill -9 -1; echo done'
    make_bundle "$BATS_TEST_TMPDIR/va-$p" sh -c "$probe"
    run_fg "$p" "nb-a-$p" "$BATS_TEST_TMPDIR/va-$p"
    echo "$p: $status: $output"
    [[ "$output" == *done* ]]
    [[ "$output" != *KILLED* ]]
    [[ "$output" != *SEES* ]]
    [[ "$output" != *READ* ]]
    [[ "$output" != *WROTE* ]]
    # Host side: the neighbour lives, in its cgroup, with its limit and file.
    alive "$bpid" "$bstart"
    grep -qx "$bpid" "$bcg/cgroup.procs"
    [ "$(cat "$bcg/memory.max")" = "$bmem" ]
    grep -q 'frozen 0' "$bcg/cgroup.events"
    # shellcheck disable=SC2046
    [ "$(maka $(policy_args "$p") exec "nb-b-$p" cat /dev/shm/secret)" = neighbour-secret ]
    maka delete --force "nb-b-$p"
  done
}

@test "the monitor is invisible and unreachable from inside: signals to its host pid, kill -1 and ptrace do not touch it; seen from the host it lives on with the same descriptors (restricted)" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 300
  run_bg deny mo "$BATS_TEST_TMPDIR/b"
  local mpid mstart mfds
  mpid=$(cat "$MAKA_ROOT/mo/monitor.pid")
  mstart=$(start_time "$mpid")
  mfds=$(ls -l "/proc/$mpid/fd" | awk 'NR > 1 {print $9, $11}')
  echo "monitor $mpid fds: $mfds"
  # shellcheck disable=SC2016
  run deny exec mo sh -c 'for d in /proc/[0-9]*; do echo "pid ${d#/proc/} $(cat $d/comm)"; done
    kill -9 '"$mpid"' || echo "no such pid"; kill -STOP '"$mpid"'
    ls /proc/'"$mpid"'/fd 2>&1
    escape ptrace; echo done; kill -9 -1'
  echo "$output"
  [[ "$output" == *done* ]]
  [[ "$output" != *maka* ]]   # no maka process seen from inside
  [[ "$output" == *"ptrace pid="*" ret=-1 errno=EPERM"* ]]
  # Host side: the same monitor, running (not stopped), its descriptors unchanged,
  # and it recorded the ptrace.
  alive "$mpid" "$mstart"
  [ "$(awk '{print $3}' "/proc/$mpid/stat")" != T ]
  [ "$(ls -l "/proc/$mpid/fd" | awk 'NR > 1 {print $9, $11}')" = "$mfds" ]
  run maka violations --format json mo
  echo "$output"
  jq -e 'any(.[]; .syscall == "ptrace")' <<<"$output"
}
