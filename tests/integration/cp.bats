#!/usr/bin/env bats
# maka cp (issue 13, items 4 and 7): one regular file into or out of a
# running sandbox under restricted (its own user namespace, read-only root,
# tmpfs at /tmp and /maka/work), never following a link the program inside
# planted, only into writable mounts, capped (8 MiB by default), leaving
# nothing behind when refused. Checked from inside (exec) and from the host
# (checksums of host files and of the sandbox's root).

load helpers

# One sandbox ("cpbox") serves every test: each container op costs seconds
# under emulation. Its lifetime is raised above restricted's 180 s default
# so that it outlives the file.
setup_file() {
  maka_setup_file
  echo '{"profile": "restricted"}' > "$BATS_FILE_TMPDIR/restricted.json"
  # A host file the sandbox's links point at: never read nor written by cp.
  mkdir -p /tmp/maka-cp-host
  echo "host secret" > /tmp/maka-cp-host/secret
  chmod 0600 /tmp/maka-cp-host/secret
  make_bundle "$BATS_FILE_TMPDIR/b" sleep 100000
  update_config "$BATS_FILE_TMPDIR/b" '.annotations["org.maka.timeout"] = "1200"'
  maka_io --policy "$BATS_FILE_TMPDIR/restricted.json" run -d --bundle "$BATS_FILE_TMPDIR/b" cpbox
  wait_for_status cpbox running
}

teardown_file() {
  maka delete --force cpbox >/dev/null 2>&1 || true
  rm -rf /tmp/maka-cp-host
  maka_teardown_file
}

restricted() { "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" --policy "$BATS_FILE_TMPDIR/restricted.json" "$@"; }

# host_sums: checksums of the host files a planted link aims at.
host_sums() {
  sha256sum /tmp/maka-cp-host/secret /etc/passwd
  [ ! -e /etc/shadow ] || sha256sum /etc/shadow
}

# root_sum: one checksum over the sandbox's root as the host holds it.
root_sum() {
  (cd "$MAKA_ROOTFS" && find . -xdev -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
}

@test "cp copies into /maka/work and /tmp, owned by the sandbox's root, and back out" {
  printf 'line one\nline two\n' > "$BATS_TEST_TMPDIR/in"
  chmod 0640 "$BATS_TEST_TMPDIR/in"
  run restricted cp "$BATS_TEST_TMPDIR/in" cpbox:/maka/work/in
  [ "$status" -eq 0 ]
  [ "$output" = "" ]
  # A directory as destination receives the source's base name.
  run restricted cp "$BATS_TEST_TMPDIR/in" cpbox:/tmp
  [ "$status" -eq 0 ]
  # From stdin, to a relative path (under /maka/work).
  run bash -c "echo piped | \"\$MAKA_BINARY\" --root \"\$MAKA_ROOT\" --state-dir \"\$MAKA_STATE_DIR\" cp - cpbox:rel"
  [ "$status" -eq 0 ]

  run restricted exec cpbox sh -c 'cat /maka/work/in /tmp/in /maka/work/rel; stat -c "%u:%g %a" /maka/work/in /tmp/in /maka/work/rel; id -u'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "line one" ]
  [ "${lines[1]}" = "line two" ]
  [ "${lines[2]}" = "line one" ]
  [ "${lines[3]}" = "line two" ]
  [ "${lines[4]}" = "piped" ]
  [ "${lines[5]}" = "0:0 640" ]
  [ "${lines[6]}" = "0:0 640" ]
  [ "${lines[7]}" = "0:0 644" ]
  [ "${lines[8]}" = "0" ]
  # From the host, the owner is the host id the sandbox's 0 maps to.
  local pid host
  pid=$(container_pid cpbox)
  host=$(maka state cpbox | jq -r '.uidMappings[0].hostID')
  [ "$host" -gt 0 ]
  [ "$(stat -c %u "/proc/$pid/root/maka/work/in")" = "$host" ]

  # Out: to a file, to a directory, to stdout; the mode comes along.
  run restricted cp cpbox:/maka/work/in "$BATS_TEST_TMPDIR/out"
  [ "$status" -eq 0 ]
  cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
  [ "$(stat -c %a "$BATS_TEST_TMPDIR/out")" = 640 ]
  mkdir "$BATS_TEST_TMPDIR/d"
  run restricted cp cpbox:rel "$BATS_TEST_TMPDIR/d"
  [ "$status" -eq 0 ]
  [ "$(cat "$BATS_TEST_TMPDIR/d/rel")" = piped ]
  run restricted cp cpbox:/tmp/in -
  [ "$status" -eq 0 ]
  [ "$output" = "$(cat "$BATS_TEST_TMPDIR/in")" ]
  # Nothing but the files: no temporary file on either side.
  [ -z "$(find "$BATS_TEST_TMPDIR" -name '.maka-cp-*')" ]
  [ -z "$(find "/proc/$pid/root/tmp" "/proc/$pid/root/maka/work" -name '.maka-cp-*')" ]
}

@test "cp never follows a symbolic link planted in the sandbox, in either direction" {
  local before rootbefore
  before=$(host_sums)
  run restricted exec cpbox sh -c 'ln -s /etc/shadow /tmp/x && ln -s / /tmp/d && ln -s /tmp/maka-cp-host/secret /tmp/hs &&
    ln -s ../../tmp/maka-cp-host /maka/work/up && ln -s /tmp /maka/work/tdir && echo planted'
  [ "$status" -eq 0 ]
  [ "$output" = planted ]

  # Out: a link as the last component, as a middle one, relative or absolute.
  local p
  for p in /tmp/x /tmp/d/etc/passwd /tmp/d/tmp/maka-cp-host/secret /tmp/hs up/secret tdir/x; do
    run restricted cp "cpbox:$p" "$BATS_TEST_TMPDIR/got"
    [ "$status" -ne 0 ]
    [[ "$output" == *"symbolic link"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/got" ]
    run restricted cp "cpbox:$p" -
    [ "$status" -ne 0 ]
    [[ "$output" != *"host secret"* ]]
    [[ "$output" != *"root:"* ]]
  done

  # In through a middle link: refused.
  echo pwned > "$BATS_TEST_TMPDIR/p"
  for p in /tmp/d/etc/passwd /tmp/d/tmp/maka-cp-host/secret up/secret tdir/y; do
    run restricted cp "$BATS_TEST_TMPDIR/p" "cpbox:$p"
    [ "$status" -ne 0 ]
    [[ "$output" == *"symbolic link"* ]]
  done
  # In onto a link: the link is replaced by the file, its target untouched.
  run restricted cp "$BATS_TEST_TMPDIR/p" cpbox:/tmp/x
  [ "$status" -eq 0 ]
  run restricted cp "$BATS_TEST_TMPDIR/p" cpbox:/tmp/hs
  [ "$status" -eq 0 ]
  run restricted exec cpbox sh -c 'for f in /tmp/x /tmp/hs; do [ -f $f ] && [ ! -L $f ] && cat $f; done; [ ! -e /tmp/y ] && echo no-y'
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf 'pwned\npwned\nno-y')" ]
  [ "$(host_sums)" = "$before" ]
}

@test "cp refuses to write to the read-only root, naming the path; the root is unchanged" {
  local before
  before=$(root_sum)
  echo x > "$BATS_TEST_TMPDIR/x"
  run restricted cp "$BATS_TEST_TMPDIR/x" cpbox:/etc/x
  [ "$status" -ne 0 ]
  [[ "$output" == *"/etc/x"*"read-only"* ]]
  run restricted cp "$BATS_TEST_TMPDIR/x" cpbox:/etc/passwd
  [ "$status" -ne 0 ]
  [[ "$output" == *"/etc/passwd"*"read-only"* ]]
  run restricted exec cpbox sh -c '[ ! -e /etc/x ] && ls -a /etc /bin | grep -c "^\.maka-cp-" || true'
  [ "$output" = 0 ]
  [ "$(root_sum)" = "$before" ]
}

@test "cp over the cap fails in both directions, explicitly, leaving no partial file" {
  local pid
  pid=$(container_pid cpbox)
  head -c 2097152 /dev/zero > "$BATS_TEST_TMPDIR/big"
  # In: a file over --limit (refused before the sandbox is touched), and a
  # stream over --limit and over the 8 MiB default (refused while copying).
  run restricted cp --limit 1MiB "$BATS_TEST_TMPDIR/big" cpbox:/tmp/big
  [ "$status" -ne 0 ]
  [[ "$output" == *"transfer too large"*"1048576"* ]]
  run bash -c "head -c 2097152 /dev/zero | \"\$MAKA_BINARY\" --root \"\$MAKA_ROOT\" --state-dir \"\$MAKA_STATE_DIR\" cp --limit 1MiB - cpbox:/tmp/big2"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/tmp/big2: transfer too large"* ]]
  run bash -c "head -c 9437184 /dev/zero | \"\$MAKA_BINARY\" --root \"\$MAKA_ROOT\" --state-dir \"\$MAKA_STATE_DIR\" cp - cpbox:/maka/work/big9"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/maka/work/big9: transfer too large"*"8388608"* ]]
  # Exactly the limit passes.
  head -c 1048576 /dev/zero > "$BATS_TEST_TMPDIR/mib"
  run restricted cp --limit 1MiB "$BATS_TEST_TMPDIR/mib" cpbox:/tmp/mib
  [ "$status" -eq 0 ]

  # Out: a sandbox file over --limit, to a file and to stdout.
  run restricted exec cpbox sh -c 'head -c 2097152 /dev/zero > /tmp/bigout && echo made'
  [ "$output" = made ]
  run restricted cp --limit 1MiB cpbox:/tmp/bigout "$BATS_TEST_TMPDIR/o"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/tmp/bigout: transfer too large"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/o" ]
  run bash -c "\"\$MAKA_BINARY\" --root \"\$MAKA_ROOT\" --state-dir \"\$MAKA_STATE_DIR\" cp --limit 1MiB cpbox:/tmp/bigout - 2>/dev/null | wc -c"
  [ "$output" = 0 ]
  [ -z "$(find "$BATS_TEST_TMPDIR" -name '.maka-cp-*')" ]

  # Nothing left inside (seen from inside): no destination, no temporary.
  run restricted exec cpbox sh -c 'ls -a /tmp /maka/work'
  [ "$status" -eq 0 ]
  [[ "$output" != *big2* ]]
  [[ "$output" != *big9* ]]
  [[ "$output" != *.maka-cp-* ]]
  [[ "$output" == *mib* ]]
  [ ! -e "/proc/$pid/root/tmp/big" ]
}

@test "cp does not hang on a FIFO in the sandbox, and replaces one it copies onto" {
  run restricted exec cpbox sh -c 'mkfifo /tmp/fifo && echo made'
  [ "$output" = made ]
  run timeout 30 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" cp cpbox:/tmp/fifo "$BATS_TEST_TMPDIR/f"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [[ "$output" == *"/tmp/fifo: a FIFO, not copied"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/f" ]
  echo data > "$BATS_TEST_TMPDIR/d"
  run timeout 30 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" cp "$BATS_TEST_TMPDIR/d" cpbox:/tmp/fifo
  [ "$status" -eq 0 ]
  run restricted exec cpbox sh -c '[ -f /tmp/fifo ] && cat /tmp/fifo'
  [ "$output" = data ]
}

@test "cp's bad forms fail clearly and change nothing" {
  run restricted cp a b
  [ "$status" -ne 0 ]
  [[ "$output" == *'neither "a" nor "b" is ID:PATH'* ]]
  run restricted cp cpbox:/tmp/a cpbox:/tmp/b
  [ "$status" -ne 0 ]
  [[ "$output" == *"both name a container"* ]]
  run restricted cp only-one
  [ "$status" -ne 0 ]
  [[ "$output" == *"cp: exactly 2 arguments expected, 1 given"* ]]
  echo x > "$BATS_TEST_TMPDIR/x"
  run restricted cp "$BATS_TEST_TMPDIR/x" nosuch:/tmp/x
  [ "$status" -ne 0 ]
  [[ "$output" == *"container nosuch does not exist"* ]]
  run restricted cp nosuch:/tmp/x "$BATS_TEST_TMPDIR/y"
  [ "$status" -ne 0 ]
  [[ "$output" == *"container nosuch does not exist"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/y" ]
  run restricted cp "$BATS_TEST_TMPDIR/x" cpbox:
  [ "$status" -ne 0 ]
  [[ "$output" == *"no path after"* ]]
  run restricted cp --limit lots "$BATS_TEST_TMPDIR/x" cpbox:/tmp/x
  [ "$status" -ne 0 ]
  [[ "$output" == *'--limit: "lots"'* ]]
  run restricted cp "$BATS_TEST_TMPDIR/missing" cpbox:/tmp/x
  [ "$status" -ne 0 ]
  [[ "$output" == *"source"*"missing"*"no such file"* ]]
  run restricted cp "$BATS_TEST_TMPDIR" cpbox:/tmp/x
  [ "$status" -ne 0 ]
  [[ "$output" == *"not a regular file"* ]]
  run restricted cp cpbox:/tmp/missing "$BATS_TEST_TMPDIR/y"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/tmp/missing: no such file"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/y" ]
  run restricted cp cpbox:/tmp "$BATS_TEST_TMPDIR/y"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/tmp: a directory, not copied"* ]]
  run restricted exec cpbox sh -c '[ ! -e /tmp/x ] && echo clean'
  [ "$output" = clean ]
}
