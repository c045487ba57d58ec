#!/usr/bin/env bats
# Hostile inputs (issue 15, item 2): malformed, huge and mistyped
# config.json, process.json and policy files; odd ids; bundle and root paths
# through symlinks; missing or unreadable roots; read-only and full state
# dirs; invalid signals and resource values. Each is refused with a non-zero
# exit and an error that names the file, key or flag (never a Go type), and
# leaves nothing behind (no state entry, record, cgroup, lease, scaffold or
# process) and loses nothing (a running container's record, state and cgroup
# are as they were). docs/security.md, "Hostile inputs", lists each case.
#
# Most cases need no container: one long-lived container (hs-keep) is
# started once for the file and must survive every test untouched.

load helpers

bats_require_minimum_version 1.5.0

# Each test runs dozens of maka processes and parses 50 MB files: on a
# loaded host under emulation a test took 230 s; a wider hang detector
# (read by bats after this file is sourced).
BATS_TEST_TIMEOUT=$(( ${BATS_TEST_TIMEOUT:-240} > 600 ? ${BATS_TEST_TIMEOUT:-240} : 600 ))

setup_file() {
  maka_setup_file
  export B=$BATS_FILE_TMPDIR/b
  make_bundle "$B" sh -c 'trap "exit 0" TERM; sleep 4244 & wait'
  maka_io run -d -b "$B" hs-keep >&2
  keep_snapshot >"$BATS_FILE_TMPDIR/keep.before"
}

teardown_file() { maka_teardown_file; }

# keep_snapshot: what must not change about hs-keep: its status, pid,
# record (checksum), cgroup and the processes in it.
keep_snapshot() {
  local st rec cg
  st=$(maka state hs-keep | jq -c '{status, pid}')
  rec=$(find "$MAKA_STATE_DIR" -path '*/records/hs-keep.json' -exec sha256sum {} +)
  cg=$(find /sys/fs/cgroup -type d -name hs-keep)
  echo "$st"
  echo "$rec"
  echo "$cg $(cat "$cg/cgroup.procs" | sort | tr '\n' ' ')"
}

# world: every file maka keeps (state entries, records, leases, scaffolds,
# locks), every maka cgroup, the init processes and the mount count.
world() {
  find "$MAKA_ROOT" "$MAKA_STATE_DIR" -mindepth 1 2>/dev/null | grep -v '/\.maka-monitor-' | sort
  find /sys/fs/cgroup -type d -path '*maka*' | sort
  init_pids
  wc -l </proc/self/mountinfo
}

setup() {
  world >"$BATS_TEST_TMPDIR/world.before"
}

# assert_unchanged: nothing created, nothing lost: the world is as setup
# saw it and hs-keep is as setup_file left it.
assert_unchanged() {
  world >"$BATS_TEST_TMPDIR/world.after"
  diff "$BATS_TEST_TMPDIR/world.before" "$BATS_TEST_TMPDIR/world.after" >&2 ||
    { echo "the world changed (above: < before, > after)" >&2; return 1; }
  keep_snapshot | diff "$BATS_FILE_TMPDIR/keep.before" - >&2 ||
    { echo "hs-keep changed" >&2; return 1; }
}

# clear_error WORD...: $output is an error that says each WORD and names no
# Go type, struct field or panic.
clear_error() {
  local w
  for w in "$@"; do
    [[ "$output" == *"$w"* ]] || { echo "error does not say '$w': $output" >&2; return 1; }
  done
  if grep -E 'libmaka\.|specs\.|configs\.|struct field|Go value|Go struct|goroutine |panic:|runtime error|(^|[^.[:alnum:]])json: ' <<<"$output" >&2; then
    echo "error names Go internals (above)" >&2
    return 1
  fi
}

# refused STATUS CMD...: run CMD; it must exit STATUS (1 unless given).
refused() {
  local want=1
  [[ "$1" =~ ^[0-9]+$ ]] && { want=$1; shift; }
  run "$@"
  echo "$*: status $status: ${output:0:2000}"
  [ "$status" -eq "$want" ]
}

# fill CHAR N: N copies of CHAR on stdout (one write: a shell loop or
# tr over 50 MB takes most of a minute under emulation).
fill() {
  python3 -c 'import sys; sys.stdout.write(sys.argv[1] * int(sys.argv[2]))' "$1" "$2"
}

cfg_case() { # NAME JQ_FILTER: a copy of the bundle with the filter applied
  mkdir -p "$BATS_TEST_TMPDIR/$1"
  jq --tab "$2" "$B/config.json" >"$BATS_TEST_TMPDIR/$1/config.json"
}

@test "config.json: 50 MB, 1 MB of garbage, 100,000 levels deep: refused naming file and key, nothing created" {
  local d=$BATS_TEST_TMPDIR
  # 50 MB: a valid document but for one mistyped key, after a 50 MB value
  mkdir -p "$d/huge"
  { printf '{"annotations": {"x": "'; fill a 52428800; printf '"},'
    jq -c '.process.args = 5' "$B/config.json" | tail -c +2; } >"$d/huge/config.json"
  refused maka_io create -b "$d/huge" hs-huge
  clear_error config.json process.args
  # 1 MB of garbage
  mkdir -p "$d/junk"
  { printf '{"x": '; fill '#' 1048576; } >"$d/junk/config.json"
  refused maka_io create -b "$d/junk" hs-junk
  clear_error config.json malformed
  rm -rf "$d/huge" "$d/junk"
  # 100,000 levels of nesting
  mkdir -p "$d/deep"
  { printf '{"annotations": '; fill '[' 100000; fill ']' 100000; printf '}'; } >"$d/deep/config.json"
  refused maka_io create -b "$d/deep" hs-deep
  clear_error config.json
  assert_unchanged
}

@test "config.json: wrong types, not an object, two documents, not UTF-8: refused naming file and key, nothing created" {
  local d=$BATS_TEST_TMPDIR
  # wrong types, each named by its key
  local k f
  for k in 'process.env|.process.env = [1]' 'linux.namespaces.type|.linux.namespaces[0].type = 5' \
           'linux.resources.memory.limit|.linux.resources.memory = {limit: "lots"}' \
           'process.rlimits.hard|.process.rlimits = [{type: "RLIMIT_NOFILE", hard: -1, soft: 1}]' \
           'process.env[1]: "NOEQUALS" is not NAME=value|.process.env = ["PATH=/bin", "NOEQUALS"]' \
           'process.env[0]: "=x" has an empty name|.process.env = ["=x"]'; do
    f=${k#*|}; k=${k%%|*}
    cfg_case t "$f"
    refused maka_io create -b "$d/t" hs-type
    clear_error config.json "$k"
  done
  # not an object; empty; invalid UTF-8 in a key's value; a second document
  mkdir -p "$d/x"
  for f in '[]' 'null' '' ; do
    printf '%s' "$f" >"$d/x/config.json"
    refused maka_io create -b "$d/x" hs-notobj
    clear_error config.json
  done
  jq -c '.process.args = ["/bin/true"]' "$B/config.json" >"$d/x/config.json"
  echo '{}' >>"$d/x/config.json"
  refused maka_io create -b "$d/x" hs-twodocs
  clear_error config.json trailing
  jq -c '.hostname = "HOSTNAME"' "$B/config.json" | sed 's/HOSTNAME/\xff\xfe/' >"$d/x/config.json"
  refused maka_io create -b "$d/x" hs-utf8
  clear_error config.json "not UTF-8"
  assert_unchanged
}

@test "exec --process: malformed, 50 MB, nested, wrong types: refused naming the file and key, nothing started in the container" {
  local d=$BATS_TEST_TMPDIR f k
  printf '{"args": ["true"], "cwd": "/", "env": [' >"$d/p.json"
  refused 255 maka exec --process "$d/missing.json" hs-keep
  clear_error missing.json
  for k in 'args|{"args": "true", "cwd": "/"}' 'cwd|{"args": ["true"], "cwd": 7}' 'user.uid|{"args": ["true"], "cwd": "/", "user": {"uid": -1}}' \
           'env|{"args": ["true"], "cwd": "/", "env": "A=1"}' 'rlimits|{"args": ["true"], "cwd": "/", "rlimits": {}}' \
           'process|[]' 'malformed|{"args": ["true"]' 'malformed|{"args": ["true"]}}' \
           $'UTF-8|{"args": ["true\xff"], "cwd": "/"}' 'process.env[0]: "A" is not NAME=value|{"args": ["true"], "cwd": "/", "env": ["A"]}'; do
    f=${k#*|}; k=${k%%|*}
    printf '%s' "$f" >"$d/p.json"
    refused 255 maka exec --process "$d/p.json" hs-keep
    clear_error p.json "$k"
  done
  { printf '{"args": ["true"], "cwd": "/", "env": ["A='; fill a 52428800; printf '"], "terminal": "no"}'; } >"$d/p.json"
  refused 255 maka exec --process "$d/p.json" hs-keep
  clear_error p.json terminal
  { printf '{"args": '; fill '[' 100000; fill ']' 100000; printf '}'; } >"$d/p.json"
  refused 255 maka exec --process "$d/p.json" hs-keep
  clear_error p.json
  rm -f "$d/p.json"
  assert_unchanged
}

@test "policy files: malformed, misspelt capability or key, wrong type, null, empty, two documents, not UTF-8, missing: refused naming it, nothing created" {
  local d=$BATS_TEST_TMPDIR k f
  for k in 'CAP_SYS_ADMN|{"profile": "restricted", "capabilities": ["CAP_SYS_ADMN"]}' \
           'capabilities|{"profile": "restricted", "capabilities": "CAP_KILL"}' \
           'profil|{"profil": "restricted"}' \
           'profile|{"profile": "restrictd"}' \
           'memory|{"profile": "restricted", "maxLimits": {"memory": "lots"}}' \
           'null|null' 'empty|' 'second|{"profile": "restricted"} {"profile": "baseline"}' \
           'malformed|{"profile": "restricted"' 'malformed|{"profile": restricted}' \
           $'not UTF-8 (at byte 30)|{"bindPaths": [{"path": "/srv/\xc3(", "mode": "ro"}]}'; do
    f=${k#*|}; k=${k%%|*}
    printf '%s' "$f" >"$d/policy.json"
    MAKA_POLICY=$d/policy.json refused maka_io create -b "$B" hs-pol
    clear_error "$k"
  done
  MAKA_POLICY=$d/no-such-policy.json refused maka_io create -b "$B" hs-pol
  clear_error no-such-policy.json
  assert_unchanged
}

@test "odd ids: .., /, a/b, 1,000 characters, non-UTF-8, empty: refused naming the rule, nothing created" {
  # A NUL cannot be passed: argv strings end at the first NUL (execve).
  local long id cmd
  long=$(head -c 1000 /dev/zero | tr '\0' a)
  for id in ".." "/" "a/b" "$long" $'\xff\xfe' $'caf\xc3\xa9' "a:b" ""; do
    refused maka_io create -b "$B" "$id"
    clear_error invalid
  done
  # every command on the new cases (errors.bats has the others)
  for id in "$long" $'\xff\xfe'; do
    for cmd in state delete kill; do
      refused maka "$cmd" "$id"
      clear_error invalid
    done
    refused 255 maka exec "$id" true
    clear_error invalid
  done
  # 1,000 characters: refused as too long (ids fit a file name, 245
  # characters at most), shown by its start and length, not whole.
  refused maka_io create -b "$B" "$long"
  clear_error "at most 245 characters" "(1000 characters)"
  [[ "$output" != *"$long"* ]]
  assert_unchanged
}

@test "bundle and root.path through symlinks: followed once, the state names the real bundle; dangling and looping links refused naming them" {
  local d=$BATS_TEST_TMPDIR
  ln -s "$B" "$d/blink"
  mkdir -p "$d/rb"
  ln -s "$MAKA_ROOTFS" "$d/rb/rootlink"
  jq '.root.path = "rootlink"' "$B/config.json" >"$d/rb/config.json"
  ln -s "$d/nowhere" "$d/rb/dangling"
  ln -s loop1 "$d/rb/loop2"; ln -s loop2 "$d/rb/loop1"
  # a dangling bundle link
  ln -s "$d/nowhere" "$d/bdangling"
  refused maka_io create -b "$d/bdangling" hs-bd
  clear_error bdangling
  for f in dangling loop1; do
    jq --arg p "$f" '.root.path = $p' "$B/config.json" >"$d/rb/config.json"
    refused maka_io create -b "$d/rb" hs-rl
    clear_error "$f"
  done
  # root.path a regular file
  : >"$d/rb/afile"
  jq '.root.path = "afile"' "$B/config.json" >"$d/rb/config.json"
  refused maka_io create -b "$d/rb" hs-rf
  clear_error afile
  assert_unchanged
  # A bundle through a symlink and a root through a symlink work; delete
  # leaves nothing.
  jq '.root.path = "rootlink"' "$B/config.json" >"$d/rb/config.json"
  run maka_io create -b "$d/blink" hs-blink
  [ "$status" -eq 0 ]
  run maka_io create -b "$d/rb" hs-rlink
  [ "$status" -eq 0 ]
  [ "$(maka state hs-blink | jq -r .bundle)" = "$B" ]
  run maka delete hs-blink
  [ "$status" -eq 0 ]
  run maka delete hs-rlink
  [ "$status" -eq 0 ]
  assert_nothing_left hs-blink
  assert_nothing_left hs-rlink
}

# at_io ROOT STATE_DIR ARGS...: maka with another --root and --state-dir,
# its (and a container's) output on a file, as maka_io.
at_io() {
  local log rc=0 r=$1 sd=$2
  shift 2
  log=$(mktemp "$BATS_TEST_TMPDIR/at-io.XXXXXX")
  "$MAKA_BINARY" --root "$r" --state-dir "$sd" "$@" </dev/null >"$log" 2>&1 || rc=$?
  cat "$log"
  return $rc
}

@test "--root and --state-dir that are regular files: refused naming the path, nothing written" {
  local d=$BATS_TEST_TMPDIR
  : >"$d/afile"
  refused at_io "$d/afile" "$MAKA_STATE_DIR" create -b "$B" hs-rootfile
  clear_error afile
  refused at_io "$MAKA_ROOT" "$d/afile" create -b "$B" hs-sdfile
  clear_error afile
  refused at_io "$d/afile" "$MAKA_STATE_DIR" list
  clear_error afile
  [ ! -s "$d/afile" ]
  assert_unchanged
}

# tiny_dirs SIZE: a --root and --state-dir on a tmpfs of SIZE mounted in the guest.
tiny_dirs() {
  T=$BATS_TEST_TMPDIR/tiny
  mkdir -p "$T"
  mount -t tmpfs -o "size=$1,mode=0700" maka-hostile "$T"
  mkdir -m 0700 "$T/state"
  # --root elsewhere: a created sandbox's init holds its exec fifo open
  # there, and a tmpfs with a file open for writing cannot be remounted
  # read-only.
  TR=$BATS_TEST_TMPDIR/troot
  mkdir -m 0700 "$TR"
}

tiny() { "$MAKA_BINARY" --root "$TR" --state-dir "$T/state" "$@"; }
# tiny_io ARGS...: tiny with the container's stdio on a file (as maka_io).
tiny_io() {
  local log rc=0
  log=$(mktemp "$BATS_TEST_TMPDIR/tiny-io.XXXXXX")
  tiny "$@" </dev/null >"$log" 2>&1 || rc=$?
  cat "$log"
  return $rc
}

teardown() {
  if [ -n "${T:-}" ] && mountpoint -q "$T"; then
    mount -o remount,rw "$T" 2>/dev/null || true
    rm -f "$T/fill"
    "$MAKA_BINARY" --root "$TR" --state-dir "$T/state" delete --force hs-tiny >/dev/null 2>&1 || true
    umount "$T"
  fi
}

@test "a full and a read-only state dir: create fails naming it, the existing container's record is kept and it still deletes" {
  # (a 2 MB tmpfs as --state-dir; --root next to it)
  require_root
  tiny_dirs 2m
  run tiny_io create -b "$B" hs-tiny
  [ "$status" -eq 0 ]
  local rec before
  rec=$(find "$T/state" -path '*/records/hs-tiny.json')
  [ -n "$rec" ]
  before=$(sha256sum <"$rec")
  # full: fill the tmpfs to the last byte
  dd if=/dev/zero of="$T/fill" bs=4k 2>/dev/null || true
  refused tiny_io create -b "$B" hs-tiny2
  clear_error "no space left"
  [ "$(sha256sum <"$rec")" = "$before" ]
  run tiny state hs-tiny
  echo "state on a full disk: $status: $output"
  [ "$status" -eq 0 ]
  [ "$(jq -r .status <<<"$output")" = created ]
  # (its lock file stays, as every id's: lock files are never removed)
  [ -z "$(find "$T" "$TR" -name 'hs-tiny2*' ! -path '*/locks/hs-tiny2.lock')" ]
  [ -z "$(find /sys/fs/cgroup -type d -name hs-tiny2)" ]
  # a delete on the full disk: succeeds, or fails and keeps the record whole
  run tiny delete --force hs-tiny
  echo "delete on a full disk: $status: $output"
  if [ "$status" -ne 0 ]; then
    clear_error
    jq -e . "$rec" >/dev/null
  fi
  rm -f "$T/fill"
  if ! tiny state hs-tiny >/dev/null 2>&1; then   # the delete went through
    run tiny_io create -b "$B" hs-tiny
    echo "create again: $status: $output"
    [ "$status" -eq 0 ]
  fi
  rec=$(find "$T/state" -path '*/records/hs-tiny.json')
  before=$(sha256sum <"$rec")
  # read-only
  mount -o remount,ro "$T"
  refused tiny_io create -b "$B" hs-tiny3
  clear_error "read-only"
  run tiny delete --force hs-tiny
  echo "delete on a read-only state dir: $status: $output"
  [ "$status" -ne 0 ]
  clear_error "read-only"
  [ "$(sha256sum <"$rec")" = "$before" ]
  [ -z "$(find /sys/fs/cgroup -type d -name hs-tiny3)" ]
  mount -o remount,rw "$T"
  [ "$(tiny state hs-tiny | jq -r .status)" = created ]
  run tiny delete hs-tiny
  [ "$status" -eq 0 ]
  # (its violations and peak are kept after it, under history/: not a leftover)
  [ -z "$(find "$TR" "$T/state" -path '*/history' -prune -o -name 'hs-tiny*' ! -name '*.lock' -print)" ]
  [ -z "$(find /sys/fs/cgroup -type d -name 'hs-tiny*')" ]
  keep_snapshot | diff "$BATS_FILE_TMPDIR/keep.before" -
}

@test "kill with an invalid signal (99, SIGFOO, -1, 0x9, 2^31) is refused naming it; the container keeps running" {
  local s
  # (an empty signal is no signal: SIGTERM, as runc)
  for s in 99 SIGFOO FOO -1 0x9 2147483648; do
    refused maka kill hs-keep "$s"
    clear_error "$s"
    [[ "$output" == *signal* ]]
  done
  assert_unchanged
}

@test "update with invalid resource values (and a --resources file not UTF-8) is refused naming the flag; the cgroup's limits are unchanged" {
  local cg lim
  cg=$(find /sys/fs/cgroup -type d -name hs-keep)
  lim=$(cat "$cg/memory.max" "$cg/pids.max" "$cg/cpu.max")
  local a
  for a in "--memory|-5" "--memory|5Q" "--pids-limit|abc" "--pids-limit|-7" "--cpu-quota|x" "--cpu-period|-1" "--cpu-share|1.5" "--memory-swap|lots"; do
    refused maka update "${a%%|*}" "${a#*|}" hs-keep
    clear_error "${a%%|*}"
  done
  printf '{"memory": {"limit": "lots"}}' >"$BATS_TEST_TMPDIR/r.json"
  refused maka update --resources "$BATS_TEST_TMPDIR/r.json" hs-keep
  clear_error memory.limit r.json
  printf '{"pids": ' >"$BATS_TEST_TMPDIR/r.json"
  refused maka update --resources "$BATS_TEST_TMPDIR/r.json" hs-keep
  clear_error r.json
  printf '{"cpu": {"cpus": "0\xff"}}' >"$BATS_TEST_TMPDIR/r.json"
  refused maka update --resources "$BATS_TEST_TMPDIR/r.json" hs-keep
  clear_error "r.json: malformed JSON: a byte that is not UTF-8 (at byte 19)"
  [ "$(cat "$cg/memory.max" "$cg/pids.max" "$cg/cpu.max")" = "$lim" ]
  assert_unchanged
}
