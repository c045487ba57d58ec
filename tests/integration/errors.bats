#!/usr/bin/env bats
# Failure paths: each error names the problem, exits 1, and leaves nothing
# behind (no state directory, no cgroup, no process).

load helpers

bats_require_minimum_version 1.5.0

teardown() { teardown_all_containers; }

# create_fails ID [MAKA ARGS...]: `create ID` with the bundle
# $BATS_TEST_TMPDIR/b must fail with exit 1; leaves $output.
create_fails() {
  local id=$1; shift
  run maka_io create "$@" -b "$BATS_TEST_TMPDIR/b" "$id"
  echo "create $id: status $status: $output"
  [ "$status" -eq 1 ]
}

@test "every command on a missing container says 'container X does not exist' and exits 1 (exec: 255, as runc)" {
  local args
  for args in "state" "start" "kill" "kill --all" "delete" "pause" "resume" "ps" "update --pids-limit 10" "events --stats" "exec"; do
    if [ "$args" = exec ]; then
      run maka exec nosuch true
    else
      # shellcheck disable=SC2086
      run maka $args nosuch
    fi
    echo "$args: $status: $output"
    if [ "$args" = exec ]; then
      [ "$status" -eq 255 ]   # runc: every exec failure exits 255 ("exec failed: ...")
    else
      [ "$status" -eq 1 ]
    fi
    [[ "$output" == *"container nosuch does not exist"* ]]
  done
  run maka delete --force nosuch
  [ "$status" -eq 0 ]
  [ ! -e "$MAKA_ROOT/nosuch" ]
}

@test "a bundle path that does not exist is named in the error" {
  create_fails er-nobundle
  [[ "$output" == *"$BATS_TEST_TMPDIR/b"* ]]
  [[ "$output" == *"no such file or directory"* ]]
  assert_nothing_left er-nobundle
}

@test "a bundle without config.json: the error names config.json" {
  mkdir -p "$BATS_TEST_TMPDIR/b"
  create_fails er-noconfig
  [[ "$output" == *"config.json"* ]]
  [[ "$output" == *"not found"* ]]
  assert_nothing_left er-noconfig
}

@test "a truncated config.json: the error says so and where" {
  make_bundle "$BATS_TEST_TMPDIR/b"
  head -c 200 "$BATS_TEST_TMPDIR/b/config.json" >"$BATS_TEST_TMPDIR/c" &&
    mv "$BATS_TEST_TMPDIR/c" "$BATS_TEST_TMPDIR/b/config.json"
  create_fails er-trunc
  [[ "$output" == *"config.json"* ]]
  [[ "$output" == *"truncated"* ]]
  [[ "$output" =~ line\ [0-9]+ ]]
  assert_nothing_left er-trunc
}

@test "a syntax error in config.json gives its line" {
  make_bundle "$BATS_TEST_TMPDIR/b"
  # line 3 of the tab-indented document gets a stray comma
  sed -i '3s/$/,,/' "$BATS_TEST_TMPDIR/b/config.json"
  create_fails er-syntax
  [[ "$output" == *"config.json"* ]]
  [[ "$output" == *"line 3"* ]]
  assert_nothing_left er-syntax
}

@test "wrong JSON types in config.json: the error names the field and its line" {
  make_bundle "$BATS_TEST_TMPDIR/b"
  update_config "$BATS_TEST_TMPDIR/b" '.process.args = "sh -c true"'
  local line
  line=$(grep -n '"args"' "$BATS_TEST_TMPDIR/b/config.json" | cut -d: -f1)
  create_fails er-type1
  [[ "$output" == *"process.args"* ]]
  [[ "$output" == *"line $line"* ]]
  assert_nothing_left er-type1

  make_bundle "$BATS_TEST_TMPDIR/b"
  update_config "$BATS_TEST_TMPDIR/b" '.process.user.uid = "root"'
  create_fails er-type2
  [[ "$output" == *"process.user.uid"* ]]
  assert_nothing_left er-type2

  make_bundle "$BATS_TEST_TMPDIR/b"
  update_config "$BATS_TEST_TMPDIR/b" '.root.readonly = "yes"'
  create_fails er-type3
  [[ "$output" == *"root.readonly"* ]]
  assert_nothing_left er-type3
}

@test "missing or empty process.args is refused, naming the field" {
  make_bundle "$BATS_TEST_TMPDIR/b"
  update_config "$BATS_TEST_TMPDIR/b" 'del(.process.args)'
  create_fails er-noargs
  [[ "$output" == *"process.args"* ]]
  assert_nothing_left er-noargs

  update_config "$BATS_TEST_TMPDIR/b" '.process.args = []'
  create_fails er-emptyargs
  [[ "$output" == *"process.args"* ]]
  assert_nothing_left er-emptyargs

  update_config "$BATS_TEST_TMPDIR/b" 'del(.process)'
  create_fails er-noprocess
  [[ "$output" == *"process"* ]]
  assert_nothing_left er-noprocess
}

@test "a 20 MB process.args is refused before anything exists, naming the argument and execve's limit" {
  make_bundle "$BATS_TEST_TMPDIR/b"
  head -c 20000000 /dev/zero | tr '\0' a > "$BATS_TEST_TMPDIR/big"
  update_config "$BATS_TEST_TMPDIR/b" '.process.args = ["/bin/echo", $big]' --rawfile big "$BATS_TEST_TMPDIR/big"
  create_fails er-bigargs
  [[ "$output" == *"process.args[1]: 20000000 bytes; execve takes at most 131071 per argument"* ]]
  [[ "$output" == *"process.args: the arguments and environment take 200"*" bytes; execve takes at most "*" with a stack limit of "* ]]
  # The error is a line, not the argument echoed back.
  [ "${#output}" -lt 4096 ]
  assert_nothing_left er-bigargs
}

@test "an RLIMIT_NOFILE above the kernel's fs.nr_open is refused before anything exists, at create and at exec, naming the field" {
  local nr
  nr=$(cat /proc/sys/fs/nr_open)
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 3600
  update_config "$BATS_TEST_TMPDIR/b" '.process.rlimits = [{"type": "RLIMIT_NOFILE", "hard": ($nr + 1), "soft": 1024}]' --argjson nr "$nr"
  create_fails er-nofile
  [[ "$output" == *"process.rlimits[0].hard: $((nr + 1)) is above the kernel's fs.nr_open ($nr)"* ]]
  assert_nothing_left er-nofile
  # exec: the same limit on an exec'd process, refused before it starts.
  update_config "$BATS_TEST_TMPDIR/b" '.process.rlimits = [{"type": "RLIMIT_NOFILE", "hard": $nr, "soft": 1024}]' --argjson nr "$nr"
  maka_io run -d --bundle "$BATS_TEST_TMPDIR/b" er-nofile
  jq '.process | .args = ["/bin/true"] | .rlimits = [{"type": "RLIMIT_NOFILE", "hard": ($nr + 1), "soft": 1024}]' --argjson nr "$nr" "$BATS_TEST_TMPDIR/b/config.json" > "$BATS_TEST_TMPDIR/p.json"
  run maka exec --process "$BATS_TEST_TMPDIR/p.json" er-nofile
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"process.rlimits[0].hard: $((nr + 1)) is above the kernel's fs.nr_open ($nr)"* ]]
  maka delete --force er-nofile
  assert_nothing_left er-nofile
}

@test "a relative process.cwd is refused, naming the field and the value" {
  make_bundle "$BATS_TEST_TMPDIR/b"
  update_config "$BATS_TEST_TMPDIR/b" '.process.cwd = "tmp"'
  create_fails er-relcwd
  [[ "$output" == *"process.cwd"* ]]
  [[ "$output" == *'"tmp"'* ]]
  assert_nothing_left er-relcwd
}

@test "a root.path that does not exist is named in the error" {
  make_bundle "$BATS_TEST_TMPDIR/b"
  update_config "$BATS_TEST_TMPDIR/b" '.root.path = "/nonexistent/rootfs"'
  create_fails er-noroot
  [[ "$output" == *"/nonexistent/rootfs"* ]]
  assert_nothing_left er-noroot

  # relative to the bundle
  update_config "$BATS_TEST_TMPDIR/b" '.root.path = "no-rootfs-here"'
  create_fails er-noroot2
  [[ "$output" == *"no-rootfs-here"* ]]
  assert_nothing_left er-noroot2
}

@test "a process binary missing from the rootfs: create and run fail naming it, nothing left" {
  make_bundle "$BATS_TEST_TMPDIR/b" /bin/no-such-binary arg
  create_fails er-nobin
  [[ "$output" == *"/bin/no-such-binary"* ]]
  assert_nothing_left er-nobin

  run maka_io run -b "$BATS_TEST_TMPDIR/b" er-nobin-run
  [ "$status" -ne 0 ]
  [[ "$output" == *"/bin/no-such-binary"* ]]
  assert_nothing_left er-nobin-run

  run maka_io run -d -b "$BATS_TEST_TMPDIR/b" er-nobin-detach
  [ "$status" -eq 1 ]
  [[ "$output" == *"/bin/no-such-binary"* ]]
  assert_nothing_left er-nobin-detach

  # a relative name not found in process.env's PATH
  make_bundle "$BATS_TEST_TMPDIR/b" no-such-command
  create_fails er-nocmd
  [[ "$output" == *"no-such-command"* ]]
  assert_nothing_left er-nocmd
}

@test "a duplicate id: the second create says 'already exists', the first container is untouched" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'trap "exit 0" TERM; sleep 100 & wait'
  run maka_io create -b "$BATS_TEST_TMPDIR/b" er-dup
  [ "$status" -eq 0 ]
  local before pid cg
  before=$(maka state er-dup)
  pid=$(jq -r .pid <<<"$before")
  cg=$(find /sys/fs/cgroup -type d -name er-dup)
  [ -n "$cg" ]

  run maka_io create -b "$BATS_TEST_TMPDIR/b" er-dup
  [ "$status" -eq 1 ]
  [[ "$output" == *"container er-dup already exists"* ]]
  run maka_io run -d -b "$BATS_TEST_TMPDIR/b" er-dup
  [ "$status" -eq 1 ]
  [[ "$output" == *"already exists"* ]]

  [ "$(maka state er-dup)" = "$before" ]
  [ "$(find /sys/fs/cgroup -type d -name er-dup)" = "$cg" ]
  [ "$(init_pids)" = "$pid" ]               # no second init
  [ "$(cat "$cg/cgroup.procs")" = "$pid" ]
  # and it still works
  run maka start er-dup
  [ "$status" -eq 0 ]
  wait_for_status er-dup running
  run maka kill er-dup
  [ "$status" -eq 0 ]
  wait_for_status er-dup stopped
  run maka delete er-dup
  [ "$status" -eq 0 ]
  assert_nothing_left er-dup
}

@test "invalid ids (path separators, dot names, spaces, empty) are refused by every command" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  local before
  before=$(ls -A "$MAKA_ROOT" 2>/dev/null | sort)
  local id
  for id in "../x" "a/b" "." ".." "a b" "x/../y" "/abs"; do
    run maka_io create -b "$BATS_TEST_TMPDIR/b" "$id"
    echo "create [$id]: $status: $output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"invalid"* ]]
    [[ "$output" == *"\"$id\""* ]]
    run maka state "$id"
    [ "$status" -eq 1 ]
    [[ "$output" == *"invalid"* ]]
    run maka delete --force "$id"
    [ "$status" -eq 1 ]
    [[ "$output" == *"invalid"* ]]
  done
  run maka_io create -b "$BATS_TEST_TMPDIR/b" ""
  [ "$status" -eq 1 ]
  [[ "$output" == *"invalid"* || "$output" == *"empty"* ]]
  # nothing created anywhere: not in the root, not next to it
  [ "$(ls -A "$MAKA_ROOT" 2>/dev/null | sort)" = "$before" ]
  [ ! -e "$(dirname "$MAKA_ROOT")/x" ]
  [ ! -e "$(dirname "$MAKA_ROOT")/y" ]
  [ -z "$(init_pids)" ]
}

@test "wrong argument counts are refused, naming the command" {
  local args
  for args in "create" "create a b" "run" "run a b" "start" "start a b" "state" "state a b" \
              "kill" "kill a 9 x" "delete" "delete a b" "pause" "resume" "ps" "list x"; do
    # shellcheck disable=SC2086
    run maka $args
    echo "$args: $status: $output"
    [ "$status" -eq 1 ]
    local cmd=${args%% *}
    [[ "$output" == *"$cmd"* ]]
    [[ "$output" == *"argument"* ]]
  done
  # (the monitor binary of an earlier test's container may be there)
  [ -z "$(ls -A "$MAKA_ROOT" 2>/dev/null | grep -v '^\.maka-monitor-')" ]
}

@test "an unknown signal name or number is refused by kill, naming it" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'trap "exit 0" TERM; sleep 100 & wait'
  run maka_io run -d -b "$BATS_TEST_TMPDIR/b" er-sig
  [ "$status" -eq 0 ]
  local s
  for s in SIGNOPE 65 9x; do
    run maka kill er-sig "$s"
    [ "$status" -eq 1 ] || { echo "kill $s: $status $output"; false; }
    [[ "$output" == *"$s"* ]]
  done
  [ "$(maka state er-sig | jq -r .status)" = running ]
}
