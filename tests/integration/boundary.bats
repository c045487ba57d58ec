#!/usr/bin/env bats
# The boundary contract, observed for real: the restricted profile's
# defaults seen from inside the container and from its cgroup, every
# policy item refused before anything is created, `maka boundary` and
# `maka policy show`, and a root filesystem that maka never writes.

MAKA_POLICY=   # no --policy: the built-in default, restricted
load helpers
bats_require_minimum_version 1.5.0

MiB=1048576

# Mounts a test made below its directory (a failed test leaves them).
teardown() {
  local m
  for m in $(awk -v d="$BATS_TEST_TMPDIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount "$m" || true
  done
}

# reject_case JQ_FILTER FIELD: a bundle edited by JQ_FILTER is refused under
# restricted with FIELD named, exit 1, and leaves nothing behind.
reject_case() {
  local filter=$1 field=$2 id=bd-rej
  make_bundle "$BATS_TEST_TMPDIR/rej" true
  update_config "$BATS_TEST_TMPDIR/rej" "$filter"
  run maka_io create --bundle "$BATS_TEST_TMPDIR/rej" "$id"
  if [ "$status" -ne 1 ] || [[ "$output" != "BOUNDARY_REJECTED: "* ]] || [[ "$output" != *"$field: "* ]]; then
    echo "filter $filter: status $status, want 1 and BOUNDARY_REJECTED naming $field; output:" >&2
    echo "$output" >&2
    return 1
  fi
  assert_nothing_left "$id"
}

@test "maka spec passes restricted as it is, and maka boundary says so in one screen" {
  make_bundle "$BATS_TEST_TMPDIR/b" true
  run maka boundary --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 0 ]
  [[ "$output" == *"verdict       allowed by profile restricted"* ]]
  [ "${#lines[@]}" -le 25 ]
  run --separate-stderr maka boundary --bundle "$BATS_TEST_TMPDIR/b" --format json
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  jq -e --argjson mib "$MiB" '
      .profile == "restricted" and .rootfs.readonly == true
      and ([.writable[] | select(.path == "/tmp" or .path == "/run" or .path == "/maka/work") | .size] == [128 * $mib, 128 * $mib, 128 * $mib])
      and .network.mode == "closed"
      and .limits.memory == 1024 * $mib and .limits.swap == 0 and .limits.pids == 256 and .limits.cpus == 2
      and .process.capabilities == [] and .process.noNewPrivileges == true
      and .verdict.allowed == true and .verdict.items == []' <<<"$output"
  # Nothing was created.
  [ -z "$(maka list -q)" ]
}

@test "restricted, from inside: no capabilities, no_new_privs, read-only root, bounded tmpfs, only lo, declared env, no user namespaces" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c '
    grep -E "^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):" /proc/self/status
    touch /x 2>&1 || true
    for d in /tmp /run /maka/work; do df -k "$d" | tail -n 1; done
    echo "ifaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " ")"
    env | sort | sed "s/^/env: /"
    echo "environ: $(tr "\0" " " </proc/1/environ)"
    echo x > /maka/work/f && echo "work: writable"
    unshare -U true 2>&1; echo "unshare: $?"'
  # A duplicate (the last one counts) and an empty HOME (replaced by the user's).
  update_config "$BATS_TEST_TMPDIR/b" '.process.env = ["PATH=/usr/bin:/bin", "FOO=first", "HOME=", "FOO=bar"]'
  # The contract declares the environment the process gets, HOME included.
  run --separate-stderr maka boundary --bundle "$BATS_TEST_TMPDIR/b" --format json
  [ "$status" -eq 0 ]
  jq -e '.process.env == ["PATH=/usr/bin:/bin", "FOO=bar", "HOME=/root"] and .process.homeAdded == true' <<<"$output"
  run --separate-stderr maka boundary --bundle "$BATS_TEST_TMPDIR/b"
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"HOME=/root (HOME added by maka from the root's /etc/passwd, as runc adds it)"* ]]
  run maka run --bundle "$BATS_TEST_TMPDIR/b" bd-in
  echo "$output"
  # A new user namespace is a violation, fatal under restricted: the
  # sandbox is destroyed before unshare returns.
  [ "$status" -eq 137 ]
  [[ "$output" == *"SANDBOX_BOUNDARY_VIOLATION: container bd-in was killed: syscall unshare(0x10000000) by pid "*" (unshare), sandbox killed"* ]]
  [[ "$output" != *"unshare: "* ]]
  for set in CapEff CapPrm CapBnd CapAmb; do
    [[ "$output" =~ $set:[[:space:]]+0000000000000000 ]]
  done
  [[ "$output" =~ NoNewPrivs:[[:space:]]+1 ]]
  [[ "$output" == *"touch: /x: Read-only file system"* ]]
  for d in /tmp /run /maka/work; do
    [[ "$output" =~ tmpfs[[:space:]]+131072[[:space:]].*[[:space:]]$d ]]
  done
  [[ "$output" == *"ifaces: lo "* ]]
  # Exactly the contract's environment, as exec'd (/proc/1/environ)...
  [ "$(grep '^environ: ' <<<"$output")" = "environ: PATH=/usr/bin:/bin FOO=bar HOME=/root " ]
  # ... and in the shell, sh's own PWD and SHLVL besides.
  [ "$(sed -n 's/^env: \([^=]*\)=.*/\1/p' <<<"$output" | tr '\n' ' ')" = "FOO HOME PATH PWD SHLVL " ]
  [[ "$output" == *"env: FOO=bar"* ]]
  [[ "$output" == *"work: writable"* ]]
}

@test "restricted, from outside: memory.max 1 GiB, memory.swap.max 0, pids.max 256, cpu.max 200000 100000" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  maka_io create --bundle "$BATS_TEST_TMPDIR/b" bd-out
  d=$(cgroup_dir_of bd-out)
  [ "$(cat "$d/memory.max")" = $((1024 * MiB)) ]
  [ "$(cat "$d/memory.swap.max")" = 0 ]
  [ "$(cat "$d/pids.max")" = 256 ]
  [ "$(cat "$d/cpu.max")" = "200000 100000" ]
  maka delete --force bd-out
}

@test "maka boundary exits 0 when allowed, 1 when refused, 2 when the input gives no verdict" {
  make_bundle "$BATS_TEST_TMPDIR/b" true
  run --separate-stderr maka boundary --bundle "$BATS_TEST_TMPDIR/b" --format json
  [ "$status" -eq 0 ]
  update_config "$BATS_TEST_TMPDIR/b" '.process.capabilities.bounding = ["CAP_SYS_ADMIN"]'
  run --separate-stderr maka boundary --bundle "$BATS_TEST_TMPDIR/b" --format json
  [ "$status" -eq 1 ]
  jq -e '.verdict.allowed == false' <<<"$output"
  run maka boundary --bundle "$BATS_TEST_TMPDIR/b" --format yaml
  [ "$status" -eq 2 ]
  [[ "$output" == *"--format: invalid value"* ]]
  echo '{"capabilites": []}' > "$BATS_TEST_TMPDIR/bad-policy.json"
  run maka --policy "$BATS_TEST_TMPDIR/bad-policy.json" boundary --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 2 ]
  run maka boundary --bundle "$BATS_TEST_TMPDIR/nowhere"
  [ "$status" -eq 2 ]
  echo '{"ociVersion": ' > "$BATS_TEST_TMPDIR/b/config.json"
  run maka boundary --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 2 ]
  [[ "$output" == *"config.json: malformed JSON"* ]]
}

@test "capabilities, binds and namespaces are refused before anything exists, naming the field" {
  # (create's message has one line per capability, field process.capabilities)
  reject_case '.process.capabilities.bounding = ["CAP_KILL"]' 'process.capabilities'
  reject_case '.mounts += [{destination: "/mnt", type: "bind", source: "/srv", options: ["rbind", "ro"]}]' 'mounts[10].source'
  reject_case '.mounts += [{destination: "/mnt", type: "bind", source: "/etc", options: ["rbind", "ro"]}]' 'mounts[10].source'
  reject_case '.linux.namespaces |= map(select(.type != "network"))' 'linux.namespaces'
  reject_case '.linux.namespaces |= map(if .type == "network" then .path = "/proc/1/ns/net" else . end)' 'linux.namespaces[1].path'
  reject_case '.linux.namespaces |= map(select(.type != "pid"))' 'linux.namespaces'
}

@test "a hostNetwork pod's shape (the host's network and uts namespaces) runs where the policy allows the host's network: the host's name, which the sandbox cannot change; a hostname of its own, or the host's ipc, is refused" {
  echo '{"profile": "baseline", "networkModes": ["closed", "netns", "host"]}' > "$BATS_TEST_TMPDIR/hostnet.json"
  local b=$BATS_TEST_TMPDIR/hostuts before
  # /sys: without a network namespace of its own, a user namespace may not
  # mount sysfs; the sandbox gets the host's, bound recursively read-only.
  make_bundle "$b" sh -c 'cat /proc/sys/kernel/hostname; hostname evil-name && echo changed
    echo "net: $(ls /sys/class/net | tr "\n" " ")"
    touch /sys/kernel/x 2>/dev/null && echo wrote-sys
    echo 1 > /sys/fs/cgroup/cgroup.procs 2>/dev/null && echo wrote-cgroup
    grep -E " /sys | /sys/fs/cgroup " /proc/self/mountinfo
    echo "cgroup dirs: $(find /sys/fs/cgroup -mindepth 1 -maxdepth 1 -type d | wc -l)"
    for m in $HOST_SYS_MOUNTS; do echo "$m: $(ls -A "$m" 2>/dev/null | wc -l)"; done
    cat /proc/sys/kernel/hostname'
  # The host's mounts below /sys but the cgroup hierarchy: masked inside.
  local hostmounts
  hostmounts=$(awk '$5 ~ "^/sys/" && $5 !~ "^/sys/fs/cgroup" { print $5 }' /proc/self/mountinfo | tr '\n' ' ')
  update_config "$b" 'del(.hostname) | .linux.namespaces |= map(select(.type != "network" and .type != "uts"))
      | .process.env += ["HOST_SYS_MOUNTS=" + $m]' --arg m "$hostmounts"
  before=$(cat /proc/sys/kernel/hostname)
  MAKA_POLICY=$BATS_TEST_TMPDIR/hostnet.json run maka_io run -b "$b" c-hostuts
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "$before" ]
  ! grep -x changed <<<"$output"
  [ "${lines[-1]}" = "$before" ]
  [ "$(cat /proc/sys/kernel/hostname)" = "$before" ]
  # The host's interfaces, read-only: no write reaches /sys or the cgroups.
  grep -Fx "net: $(ls /sys/class/net | tr '\n' ' ')" <<<"$output"
  ! grep -e wrote-sys -e wrote-cgroup <<<"$output"
  [ ! -e /sys/kernel/x ]
  grep -E ' /sys ro,' <<<"$output"
  grep -E ' /sys/fs/cgroup ro,' <<<"$output"
  # Its own cgroup namespace's root over the host's tree (no other
  # sandbox's cgroup in view), and the host's other mounts masked.
  grep -Fx "cgroup dirs: 0" <<<"$output"
  local m
  for m in $hostmounts; do grep -Fx "$m: 0" <<<"$output"; done
  # A name of its own needs a namespace of its own; ipc stays private.
  update_config "$b" '.hostname = "box"'
  MAKA_POLICY=$BATS_TEST_TMPDIR/hostnet.json run maka boundary -b "$b"
  echo "$output"
  [ "$status" -eq 1 ]
  grep -F 'hostname: "box" needs a uts namespace' <<<"$output"
  update_config "$b" 'del(.hostname) | .linux.namespaces |= map(select(.type != "ipc"))'
  MAKA_POLICY=$BATS_TEST_TMPDIR/hostnet.json run maka boundary -b "$b"
  [ "$status" -eq 1 ]
  grep -F 'no ipc namespace' <<<"$output"
  # Without the host's network in the policy, the host's uts is refused.
  update_config "$b" '.linux.namespaces += [{type: "ipc"}]'
  MAKA_POLICY=$BATS_TEST_TMPDIR/hostnet.json run maka boundary -b "$b"
  echo "$output"
  [ "$status" -eq 0 ]
  grep -F "(uts: the host's, its name read-only)" <<<"$output"
  # No user namespace: a sysfs of its own (the host's network's).
  ! grep -F "<- the host's /sys" <<<"$output"
  # Under a user namespace the kernel refuses it one: maka boundary says
  # whose /sys it gets instead, and inside it is the host's, read-only,
  # with the host's other mounts below it masked.
  jq '.userNamespace = "required"' "$BATS_TEST_TMPDIR/hostnet.json" > "$BATS_TEST_TMPDIR/hostnet-userns.json"
  MAKA_POLICY=$BATS_TEST_TMPDIR/hostnet-userns.json run maka boundary -b "$b"
  echo "$output"
  [ "$status" -eq 0 ]
  grep -E "^read-only +/sys <- the host's /sys \(" <<<"$output"
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"recursive, read-only, private; its own cgroup filesystem over /sys/fs/cgroup; the host's other mounts below /sys masked)"* ]]
  MAKA_POLICY=$BATS_TEST_TMPDIR/hostnet-userns.json run maka_io run -b "$b" c-hostuts-userns
  echo "$output"
  [ "$status" -eq 0 ]
  grep -Fx "net: $(ls /sys/class/net | tr '\n' ' ')" <<<"$output"
  ! grep -e wrote-sys -e wrote-cgroup <<<"$output"
  [ ! -e /sys/kernel/x ]
  grep -E ' /sys ro,' <<<"$output"
  grep -Fx "cgroup dirs: 0" <<<"$output"
  for m in $hostmounts; do grep -Fx "$m: 0" <<<"$output"; done
  echo '{"profile": "baseline"}' > "$BATS_TEST_TMPDIR/nohostnet.json"
  MAKA_POLICY=$BATS_TEST_TMPDIR/nohostnet.json run maka boundary -b "$b"
  [ "$status" -eq 1 ]
  grep -F 'no uts namespace' <<<"$output"
}

@test "namespace paths into a running sandbox and to the host's own: its network namespace is joined, another type or the host's own is refused at create naming the field, nothing left; where the host's network is allowed, a path to it is the host's network" {
  echo '{"profile": "baseline", "networkModes": ["closed", "netns"]}' > "$BATS_TEST_TMPDIR/netns.json"
  echo '{"profile": "baseline", "networkModes": ["closed", "netns", "host"]}' > "$BATS_TEST_TMPDIR/hostnet.json"
  local a=$BATS_TEST_TMPDIR/nsa b=$BATS_TEST_TMPDIR/nsb pid hostnet
  hostnet=$(readlink /proc/1/ns/net)
  make_bundle "$a" sleep 1000
  MAKA_POLICY=$BATS_TEST_TMPDIR/netns.json maka run -d -b "$a" ns-a
  pid=$(container_pid ns-a)
  make_bundle "$b" sh -c 'readlink /proc/self/ns/net'
  # B joins A's network namespace by its path (the netns mode's purpose).
  update_config "$b" '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "/proc/$pid/ns/net"
  MAKA_POLICY=$BATS_TEST_TMPDIR/netns.json run maka_io run -b "$b" ns-b
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[-1]}" = "$(readlink "/proc/$pid/ns/net")" ]
  [ "${lines[-1]}" != "$hostnet" ]
  # A's ipc namespace given as a network namespace: refused at create,
  # naming the field and both types (not setns's failure in the init).
  update_config "$b" '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "/proc/$pid/ns/ipc"
  MAKA_POLICY=$BATS_TEST_TMPDIR/netns.json run maka_io run -b "$b" ns-b
  echo "$output"
  [ "$status" -ne 0 ]
  grep -F "linux.namespaces[" <<<"$output" | grep -F "/proc/$pid/ns/ipc is an ipc namespace, not a network namespace"
  # Namespaces bound on files (as ip netns and CNI keep them): the type is
  # the kernel's (NS_GET_NSTYPE), whatever the file is called.
  local nsf=$BATS_TEST_TMPDIR/nsfiles
  mkdir -p "$nsf" && touch "$nsf/net" "$nsf/ipc"
  unshare --net="$nsf/net" true
  unshare --ipc="$nsf/ipc" true
  update_config "$b" '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "$nsf/ipc"
  MAKA_POLICY=$BATS_TEST_TMPDIR/netns.json run maka_io run -b "$b" ns-b
  echo "$output"
  umount "$nsf/ipc"
  [ "$status" -ne 0 ]
  grep -F "$nsf/ipc is an ipc namespace, not a network namespace" <<<"$output"
  update_config "$b" '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "$nsf/net"
  local ino
  ino=$(stat -c %i "$nsf/net")
  MAKA_POLICY=$BATS_TEST_TMPDIR/netns.json run maka_io run -b "$b" ns-b
  echo "$output"
  umount "$nsf/net"
  [ "$status" -eq 0 ]
  [ "${lines[-1]}" = "net:[$ino]" ]
  # The host's own network namespace, without the host's network in the
  # policy; the host's own ipc namespace under any policy.
  update_config "$b" '.linux.namespaces |= map(if .type == "network" then .path = "/proc/1/ns/net" else . end)'
  MAKA_POLICY=$BATS_TEST_TMPDIR/netns.json run maka_io run -b "$b" ns-b
  echo "$output"
  [ "$status" -ne 0 ]
  grep -F "/proc/1/ns/net is the host's own network namespace" <<<"$output"
  update_config "$b" '.linux.namespaces |= map(if .type == "network" then del(.path) else . end)
      | .linux.namespaces |= map(if .type == "ipc" then .path = "/proc/1/ns/ipc" else . end)'
  MAKA_POLICY=$BATS_TEST_TMPDIR/hostnet.json run maka_io run -b "$b" ns-b
  echo "$output"
  [ "$status" -ne 0 ]
  grep -F "/proc/1/ns/ipc is the host's own ipc namespace" <<<"$output"
  # Nothing of B was left by any refusal.
  run maka list -q
  [ "$output" = ns-a ]
  # Where the host's network is allowed, a path to it (here through a
  # link, as a hostNetwork pod's is) is the host's network, nothing joined.
  ln -s "/proc/1/ns/net" "$BATS_TEST_TMPDIR/hostnet-link"
  update_config "$b" '.linux.namespaces |= map(if .type == "ipc" then del(.path) else . end)
      | .linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "$BATS_TEST_TMPDIR/hostnet-link"
  MAKA_POLICY=$BATS_TEST_TMPDIR/hostnet.json run maka_io run -b "$b" ns-b
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[-1]}" = "$hostnet" ]
  maka delete -f ns-a
}

@test "devices, sysctls, hooks and limits beyond the policy are refused before anything exists, naming the field" {
  reject_case '.linux.devices = [{path: "/dev/kvm", type: "c", major: 10, minor: 232}]' 'linux.devices[0]'
  reject_case '.linux.sysctl = {"net.ipv4.ip_forward": "1"}' 'linux.sysctl["net.ipv4.ip_forward"]'
  reject_case '.hooks = {prestart: [{path: "/bin/true"}]}' 'hooks.prestart[0].path'
  reject_case '.linux.resources.memory = {limit: 8589934592}' 'linux.resources.memory.limit'
  reject_case '.linux.resources.memory = {limit: 67108864, swap: -1}' 'linux.resources.memory.swap'
  reject_case '.linux.resources.pids = {limit: 100000}' 'linux.resources.pids.limit'
}

@test "cpu, tmpfs size, timeout and profile annotations beyond the policy are refused before anything exists, naming the field" {
  reject_case '.linux.resources.cpu = {quota: 800000, period: 100000}' 'linux.resources.cpu.quota'
  reject_case '.mounts |= map(if .destination == "/tmp" then .options += ["size=4g"] else . end)' 'mounts[7].options[4]'
  reject_case '.annotations = {"org.maka.timeout": "100000"}' 'annotations["org.maka.timeout"]'
  reject_case '.annotations = {"org.maka.profile": "baseline"}' 'annotations["org.maka.profile"]'
}

@test "a rejection lists every item at once, and --log-format json carries code and items" {
  make_bundle "$BATS_TEST_TMPDIR/b" true
  update_config "$BATS_TEST_TMPDIR/b" '.process.capabilities.bounding = ["CAP_SYS_ADMIN", "CAP_NET_ADMIN"] | .linux.sysctl = {"kernel.panic": "1"}'
  run maka_io --log-format json create --bundle "$BATS_TEST_TMPDIR/b" bd-json
  [ "$status" -eq 1 ]
  line=$(grep '"level":"error"' <<<"$output" | tail -n 1)
  jq -e '.code == "BOUNDARY_REJECTED" and (.items | length) == 3
      and ([.items[].field] | sort) == ["linux.sysctl[\"kernel.panic\"]", "process.capabilities.bounding[0]", "process.capabilities.bounding[1]"]
      and (.msg | startswith("BOUNDARY_REJECTED: "))' <<<"$line"
  [ ! -e "$MAKA_ROOT/bd-json" ]
}

@test "runc's default capabilities: refused by restricted with the policy line that allows them, run under baseline" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'grep CapEff /proc/self/status'
  update_config "$BATS_TEST_TMPDIR/b" '.process.capabilities = {bounding: $c, effective: $c, permitted: $c}' \
    --argjson c '["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]'
  run maka_io run --bundle "$BATS_TEST_TMPDIR/b" bd-caps
  [ "$status" -eq 1 ]
  [[ "$output" == *'process.capabilities: CAP_KILL (bounding, effective, permitted) is not allowed by profile restricted (policy: "capabilities": [..., "CAP_KILL"])'* ]]
  echo '{"profile": "baseline"}' > "$BATS_TEST_TMPDIR/policy.json"
  run maka --policy "$BATS_TEST_TMPDIR/policy.json" run --bundle "$BATS_TEST_TMPDIR/b" bd-caps
  [ "$status" -eq 0 ]
  # AUDIT_WRITE (29), KILL (5), NET_BIND_SERVICE (10)
  [[ "$output" =~ CapEff:[[:space:]]+0*20000420$ ]]
  # The org.maka.profile annotation tightens baseline back to restricted.
  update_config "$BATS_TEST_TMPDIR/b" '.annotations = {"org.maka.profile": "restricted"}'
  run maka_io --policy "$BATS_TEST_TMPDIR/policy.json" run --bundle "$BATS_TEST_TMPDIR/b" bd-caps
  [ "$status" -eq 1 ]
  [[ "$output" == *"not allowed by profile restricted"* ]]
}

# tree_sum DIR: every path of DIR with its type, mode, owner and content's
# checksum: equal before and after means nothing was written.
tree_sum() {
  (cd "$1" && find . -printf '%p %y %m %U %G %s\n' | sort && find . -type f -exec sha256sum {} + | sort) | sha256sum
}

@test "standard images run as they are: mount points the root lacks are made by maka outside it, the root (a read-only bind) never written, its own mount nosuid,nodev" {
  # An image like busybox's or Debian's: no /run, /maka/work, /tmp, /mnt;
  # /var/run a symlink to /run.
  local img=$BATS_TEST_TMPDIR/image ro=$BATS_TEST_TMPDIR/ro-rootfs
  cp -a "$MAKA_ROOTFS" "$img"
  rm -rf "${img:?}/run" "$img/maka" "$img/tmp" "$img/mnt" "$img/var/run"
  ln -s ../run "$img/var/run"
  # and masked entries (runc's mask.bats): never bound from the root, the
  # mask the one mount there
  mkdir "$img/testdir"
  echo secret > "$img/testdir/secret"
  echo "Forbidden information!" > "$img/testfile"
  mkdir -p "$ro"
  mount --bind "$img" "$ro"
  mount -o remount,bind,ro "$ro"
  local before
  before=$(tree_sum "$img")
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'echo ok > /tmp/f && cat /tmp/f; cd /maka/work && pwd;
    test -d /nowhere && test -d /a/b/c && test -d /run/x && echo dirs-ok;
    touch /pwn /etc/pwn /a/pwn 2>&1 | grep -c "Read-only file system"; stat -c "%u %a" / /etc /usr/bin/busybox; ls /;
    echo root: $(awk "\$5 == \"/\" {print \$6}" /proc/self/mountinfo);
    echo mask: $(cat /testfile | wc -c) $(ls -A /testdir | wc -l) $(grep -c " /testfile " /proc/self/mountinfo) $(grep -c " /testdir " /proc/self/mountinfo)'
  update_config "$BATS_TEST_TMPDIR/b" '.root.path = $ro
    | .linux.maskedPaths += ["/testdir", "/testfile"]
    | .mounts += [{destination: "/nowhere", type: "tmpfs", source: "tmpfs", options: ["size=1m"]},
                  {destination: "/a/b/c", type: "tmpfs", source: "tmpfs", options: ["size=1m"]},
                  {destination: "/var/run/x", type: "tmpfs", source: "tmpfs", options: ["size=1m"]}]' \
    --arg ro "$ro"
  # boundary names what maka provides.
  run maka boundary --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 0 ]
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"mount points /a/b/c /maka/work /nowhere /run /run/x /tmp (missing in the root: made by maka, outside it)"* ]]
  run maka run --bundle "$BATS_TEST_TMPDIR/b" bd-ro
  umount "$ro" || true
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = ok ]
  [ "${lines[1]}" = /maka/work ]
  [ "${lines[2]}" = dirs-ok ]
  [ "${lines[3]}" = 3 ]
  # The root's files as they are in the image: idmapped, the host's root
  # is the sandbox's root (tmpfs supports idmapped mounts from Linux 6.3).
  [ "${lines[4]}" = "0 755" ] && [ "${lines[5]}" = "0 755" ] && [ "${lines[6]}" = "0 755" ]
  local e
  for e in a bin etc maka nowhere run tmp usr var; do
    [[ " $(echo "${lines[@]:7}") " == *" $e "* ]]
  done
  [ "${lines[-1]}" = "mask: 0 0 1 1" ]
  # The root's own mount (the overlay) is nosuid,nodev, as runc keeps them
  # (runc's mounts.bats).
  [[ "${lines[-2]}" == "root: "* && ",${lines[-2]#root: }," == *,ro,* && ",${lines[-2]#root: }," == *,nosuid,* &&
     ",${lines[-2]#root: }," == *,nodev,* ]]
  [ "$(tree_sum "$img")" = "$before" ]
  # Nothing left: no record, no scaffold.
  [ ! -e "$MAKA_ROOT/bd-ro" ]
  [ -z "$(ls -A "$MAKA_STATE_DIR"/roots/* 2>/dev/null)" ]

  # A path below a file cannot be a mount point: refused, naming the field.
  make_bundle "$BATS_TEST_TMPDIR/m" true
  update_config "$BATS_TEST_TMPDIR/m" '.mounts += [{destination: "/etc/passwd/x", type: "tmpfs", source: "tmpfs", options: ["size=1m"]}]'
  run maka_io run --bundle "$BATS_TEST_TMPDIR/m" bd-mp
  [ "$status" -eq 1 ]
  [[ "$output" == *"mounts[10].destination: /etc/passwd/x cannot be a mount point in the root filesystem"* ]]
  [ ! -e "$MAKA_ROOT/bd-mp" ]
}

@test "a root on a read-only filesystem maka does not idmap (ramfs) runs with the host's root's files as nobody; the scaffold's mount is nosuid,nodev as the image's" {
  local r=$BATS_TEST_TMPDIR/ramfs d
  mkdir -p "$r"
  mount -t ramfs -o nosuid,nodev,mode=0755 ramfs "$r"
  cp -a "$MAKA_ROOTFS/." "$r"
  mount -o remount,ro,nosuid,nodev "$r"
  d=$(dirname "$r")
  while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'stat -c %u /bin/sh; touch /pwn 2>&1 | grep -c "Read-only file system"; cat /proc/self/uid_map;
    echo root: $(awk "\$5 == \"/\" {print \$6}" /proc/self/mountinfo)'
  # A mount point the root lacks: maka assembles the root (a scaffold:
  # the overlay needs an idmapped root).
  update_config "$BATS_TEST_TMPDIR/b" '.root.path = $r
    | .mounts += [{destination: "/nowhere", type: "tmpfs", source: "tmpfs", options: ["size=1m"]}]' --arg r "$r"
  run maka boundary --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 0 ]
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"(read-only, not idmapped: its root's files show as nobody)"* ]]
  run maka run --bundle "$BATS_TEST_TMPDIR/b" bd-ramfs
  umount "$r"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 65534 ]
  [ "${lines[1]}" = 1 ]
  # The root here is maka's scaffold (entries bound from the ramfs): its
  # own mount is nosuid,nodev as the image's (runc's mounts.bats).
  [[ "${lines[-1]}" == "root: "* && ",${lines[-1]#root: }," == *,nosuid,* && ",${lines[-1]#root: }," == *,nodev,* ]]
  [ ! -e "$MAKA_ROOT/bd-ramfs" ]
}

@test "maka policy show prints the effective policy: restricted by default, a policy file's items replace the profile's" {
  run --separate-stderr maka policy show --format json
  [ "$status" -eq 0 ]
  jq -e '.profile == "restricted" and .capabilities == [] and .networkModes == ["closed"] and .defaultLimits.pids == 256 and .onViolation == "kill" and (has("source") | not)' <<<"$output"
  echo '{"profile": "baseline", "capabilities": ["CAP_KILL"], "defaultLimits": {"pids": 1}, "maxLimits": {"pids": 1, "timeout": 1}}' > "$BATS_TEST_TMPDIR/p.json"
  run --separate-stderr maka --policy "$BATS_TEST_TMPDIR/p.json" policy show --format json
  [ "$status" -eq 0 ]
  # limit objects merge key by key: the ceilings the file does not name stay
  jq -e --arg f "$BATS_TEST_TMPDIR/p.json" '.profile == "baseline" and .capabilities == ["CAP_KILL"] and .maxLimits.pids == 1 and .maxLimits.memory == 68719476736 and .maxLimits.cpus == 64 and .hooks == true and .source == $f and .modified == true' <<<"$output"
  run --separate-stderr maka --policy "$BATS_TEST_TMPDIR/p.json" policy show
  [ "$status" -eq 0 ]
  # (the table's column width follows its longest item name, and a long
  # value continues on the next line under its column: 80 columns)
  [ -z "$(awk 'length > 80' <<<"$output")" ]
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"baseline (modified by $BATS_TEST_TMPDIR/p.json)"* ]]
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"largest limits memory 64 GiB, swap unlimited, pids 1, cpus 64, tmpfs 16 GiB, timeout 1 s"* ]]
  echo '{"profile": "baseline", "capabilites": []}' > "$BATS_TEST_TMPDIR/bad.json"
  run maka --policy "$BATS_TEST_TMPDIR/bad.json" policy show
  [ "$status" -eq 1 ]
  [[ "$output" == *"capabilites"* ]]
}

@test "a policy file means what it says: a hinted maxLimits line raises one ceiling only; typos, negatives, second documents and defaults above ceilings are errors" {
  # The exact line BOUNDARY_REJECTED suggests for 8 GiB of memory.
  echo '{"maxLimits": {"memory": 8589934592}}' > "$BATS_TEST_TMPDIR/p.json"
  make_bundle "$BATS_TEST_TMPDIR/b" /bin/true
  update_config "$BATS_TEST_TMPDIR/b" '.linux.resources.pids = {limit: 100000}'
  run maka_io --policy "$BATS_TEST_TMPDIR/p.json" run --bundle "$BATS_TEST_TMPDIR/b" bd-pol
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"BOUNDARY_REJECTED"* ]]
  [[ "$output" == *"linux.resources.pids.limit: 100000 pids exceed the largest allowed by profile restricted (1024)"* ]]
  [ ! -e "$MAKA_ROOT/bd-pol" ]
  for doc in '{"capabilities": ["CAP_SYS_ADMN"]}' '{"maxLimits": {"memory": -5}}' '{"profile": "restricted"} {"profile": "baseline"}' \
      '{"defaultLimits": {"memory": 8589934592}}' '{"maxLimits": {"memory": "8g"}}'; do
    echo "$doc" > "$BATS_TEST_TMPDIR/bad.json"
    run maka --policy "$BATS_TEST_TMPDIR/bad.json" policy show
    echo "$doc: $status: $output"
    [ "$status" -eq 1 ]
    [[ "$output" == "policy $BATS_TEST_TMPDIR/bad.json: "* ]]
    [[ "$output" != *"libmaka"* && "$output" != *"Go struct"* && "$output" != *"int64"* ]]
    run maka_io --policy "$BATS_TEST_TMPDIR/bad.json" run --bundle "$BATS_TEST_TMPDIR/b" bd-pol
    [ "$status" -eq 1 ]
    [ ! -e "$MAKA_ROOT/bd-pol" ]
  done
}
