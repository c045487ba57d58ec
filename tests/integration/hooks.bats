#!/usr/bin/env bats
# OCI hooks: each kind runs at its moment of the lifecycle with the state on
# stdin; failing prestart/createRuntime hooks fail create and leave nothing;
# a failing poststart hook fails start or run and stops the container
# (runtime spec 1.3, as runc); a failing poststop hook is a warning and the
# delete goes on (the spec's step 13; runc fails the delete).

load helpers

bats_require_minimum_version 1.5.0

teardown() { teardown_all_containers; }

# hooks_bundle DIR: a bundle whose every hook runs $DIR/log/hook.sh NAME,
# which appends NAME to log/order and saves its stdin as log/NAME.json.
# log/ is bind-mounted at /mnt in the container: startContainer (which runs
# inside the container) uses it as /mnt/hook.sh, and the container process
# appends "process" to /mnt/order, then waits for SIGTERM.  The poststart
# hook first waits (up to 20 s) for that "process" line.
hooks_bundle() {
  local dir=$1 log=$1/log
  mkdir -p "$log"
  cat >"$log/hook.sh" <<'EOF'
#!/bin/sh
# hook.sh NAME [LOGDIR]: LOGDIR defaults to this script's directory.
name=$1
dir=${2:-$(dirname "$0")}
cat >"$dir/$name.json"
if [ "$name" = poststart ]; then
  i=0
  while ! grep -qx process "$dir/order" 2>/dev/null && [ $i -lt 200 ]; do
    sleep 0.1; i=$((i + 1))
  done
fi
echo "$name" >>"$dir/order"
EOF
  chmod 755 "$log/hook.sh"
  make_bundle "$dir" sh -c 'echo process >>/mnt/order; trap "exit 0" TERM; sleep 100 & wait'
  local h=$log/hook.sh
  update_config "$dir" '
    .mounts += [{destination: "/mnt", type: "bind", source: $log, options: ["rbind", "rw"]}]
    | .hooks = {
        prestart:        [{path: $h, args: ["hook.sh", "prestart"]}],
        createRuntime:   [{path: $h, args: ["hook.sh", "createRuntime"]}],
        createContainer: [{path: $h, args: ["hook.sh", "createContainer"]}],
        startContainer:  [{path: "/mnt/hook.sh", args: ["hook.sh", "startContainer", "/mnt"]}],
        poststart:       [{path: $h, args: ["hook.sh", "poststart"]}],
        poststop:        [{path: $h, args: ["hook.sh", "poststop"]}]
      }' --arg log "$log" --arg h "$h"
  # A hook runs on the host as root: the policy lists each one (hookPaths);
  # hooks: true alone allows none.
  jq --arg h "$h" '.hookPaths = [$h, "/bin/sh", "/bin/true", "/bin/false"]' \
    "$MAKA_REPO/tests/integration/fixtures/policy-baseline.json" > "$dir/policy.json"
  export MAKA_POLICY=$dir/policy.json
}

order() {
  tr '\n' ' ' <"$1/log/order" 2>/dev/null
}

@test "hooks run in order with the state on stdin: create runs prestart/createRuntime/createContainer, start runs startContainer then poststart (after the process started), delete runs poststop" {
  local b=$BATS_TEST_TMPDIR/b
  hooks_bundle "$b"
  run maka_io create -b "$b" hk1
  [ "$status" -eq 0 ]
  # poststart must not have run at create
  [ "$(order "$b")" = "prestart createRuntime createContainer " ]
  [ ! -e "$b/log/poststart.json" ]
  local pid
  pid=$(container_pid hk1)
  local h
  for h in prestart createRuntime createContainer; do
    [ "$(jq -r .id "$b/log/$h.json")" = hk1 ]
    [ "$(jq -r .bundle "$b/log/$h.json")" = "$b" ]
    [ -n "$(jq -r .ociVersion "$b/log/$h.json")" ]
  done
  # prestart sees "created" (the spec's step 3, after the environment is
  # created; the OCI's hooks_stdin); the others what runc passes
  [ "$(jq -r .status "$b/log/prestart.json")" = created ]
  [ "$(jq -r .status "$b/log/createRuntime.json")" = creating ]
  [ "$(jq -r .status "$b/log/createContainer.json")" = creating ]
  # prestart and createRuntime run in the runtime's namespace: the init's host pid
  [ "$(jq -r .pid "$b/log/prestart.json")" = "$pid" ]
  [ "$(jq -r .pid "$b/log/createRuntime.json")" = "$pid" ]

  run maka start hk1
  [ "$status" -eq 0 ]
  # start returns after poststart ran, and poststart ran after the process wrote its line
  [ "$(order "$b")" = "prestart createRuntime createContainer startContainer process poststart " ]
  [ "$(jq -r .status "$b/log/poststart.json")" = running ]
  [ "$(jq -r .pid "$b/log/poststart.json")" = "$pid" ]
  [ "$(jq -r .id "$b/log/startContainer.json")" = hk1 ]
  [ "$(maka state hk1 | jq -r .status)" = running ]

  run maka kill hk1 TERM
  [ "$status" -eq 0 ]
  wait_for_status hk1 stopped
  [ ! -e "$b/log/poststop.json" ]
  run maka delete hk1
  [ "$status" -eq 0 ]
  [ "$(order "$b")" = "prestart createRuntime createContainer startContainer process poststart poststop " ]
  [ "$(jq -r .status "$b/log/poststop.json")" = stopped ]
  [ "$(jq -r .id "$b/log/poststop.json")" = hk1 ]
}

@test "run -d runs every start-side hook, poststart after the process started" {
  local b=$BATS_TEST_TMPDIR/b
  hooks_bundle "$b"
  run maka_io run -d -b "$b" hk2
  [ "$status" -eq 0 ]
  [ "$(order "$b")" = "prestart createRuntime createContainer startContainer process poststart " ]
  [ "$(jq -r .status "$b/log/poststart.json")" = running ]
  run maka delete --force hk2
  [ "$status" -eq 0 ]
  [ "$(order "$b")" = "prestart createRuntime createContainer startContainer process poststart poststop " ]
}

@test "a failing prestart hook fails create, naming the hook, and leaves nothing behind" {
  local b=$BATS_TEST_TMPDIR/b
  hooks_bundle "$b"
  update_config "$b" '.hooks.prestart = [{path: "/bin/sh", args: ["sh", "-c", "echo prestart-broke >&2; exit 3"]}]'
  run maka_io create -b "$b" hk-pre
  [ "$status" -eq 1 ]
  [[ "$output" == *prestart* ]]
  [[ "$output" == *prestart-broke* ]]
  assert_nothing_left hk-pre
  local o
  o=$(order "$b")
  echo "hooks run: $o"
  [[ "$o" != *createRuntime* && "$o" != *createContainer* && "$o" != *startContainer* && "$o" != *process* && "$o" != *poststart* ]]
}

@test "a failing createRuntime hook fails create and leaves nothing behind" {
  local b=$BATS_TEST_TMPDIR/b
  hooks_bundle "$b"
  update_config "$b" '.hooks.createRuntime = [{path: "/bin/false", args: ["false"]}]'
  run maka_io create -b "$b" hk-cr
  [ "$status" -eq 1 ]
  [[ "$output" == *createRuntime* ]]
  assert_nothing_left hk-cr
  # prestart ran; nothing after createRuntime did (poststop may: the
  # failed container is deleted)
  local o
  o=$(order "$b")
  echo "hooks run: $o"
  [[ "$o" == "prestart "* ]]
  [[ "$o" != *createContainer* && "$o" != *startContainer* && "$o" != *process* && "$o" != *poststart* ]]
}

@test "a failing poststart hook fails start and stops the container; the hooks after it do not run (runtime spec 1.3, runc)" {
  local b=$BATS_TEST_TMPDIR/b
  hooks_bundle "$b"
  # startContainer runs in the init after start has read the exec fifo, so
  # it races with the host's poststart hooks (runc's order too): the failing
  # hook waits (up to 20 s) for its line, or the kill that follows the
  # failure could come first and the order below would be a coin toss.
  update_config "$b" '.hooks.poststart = [{path: "/bin/sh", args: ["sh", "-c", "i=0; while ! grep -qx startContainer \"$1\" && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done; echo poststart-broke >&2; exit 4", "sh", ($log + "/order")]}] + .hooks.poststart' --arg log "$b/log"
  run maka_io create -b "$b" hk-post
  [ "$status" -eq 0 ]
  run --separate-stderr maka start hk-post
  echo "$stderr"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"error running poststart hook #0: exit status 4"* ]]
  [[ "$stderr" == *poststart-broke* ]]
  [ "$(maka state hk-post | jq -r .status)" = stopped ]
  # (the process may or may not have written its line before it was killed)
  [[ "$(order "$b")" == "prestart createRuntime createContainer startContainer "* ]]
  [[ "$(order "$b")" != *poststart* ]]
  run maka delete hk-post
  [ "$status" -eq 0 ]
  assert_nothing_left hk-post
}

@test "a failing poststop hook is a warning: delete succeeds, the poststop hooks after it run, nothing left (runtime spec step 13; runtime-tools poststop_fail)" {
  local b=$BATS_TEST_TMPDIR/b
  hooks_bundle "$b"
  update_config "$b" '.hooks.poststop = [{path: "/bin/sh", args: ["sh", "-c", "echo poststop-broke >&2; exit 5"]}] + .hooks.poststop'
  run maka_io run -d -b "$b" hk-stop
  [ "$status" -eq 0 ]
  run --separate-stderr maka delete --force hk-stop
  echo "$stderr"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"error running poststop hook #0: exit status 5"* ]]
  [[ "$(order "$b")" == *" poststop " ]]
  [ "$(jq -r .status "$b/log/poststop.json")" = stopped ]
  assert_nothing_left hk-stop
}

@test "a failing poststart hook under run -d and a foreground run: run fails with the hook's error, the container is removed, nothing left" {
  local b=$BATS_TEST_TMPDIR/b
  hooks_bundle "$b"
  update_config "$b" '.hooks.poststart = [{path: "/bin/true", args: ["true"]}, {path: "/bin/false", args: ["false"]}]'
  run maka_io run -d -b "$b" hk-post2
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error running poststart hook #1: exit status 1"* ]]
  assert_nothing_left hk-post2
  run maka_io run -b "$b" hk-post3
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"error running poststart hook #1: exit status 1"* ]]
  assert_nothing_left hk-post3
}

@test "a hook the policy does not list (hooks: true, no hookPaths) is refused at create, naming hooks.<kind>[i].path and the hookPaths line; it never runs; nothing left" {
  local b=$BATS_TEST_TMPDIR/b
  hooks_bundle "$b"
  # The test policy as it was: hooks: true (baseline's), no hookPaths.
  export MAKA_POLICY=$MAKA_REPO/tests/integration/fixtures/policy-baseline.json
  run maka_io create -b "$b" hk-unlisted
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *BOUNDARY_REJECTED* ]]
  local kind
  for kind in prestart createRuntime createContainer poststart poststop; do
    [[ "$output" == *"hooks.$kind[0].path: the hook $b/log/hook.sh is not one profile baseline lists in hookPaths"*"(policy: \"hookPaths\": [..., \"$b/log/hook.sh\"])"* ]]
  done
  # startContainer runs inside the sandbox: hooks: true allows it.
  [[ "$output" != *"hooks.startContainer"* ]]
  [ ! -e "$b/log/order" ]
  assert_nothing_left hk-unlisted
}

@test "a listed hook that others could swap (a directory anyone may write) is refused at create, naming the hook and why; nothing left" {
  local b=$BATS_TEST_TMPDIR/b open=$BATS_TEST_TMPDIR/open
  hooks_bundle "$b"
  mkdir -m 0777 "$open"
  chmod 0777 "$open"
  cp "$b/log/hook.sh" "$open/hook.sh"
  update_config "$b" '.hooks = {createRuntime: [{path: $h, args: ["hook.sh", "createRuntime", $log]}]}' --arg h "$open/hook.sh" --arg log "$b/log"
  jq --arg h "$open/hook.sh" '.hookPaths += [$h]' "$MAKA_POLICY" > "$b/policy2.json"
  MAKA_POLICY=$b/policy2.json run maka_io create -b "$b" hk-open
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"hooks.createRuntime[0].path: $open/hook.sh: the directory $open is writable by others (mode 777): its entries could be swapped"* ]]
  [ ! -e "$b/log/order" ]
  assert_nothing_left hk-open
}
