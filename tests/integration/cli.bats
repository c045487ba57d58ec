#!/usr/bin/env bats
# The command line clients rely on: --version, --help, features, spec, the
# global flags (--log, --log-format, --debug, --root, --systemd-cgroup,
# --rootless), checkpoint/restore refusals and the cgroup v2 requirement.

load helpers
bats_require_minimum_version 1.5.0

ALL_COMMANDS="checkpoint create delete events exec features kill list pause ps restore resume run spec start state update"

# no_trace ID: neither state nor a cgroup is left for container ID.
no_trace() {
  local root=${2:-$MAKA_ROOT}
  [ ! -e "$root/$1" ] || { echo "state dir $root/$1 left behind" >&2; return 1; }
  local left
  left=$(find /sys/fs/cgroup -type d -name "$1" 2>/dev/null)
  [ -z "$left" ] || { echo "cgroup left behind: $left" >&2; return 1; }
}

@test "--version prints exactly: maka version X, commit: ..., spec: 1.3.0" {
  run --separate-stderr "$MAKA_BINARY" --version
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 3 ]
  [[ "${lines[0]}" =~ ^maka\ version\ [0-9]+\.[0-9]+\.[0-9]+ ]]
  [[ "${lines[1]}" =~ ^commit:\ [^[:space:]]+$ ]]
  [ "${lines[2]}" = "spec: 1.3.0" ]
  # the same version as features reports
  [ "${lines[0]#maka version }" = "$("$MAKA_BINARY" features | jq -r '.annotations["org.maka.version"]')" ]
}

@test "--help lists every command" {
  run "$MAKA_BINARY" --help
  [ "$status" -eq 0 ]
  local c
  for c in $ALL_COMMANDS; do
    grep -Eq "^ +$c(,| )" <<<"$output" || { echo "command $c missing from --help"; false; }
  done
}

@test "checkpoint --help and restore --help exit non-zero saying not supported" {
  local c
  for c in checkpoint restore; do
    run "$MAKA_BINARY" "$c" --help
    [ "$status" -ne 0 ]
    [[ "$output" == *"not supported"* ]]
    run maka "$c" some-id
    [ "$status" -ne 0 ]
    [[ "$output" == *"not supported"* ]]
  done
}

@test "features prints runtime-spec features JSON: OCI 1.3.0, cgroup v2 only, no systemd, seccomp, every namespace, only what maka enforces" {
  run --separate-stderr "$MAKA_BINARY" features
  [ "$status" -eq 0 ]
  jq -e '
    .ociVersionMin == "1.0.0" and .ociVersionMax == "1.3.0"
    and .linux.cgroup.v2 == true and .linux.cgroup.v1 == false
    and .linux.cgroup.systemd == false and .linux.cgroup.systemdUser == false
    and .linux.seccomp.enabled == true and (.linux.seccomp.actions | index("SCMP_ACT_NOTIFY") != null)
    and ((.linux.namespaces | sort) == ["cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"])
    and (.hooks | index("poststart") != null)
    and (.linux.capabilities | index("CAP_SYS_ADMIN") != null)
    and .annotations["org.opencontainers.runc.checkpoint.enabled"] == "false"
    and .linux.intelRdt.enabled == false and .linux.netDevices.enabled == false
    and .linux.memoryPolicy == null and .linux.mountExtensions.idmap.enabled == true' <<<"$output"
}

@test "spec writes config.json in --bundle DIR, and in the current directory without --bundle" {
  mkdir "$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/cwd"
  run "$MAKA_BINARY" spec --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 0 ]
  jq -e '.ociVersion == "1.3.0" and .root.path == "rootfs" and .process.args == ["sh"]' \
    "$BATS_TEST_TMPDIR/b/config.json"
  cd "$BATS_TEST_TMPDIR/cwd"
  run "$MAKA_BINARY" spec
  [ "$status" -eq 0 ]
  cmp "$BATS_TEST_TMPDIR/b/config.json" "$BATS_TEST_TMPDIR/cwd/config.json"
  # no stray files
  [ "$(ls -A "$BATS_TEST_TMPDIR/cwd")" = config.json ]
}

@test "spec refuses to overwrite an existing config.json" {
  mkdir "$BATS_TEST_TMPDIR/b"
  echo '{"mine": true}' > "$BATS_TEST_TMPDIR/b/config.json"
  run "$MAKA_BINARY" spec --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -ne 0 ]
  [[ "$output" == *"exists"* ]]
  [ "$(cat "$BATS_TEST_TMPDIR/b/config.json")" = '{"mine": true}' ]
}

@test "spec --rootless maps the caller's uid and gid in a user namespace, keeps the closed network and drops devpts' gid=5" {
  mkdir "$BATS_TEST_TMPDIR/b"
  run "$MAKA_BINARY" spec --rootless --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 0 ]
  jq -e --argjson uid "$(id -u)" --argjson gid "$(id -g)" '
    .linux.uidMappings == [{containerID: 0, hostID: $uid, size: 1}]
    and .linux.gidMappings == [{containerID: 0, hostID: $gid, size: 1}]
    and ([.linux.namespaces[].type] | index("user") != null)
    and ([.linux.namespaces[].type] | index("network") != null)
    and ([.mounts[] | select(.type == "devpts") | .options[] | select(startswith("gid="))] == [])' "$BATS_TEST_TMPDIR/b/config.json"
}

@test "the config.json spec writes runs, with only root.path and args changed" {
  require_cgroup2
  setup_rootfs
  mkdir "$BATS_TEST_TMPDIR/b"
  "$MAKA_BINARY" spec --bundle "$BATS_TEST_TMPDIR/b"
  update_config "$BATS_TEST_TMPDIR/b" '.root.path = $r | .process.args = ["sh", "-c", "echo spec-ok $(hostname)"]' \
    --arg r "$MAKA_ROOTFS"
  local host
  host=$(jq -r .hostname "$BATS_TEST_TMPDIR/b/config.json")
  [ -n "$host" ] && [ "$host" != null ]
  # the spec asks for a terminal: give maka one
  run script -qec "$MAKA_BINARY --root $MAKA_ROOT run --bundle $BATS_TEST_TMPDIR/b cli-spec" /dev/null
  [ "$status" -eq 0 ]
  [[ "$output" == *"spec-ok $host"* ]]
  no_trace cli-spec
}

@test "make demo's script runs end to end: the contract, a run, a refusal with its reasons, a recorded violation; it leaves nothing" {
  require_cgroup2
  local hello
  run --separate-stderr env MAKA_BINARY="$MAKA_BINARY" MAKA_FIXTURES="$MAKA_FIXTURES" "$MAKA_REPO/scripts/demo.sh"
  echo "$output"; echo "$stderr"
  [ "$status" -eq 0 ]
  [[ "$output" == *"verdict       allowed by profile restricted"* ]]
  hello=$(grep 'hello from a maka sandbox: ' <<<"$output")
  [[ "$hello" =~ uid_map:\ +0\ +([0-9]+)\ +65536 ]]
  [ "${BASH_REMATCH[1]}" -ne 0 ]
  [[ "$output" == *"the root filesystem is read-only"* ]]
  [[ "$output" == *"REJECTED by profile restricted"* ]]
  [[ "$stderr" == *"BOUNDARY_REJECTED: "*"CAP_SYS_ADMIN"* ]]
  [[ "$stderr" == *"SANDBOX_BOUNDARY_VIOLATION: container demo-escape was killed: syscall unshare"* ]]
  [[ "$output" == *"syscall  kill"*"unshare(0x10000000)"* ]]
  [[ "$output" == *"demo: done"* ]]
  # No cgroup of the demo's sandboxes (maka's parent /maka stays), no directory.
  [ -z "$(find /sys/fs/cgroup -type d -name 'demo*')" ]
  [ -z "$(ls -d /tmp/maka-demo.* 2>/dev/null)" ]
}

@test "--log FILE receives a failing command's error, and stderr still has it" {
  run --separate-stderr maka --log "$BATS_TEST_TMPDIR/log" state no-such-ctr
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"container no-such-ctr does not exist"* ]]
  grep -q 'level=error' "$BATS_TEST_TMPDIR/log"
  grep -q 'container no-such-ctr does not exist' "$BATS_TEST_TMPDIR/log"
  [ -z "$output" ]
}

@test "--log-format json writes one JSON object per line with level, msg, time (stderr, or the --log file)" {
  run --separate-stderr maka --log-format json state no-such-ctr
  [ "$status" -eq 1 ]
  [ -n "$stderr" ]
  # every line is an object with the three keys
  jq -e 'has("level") and has("msg") and has("time")' <<<"$stderr"
  [ "$(jq -rs 'last | .level + ":" + .msg' <<<"$stderr")" = "error:container no-such-ctr does not exist" ]

  run --separate-stderr maka --log "$BATS_TEST_TMPDIR/log.json" --log-format json state no-such-ctr
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"does not exist"* ]]
  [ "$(wc -l <"$BATS_TEST_TMPDIR/log.json")" -ge 1 ]
  jq -e 'has("level") and has("msg") and has("time")' "$BATS_TEST_TMPDIR/log.json"
  [ "$(jq -rs 'last | .level + ":" + .msg' "$BATS_TEST_TMPDIR/log.json")" = "error:container no-such-ctr does not exist" ]
}

@test "--log-format bogus fails naming the flag" {
  run maka --log-format bogus list
  [ "$status" -ne 0 ]
  [[ "$output" == *"--log-format"* ]]
  [[ "$output" == *"bogus"* ]]
}

@test "--debug adds debug lines to the log; without it there are none" {
  require_cgroup2
  make_bundle "$BATS_TEST_TMPDIR/b" /bin/true
  run --separate-stderr maka --debug --log "$BATS_TEST_TMPDIR/debug.log" run --bundle "$BATS_TEST_TMPDIR/b" cli-debug
  [ "$status" -eq 0 ]
  grep -q 'level=debug' "$BATS_TEST_TMPDIR/debug.log"
  run --separate-stderr maka --log "$BATS_TEST_TMPDIR/quiet.log" run --bundle "$BATS_TEST_TMPDIR/b" cli-debug
  [ "$status" -eq 0 ]
  ! grep -q 'level=debug' "$BATS_TEST_TMPDIR/quiet.log"
}

@test "--root DIR isolates containers: one created under a root is not seen under another" {
  require_cgroup2
  local r1=$BATS_TEST_TMPDIR/root1 r2=$BATS_TEST_TMPDIR/root2
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  run maka_io --root "$r1" create --bundle "$BATS_TEST_TMPDIR/b" cli-root
  [ "$status" -eq 0 ]
  [ -d "$r1/cli-root" ]
  run "$MAKA_BINARY" --root "$r1" list -q
  [ "$output" = cli-root ]
  # A --root that does not exist is an error for list (runc's list.bats);
  # an empty one lists nothing.
  run "$MAKA_BINARY" --root "$r2" list -q
  [ "$status" -ne 0 ]
  [[ "$output" == *"--root: stat $r2: no such file or directory"* ]]
  mkdir "$r2"
  run "$MAKA_BINARY" --root "$r2" list -q
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  run "$MAKA_BINARY" --root "$r2" state cli-root
  [ "$status" -eq 1 ]
  [[ "$output" == *"does not exist"* ]]
  run "$MAKA_BINARY" --root "$r1" delete --force cli-root
  [ "$status" -eq 0 ]
  no_trace cli-root "$r1"
}

@test "a relative --root or --state-dir is maka's own state as seen from the caller's cwd: a bundle elsewhere may not bind it" {
  require_cgroup2
  local cwd=$BATS_TEST_TMPDIR/cwd dir rc
  mkdir -m 700 -p "$cwd/rel-root" "$cwd/rel-state"
  make_bundle "$BATS_TEST_TMPDIR/b" /bin/true
  for dir in rel-root rel-state; do
    update_config "$BATS_TEST_TMPDIR/b" '.mounts = [.mounts[] | select(.destination != "/mnt")] + [{destination: "/mnt", type: "bind", source: $r, options: ["rbind", "ro"]}]' --arg r "$cwd/$dir"
    rc=0
    (cd "$cwd" && exec "$MAKA_BINARY" --root rel-root --state-dir rel-state create --bundle ../b cli-rel) \
      </dev/null >"$BATS_TEST_TMPDIR/out" 2>&1 || rc=$?
    cat "$BATS_TEST_TMPDIR/out"
    [ "$rc" -ne 0 ] || (cd "$cwd" && "$MAKA_BINARY" --root rel-root --state-dir rel-state delete --force cli-rel)
    [ "$rc" -ne 0 ]
    grep -qF "$(realpath "$cwd/$dir") is maka's own state: no sandbox may bind it" "$BATS_TEST_TMPDIR/out"
    no_trace cli-rel "$cwd/rel-root"
  done
}

@test "--systemd-cgroup: create is refused as not supported, leaving nothing; state of a missing id still says does not exist" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  run maka_io --systemd-cgroup create --bundle "$BATS_TEST_TMPDIR/b" cli-systemd
  [ "$status" -ne 0 ]
  [[ "$output" == *"not supported"* ]]
  [[ "$output" == *"systemd"* ]]
  no_trace cli-systemd
  run maka --systemd-cgroup state missing-id
  [ "$status" -eq 1 ]
  [[ "$output" == *"container missing-id does not exist"* ]]
  [[ "$output" != *"systemd"* ]]
}

@test "--rootless true as root refuses create: rootless mode is maka run by an ordinary user (rootless.bats)" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  run maka_io --rootless true run --bundle "$BATS_TEST_TMPDIR/b" cli-rootless
  [ "$status" -ne 0 ]
  [[ "$output" == *"--rootless=true: maka runs as root here; rootless mode is maka run by an ordinary user"* ]]
  no_trace cli-rootless
  run maka --rootless bogus create --bundle "$BATS_TEST_TMPDIR/b" cli-rootless
  [ "$status" -ne 0 ]
  [[ "$output" == *"--rootless"* ]]
  no_trace cli-rootless
}

@test "without cgroup v2, create and run fail before touching anything, naming cgroup v2" {
  require_root
  command -v unshare >/dev/null || skip "unshare missing"
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  local cmd
  for cmd in create run; do
    # a private mount namespace where /sys/fs/cgroup is a plain tmpfs (as on
    # a cgroup v1 host)
    run unshare -m sh -c 'mount -t tmpfs none /sys/fs/cgroup &&
      exec "$@" </dev/null' sh "$MAKA_BINARY" --root "$MAKA_ROOT" "$cmd" \
      --bundle "$BATS_TEST_TMPDIR/b" --pid-file "$BATS_TEST_TMPDIR/pid" cli-v1
    echo "$cmd: $output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"cgroup v2"* ]]
    [[ "$output" == *"/sys/fs/cgroup"* ]]
    no_trace cli-v1
    [ ! -e "$BATS_TEST_TMPDIR/pid" ]
  done
  # the state root itself was not even created
  run unshare -m sh -c 'mount -t tmpfs none /sys/fs/cgroup && exec "$@"' sh \
    "$MAKA_BINARY" --root "$BATS_TEST_TMPDIR/fresh-root" run --bundle "$BATS_TEST_TMPDIR/b" cli-v1
  [ "$status" -ne 0 ]
  [ ! -e "$BATS_TEST_TMPDIR/fresh-root" ]
}
