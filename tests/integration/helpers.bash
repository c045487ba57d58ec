#!/bin/bash
# Shared helpers of the maka integration tests (bats).  Load with `load helpers`.
#
# Environment (set by `make integration`):
#   MAKA_BINARY    the maka binary under test (default: <repo>/maka)
#   MAKA_FIXTURES  directory holding rootfs/ built by make-rootfs.sh
#                  (default: <repo>/build/fixtures)
#   MAKA_ROOT      --root state directory (default: per test file, under
#                  $BATS_FILE_TMPDIR, else /run/maka-test)
#   MAKA_STATE_DIR --state-dir contract store (default: per test file, next
#                  to MAKA_ROOT; exported, so direct "$MAKA_BINARY" calls use it)
#
# A test file that defines its own setup_file/teardown_file must call
# maka_setup_file / maka_teardown_file from them.

MAKA_REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
: "${MAKA_BINARY:=$MAKA_REPO/maka}"
: "${MAKA_FIXTURES:=$MAKA_REPO/build/fixtures}"
if [ -z "${MAKA_ROOT:-}" ]; then
  if [ -n "${BATS_FILE_TMPDIR:-}" ]; then
    MAKA_ROOT=$BATS_FILE_TMPDIR/maka-root
  else
    MAKA_ROOT=/run/maka-test
  fi
fi
if [ -z "${MAKA_STATE_DIR:-}" ]; then
  if [ -n "${BATS_FILE_TMPDIR:-}" ]; then
    MAKA_STATE_DIR=$BATS_FILE_TMPDIR/maka-state
  else
    MAKA_STATE_DIR=/run/maka-test-state
  fi
fi
export MAKA_BINARY MAKA_FIXTURES MAKA_ROOT MAKA_STATE_DIR
# The boundary policy (maka reads MAKA_POLICY like --policy). The runc
# compatibility suite runs under baseline, the profile for the specs that
# container engines write, widened to bind the tests' own files under /tmp
# (fixtures/policy-baseline.json); boundary.bats uses the default.
: "${MAKA_POLICY=$MAKA_REPO/tests/integration/fixtures/policy-baseline.json}"
export MAKA_POLICY

# maka ARGS...: the runtime under test with the per-file state directories.
maka() {
  "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" "$@"
}

# setup_rootfs: copy the fixture rootfs once per test file into a tmpfs
# directory and export MAKA_ROOTFS (absolute path of the copy). The
# directory is searchable by others (0711): a sandbox's root is an
# unprivileged host user in its user namespace and must reach its root.
setup_rootfs() {
  [ -n "${MAKA_ROOTFS:-}" ] && [ -d "$MAKA_ROOTFS" ] && return 0
  [ -d "$MAKA_FIXTURES/rootfs" ] || {
    echo "helpers: $MAKA_FIXTURES/rootfs missing: run 'make fixtures'" >&2
    return 1
  }
  local base=${BATS_FILE_TMPDIR:-} d
  if [ -z "$base" ] || [ "$(stat -fc %T "$base")" != tmpfs ]; then
    base=$(mktemp -d /dev/shm/maka-test.XXXXXX)
    export MAKA_ROOTFS_TMP=$base      # removed by maka_teardown_file
  fi
  d=$base
  while [ "$d" != / ]; do
    [ -n "$(find "$d" -maxdepth 0 -perm -o+x)" ] || chmod o+x "$d"
    d=$(dirname "$d")
  done
  cp -a "$MAKA_FIXTURES/rootfs" "$base/rootfs"
  export MAKA_ROOTFS=$base/rootfs
}

# install_escape: the escape attempts (fixtures/escape.c, static) into the
# test rootfs as /usr/bin/escape: make fixtures' build, or one made here
# when that is missing or older than its source.
install_escape() {
  local esc=$MAKA_FIXTURES/escape
  if [ ! -x "$esc" ] || [ "$esc" -ot "$MAKA_REPO/tests/integration/fixtures/escape.c" ]; then
    esc=$BATS_FILE_TMPDIR/escape
    gcc -static -O2 -o "$esc" "$MAKA_REPO/tests/integration/fixtures/escape.c"
  fi
  install -m 755 "$esc" "$MAKA_ROOTFS/usr/bin/escape"
}

maka_setup_file() {
  mkdir -p "$MAKA_ROOT"
  setup_rootfs
}

maka_teardown_file() {
  if [ -d "$MAKA_ROOT" ] && [ -x "$MAKA_BINARY" ]; then
    teardown_all_containers
  fi
  if [ -n "${MAKA_ROOTFS_TMP:-}" ]; then
    rm -rf "$MAKA_ROOTFS_TMP"
  fi
}

setup_file() { maka_setup_file; }
teardown_file() { maka_teardown_file; }

# base_config: the default spec, as `runc spec` (runc v1.5.3, OCI 1.3.0)
# prints it on a cgroup v2 host.  Used when `maka spec` is not available.
base_config() {
  local cfg
  cfg=$(cat <<'JSON'
{
	"ociVersion": "1.3.0",
	"process": {
		"terminal": true,
		"user": {
			"uid": 0,
			"gid": 0
		},
		"args": [
			"sh"
		],
		"env": [
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"TERM=xterm"
		],
		"cwd": "/",
		"capabilities": {
			"bounding": [
				"CAP_AUDIT_WRITE",
				"CAP_KILL",
				"CAP_NET_BIND_SERVICE"
			],
			"effective": [
				"CAP_AUDIT_WRITE",
				"CAP_KILL",
				"CAP_NET_BIND_SERVICE"
			],
			"permitted": [
				"CAP_AUDIT_WRITE",
				"CAP_KILL",
				"CAP_NET_BIND_SERVICE"
			]
		},
		"rlimits": [
			{
				"type": "RLIMIT_NOFILE",
				"hard": 1024,
				"soft": 1024
			}
		],
		"noNewPrivileges": true
	},
	"root": {
		"path": "rootfs",
		"readonly": true
	},
	"hostname": "runc",
	"mounts": [
		{
			"destination": "/proc",
			"type": "proc",
			"source": "proc"
		},
		{
			"destination": "/dev",
			"type": "tmpfs",
			"source": "tmpfs",
			"options": [
				"nosuid",
				"strictatime",
				"mode=755",
				"size=65536k"
			]
		},
		{
			"destination": "/dev/pts",
			"type": "devpts",
			"source": "devpts",
			"options": [
				"nosuid",
				"noexec",
				"newinstance",
				"ptmxmode=0666",
				"mode=0620",
				"gid=5"
			]
		},
		{
			"destination": "/dev/shm",
			"type": "tmpfs",
			"source": "shm",
			"options": [
				"nosuid",
				"noexec",
				"nodev",
				"mode=1777",
				"size=65536k"
			]
		},
		{
			"destination": "/dev/mqueue",
			"type": "mqueue",
			"source": "mqueue",
			"options": [
				"nosuid",
				"noexec",
				"nodev"
			]
		},
		{
			"destination": "/sys",
			"type": "sysfs",
			"source": "sysfs",
			"options": [
				"nosuid",
				"noexec",
				"nodev",
				"ro"
			]
		},
		{
			"destination": "/sys/fs/cgroup",
			"type": "cgroup",
			"source": "cgroup",
			"options": [
				"nosuid",
				"noexec",
				"nodev",
				"relatime",
				"ro"
			]
		}
	],
	"linux": {
		"resources": {
			"devices": [
				{
					"allow": false,
					"access": "rwm"
				}
			]
		},
		"namespaces": [
			{
				"type": "pid"
			},
			{
				"type": "network"
			},
			{
				"type": "ipc"
			},
			{
				"type": "uts"
			},
			{
				"type": "mount"
			},
			{
				"type": "cgroup"
			}
		],
		"maskedPaths": [
			"/proc/acpi",
			"/proc/asound",
			"/proc/kcore",
			"/proc/keys",
			"/proc/latency_stats",
			"/proc/timer_list",
			"/proc/timer_stats",
			"/proc/sched_debug",
			"/sys/firmware",
			"/proc/scsi"
		],
		"readonlyPaths": [
			"/proc/bus",
			"/proc/fs",
			"/proc/irq",
			"/proc/sys",
			"/proc/sysrq-trigger"
		]
	}
}
JSON
)
  if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
    printf '%s\n' "$cfg"
  else  # like runc: no cgroup namespace on a cgroup v1 host
    jq --tab 'del(.linux.namespaces[] | select(.type == "cgroup"))' <<<"$cfg"
  fi
}

# make_bundle DIR [ARGS...]: DIR/config.json running ARGS (default /bin/true)
# without a terminal, on the per-file read-only rootfs copy.  The base is the
# output of `maka spec --bundle DIR`, or base_config if that fails (or if
# MAKA_SPEC_FALLBACK=1).
make_bundle() {
  local dir=$1; shift
  [ $# -gt 0 ] || set -- /bin/true
  setup_rootfs
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  rm -f "$dir/config.json"
  # `maka spec` once per test file: every process start is slow under emulation.
  local base=${BATS_FILE_TMPDIR:-$dir}/maka-spec-base.json
  if [ ! -s "$base" ]; then
    local tmp
    tmp=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/spec.XXXXXX")
    if [ "${MAKA_SPEC_FALLBACK:-0}" = 1 ] || ! [ -x "$MAKA_BINARY" ] ||
       ! "$MAKA_BINARY" spec --bundle "$tmp" >/dev/null 2>&1 || ! [ -s "$tmp/config.json" ]; then
      base_config > "$tmp/config.json"
    fi
    mv "$tmp/config.json" "$base"
    rmdir "$tmp"
  fi
  # One jq run. Each argument is a named string: jq 1.6 loses a trailing
  # empty piece when splitting on NUL.
  local a i=0 named=()
  for a in "$@"; do named+=(--arg "a$i" "$a"); i=$((i + 1)); done
  jq --tab "${named[@]}" --argjson n "$#" --arg rootfs "$MAKA_ROOTFS" '
      .process.args = [range(0; $n) as $i | $ARGS.named["a\($i)"]]
      | .process.terminal = false | .root = {path: $rootfs, readonly: true}' \
    "$base" > "$dir/config.json"
}

# update_config DIR JQ_FILTER [JQ_OPTIONS...]: rewrite DIR/config.json in place.
update_config() {
  local dir=$1 filter=$2; shift 2
  local tmp
  tmp=$(mktemp "$dir/.config.json.XXXXXX")
  if jq --tab "$@" "$filter" "$dir/config.json" > "$tmp"; then
    mv "$tmp" "$dir/config.json"
  else
    rm -f "$tmp"
    return 1
  fi
}

# container_pid ID: pid of the container's init, from `maka state`.
container_pid() {
  local pid
  pid=$(maka state "$1" | jq -r '.pid') || return 1
  [ -n "$pid" ] && [ "$pid" != null ] && [ "$pid" != 0 ] || {
    echo "helpers: container $1 has no pid" >&2
    return 1
  }
  echo "$pid"
}

# cgroup_path_of ID: the container's cgroup v2 path relative to the cgroup
# root (as in /proc/PID/cgroup, e.g. /maka/ID), from its init's pid.
cgroup_path_of() {
  local pid path
  pid=$(container_pid "$1") || return 1
  path=$(sed -n 's/^0:://p' "/proc/$pid/cgroup") || return 1
  [ -n "$path" ] || { echo "helpers: no cgroup v2 entry for pid $pid" >&2; return 1; }
  echo "$path"
}

# cgroup_dir_of ID: absolute directory of the container's cgroup.
cgroup_dir_of() {
  local path
  path=$(cgroup_path_of "$1") || return 1
  echo "/sys/fs/cgroup${path%/}"
}

# cgroup_file ID FILE: contents of FILE (e.g. memory.max) in the container's cgroup.
cgroup_file() {
  local d
  d=$(cgroup_dir_of "$1") || return 1
  cat "$d/$2"
}

# wait_for_status ID STATUS [TIMEOUT_SECONDS=30]: poll `maka state` until the
# container has STATUS (created, running, paused, stopped).
wait_for_status() {
  local id=$1 want=$2 timeout=${3:-30} got=
  local deadline=$((SECONDS + timeout))
  while :; do
    got=$(maka state "$id" 2>/dev/null | jq -r '.status' 2>/dev/null) || got=
    [ "$got" = "$want" ] && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "helpers: container $id is '${got:-?}', not '$want', after ${timeout}s" >&2
      return 1
    fi
    sleep 0.1
  done
}

# init_pids: pids of waiting "maka init" processes (containers created, not
# started). One pgrep, not a process per /proc entry: forks are slow under
# emulation.
init_pids() {
  pgrep -fx -- "$MAKA_BINARY init" || true
}

# assert_nothing_left ID: no state dir, no record in the contract store, no
# cgroup named ID anywhere (runc's default place is under the parent of the
# caller's cgroup), no root scaffold, no waiting "maka init" process, and
# `list` does not show it.
assert_nothing_left() {
  local id=$1 left
  [ ! -e "$MAKA_ROOT/$id" ] || { echo "state dir $MAKA_ROOT/$id left" >&2; return 1; }
  # (no store yet when nothing was ever created: find fails, errexit must not)
  left=$(find "$MAKA_STATE_DIR" \( -name "$id.json" -o -name ".$id.json.tmp" \) 2>/dev/null || true)
  [ -z "$left" ] || { echo "record left: $left" >&2; return 1; }
  left=$(find "$MAKA_STATE_DIR/roots" -mindepth 2 -maxdepth 2 -name "$id" 2>/dev/null || true)
  [ -z "$left" ] || { echo "root scaffold left: $left" >&2; return 1; }
  # Its stage: the mounts staged from checked descriptors, the root's overlay.
  left=$(find "$MAKA_STATE_DIR/stage" -mindepth 2 -maxdepth 2 -name "$id" 2>/dev/null || true)
  [ -z "$left" ] || { echo "stage left: $left" >&2; return 1; }
  left=$(awk -v id="$id" 'index($5, "/stage/") && $5 ~ ("/" id "/[0-9]+$")' /proc/self/mountinfo)
  [ -z "$left" ] || { echo "staged mounts left: $left" >&2; return 1; }
  left=$(find /sys/fs/cgroup -type d -name "$id" 2>/dev/null || true)
  [ -z "$left" ] || { echo "cgroup left: $left" >&2; return 1; }
  # Its monitor's cgroup: <id>-<8 hex digits>.
  left=$(find /sys/fs/cgroup/maka.monitors -mindepth 1 -maxdepth 1 -type d -name "$id-????????" 2>/dev/null | grep -E -- "/[^/]*-[0-9a-f]{8}$" || true)
  [ -z "$left" ] || { echo "monitor cgroup left: $left" >&2; return 1; }
  left=$(init_pids)
  [ -z "$left" ] || { echo "init processes left: $left" >&2; return 1; }
  ! maka list -q 2>/dev/null | grep -qxF -- "$id"
}

# teardown_all_containers: remove every container under the test root.
teardown_all_containers() {
  local id
  for id in $(maka list -q 2>/dev/null); do
    teardown_container "$id"
  done
}

# teardown_container ID: remove the container whatever its state.
teardown_container() {
  maka delete --force "$1" >/dev/null 2>&1 || true
}

require_root() {
  [ "$(id -u)" = 0 ] || skip "needs root"
}

require_cgroup2() {
  [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || skip "needs a cgroup v2 (unified) host"
}

# require_binary: skip when the maka binary has not been built yet.
require_binary() {
  [ -x "$MAKA_BINARY" ] || skip "$MAKA_BINARY not built"
}

# maka_io ARGS...: run maka with the container's stdio on a log file.
# A container process inherits maka's stdout/stderr (as with runc), so under
# bats' `run`, whose output is a pipe, a long-lived container would keep the
# pipe open and `run` would wait for it. The log's content is printed once
# maka returns, so `run maka_io create ...` still sees maka's messages.
maka_io() {
  local log rc=0
  log=$(mktemp "${BATS_TEST_TMPDIR:-/tmp}/maka-io.XXXXXX")
  "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" "$@" </dev/null >"$log" 2>&1 || rc=$?
  cat "$log"
  return $rc
}

# doc_block DOC LABEL: the fenced block after the line "file: LABEL" in
# docs/DOC (the client tests take their configuration from the docs).
doc_block() {
  awk -v want="file: $2" '
    $0 == want { found = 1; next }
    found && /^```/ { if (inblock) exit; inblock = 1; next }
    inblock { print }' "$MAKA_REPO/docs/$1"
}

# timed LABEL CMD...: run CMD, append "LABEL <ms>" to the file $MAKA_TIMES.
timed() {
  local label=$1 start rc=0
  shift
  start=$(date +%s%N)
  "$@" || rc=$?
  echo "$label $((($(date +%s%N) - start) / 1000000)) ms" >> "$MAKA_TIMES"
  return $rc
}
