#!/usr/bin/env bats
# maka cp (issue 13, items 4 and 7): a regular file or a directory into or
# out of a running sandbox under restricted (its own user namespace, read-only root,
# tmpfs at /tmp and /maka/work), never following a link the program inside
# planted, only into writable mounts, capped (8 MiB by default), leaving
# nothing behind when refused. Checked from inside (exec: contents, owners
# as the sandbox sees them) and from the host (the sandbox's tree through
# /proc/PID/root, which costs no exec; checksums of host files and of the
# sandbox's root).

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
  update_config "$BATS_FILE_TMPDIR/b" '.annotations["org.maka.timeout"] = "3600"'
  maka_io --policy "$BATS_FILE_TMPDIR/restricted.json" run -d --bundle "$BATS_FILE_TMPDIR/b" cpbox
  wait_for_status cpbox running
  maka state cpbox > "$BATS_FILE_TMPDIR/state.json"
  # What the program inside plants, once (each exec costs seconds under
  # emulation): links to host paths (last and middle components, absolute
  # and relative), a FIFO, a file over 1 MiB and one to copy out, and a
  # directory to copy out holding links to host paths and a FIFO.
  maka exec cpbox sh -c 'ln -s /etc/shadow /tmp/x && ln -s / /tmp/d && ln -s /tmp/maka-cp-host/secret /tmp/hs &&
    ln -s ../../tmp/maka-cp-host /maka/work/up && mkfifo /tmp/fifo &&
    head -c 2097152 /dev/zero > /tmp/bigout && printf "from inside\n" > /maka/work/out && chmod 0604 /maka/work/out &&
    mkdir -p /maka/work/dir/sub && printf "in dir\n" > /maka/work/dir/a && printf b > /maka/work/dir/sub/b && chmod 0750 /maka/work/dir/sub &&
    ln -s /tmp/maka-cp-host/secret /maka/work/dir/hs && ln -s /tmp/maka-cp-host /maka/work/dir/hd &&
    ln -s ../../../../tmp/maka-cp-host/secret /maka/work/dir/sub/rel && ln -s /proc/self/root /maka/work/dir/pr && mkfifo /maka/work/dir/fifo'
}

teardown_file() {
  maka delete --force cpbox >/dev/null 2>&1 || true
  maka delete --force fifobox >/dev/null 2>&1 || true
  rm -rf "$(dirname "$MAKA_ROOTFS")/fiforoot"
  rm -rf /tmp/maka-cp-host
  maka_teardown_file
}

# pid: the sandbox's init (from the host, /proc/PID/root/... is the
# sandbox's tree: what it holds is checked there without an exec).
pid() { jq -r .pid "$BATS_FILE_TMPDIR/state.json"; }

# maka_sh CMD: a shell command line that runs maka with the file's state
# directories (for pipes).
maka_sh() { bash -c "maka() { \"\$MAKA_BINARY\" --root \"\$MAKA_ROOT\" --state-dir \"\$MAKA_STATE_DIR\" \"\$@\"; }; $1"; }

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
  run maka_sh 'echo piped | maka cp - cpbox:rel'
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
  local host
  host=$(jq -r '.uidMappings[0].hostID' "$BATS_FILE_TMPDIR/state.json")
  [ "$host" -gt 0 ]
  [ "$(stat -c %u:%g "/proc/$(pid)/root/maka/work/in")" = "$host:$host" ]

  # Out: to a directory (the mode comes along), to stdout.
  run restricted cp cpbox:out "$BATS_TEST_TMPDIR"
  [ "$status" -eq 0 ]
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = "from inside" ]
  [ "$(stat -c %a "$BATS_TEST_TMPDIR/out")" = 604 ]
  run restricted cp cpbox:/tmp/in -
  [ "$status" -eq 0 ]
  [ "$output" = "$(cat "$BATS_TEST_TMPDIR/in")" ]
  # No temporary file on either side.
  [ -z "$(find "$BATS_TEST_TMPDIR" "/proc/$(pid)/root/tmp" "/proc/$(pid)/root/maka/work" -name '.maka-cp-*')" ]
}

@test "cp never follows a symbolic link planted in the sandbox, in either direction" {
  local before
  before=$(host_sums)
  # Out: a link to /etc/shadow as the last component; "/" as a middle one.
  run restricted cp cpbox:/tmp/x "$BATS_TEST_TMPDIR/got"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/tmp/x: a component is a symbolic link"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/got" ]
  run restricted cp cpbox:/tmp/d/tmp/maka-cp-host/secret -
  [ "$status" -ne 0 ]
  [[ "$output" == *"symbolic link"* ]]
  [[ "$output" != *"host secret"* ]]
  # In: through a relative link climbing out (middle), refused; onto a
  # link to a host file (last), the link is replaced, its target untouched.
  echo pwned > "$BATS_TEST_TMPDIR/p"
  run restricted cp "$BATS_TEST_TMPDIR/p" cpbox:up/secret
  [ "$status" -ne 0 ]
  [[ "$output" == *"/maka/work/up/secret: a component is a symbolic link"* ]]
  run restricted cp "$BATS_TEST_TMPDIR/p" cpbox:/tmp/hs
  [ "$status" -eq 0 ]
  local root=/proc/$(pid)/root
  [ -f "$root/tmp/hs" ] && [ ! -L "$root/tmp/hs" ]
  [ "$(cat "$root/tmp/hs")" = pwned ]
  [ -L "$root/tmp/x" ] && [ -L "$root/maka/work/up" ]
  [ "$(host_sums)" = "$before" ]
}

@test "cp refuses to write to the read-only root, naming the path; the root is unchanged" {
  local before
  before=$(root_sum)
  echo x > "$BATS_TEST_TMPDIR/x"
  run restricted cp "$BATS_TEST_TMPDIR/x" cpbox:/etc/x
  [ "$status" -ne 0 ]
  [[ "$output" == *"/etc/x: /etc is on a read-only mount"* ]]
  [ ! -e "/proc/$(pid)/root/etc/x" ]
  [ -z "$(find "/proc/$(pid)/root/etc" -maxdepth 1 -name '.maka-cp-*')" ]
  [ "$(root_sum)" = "$before" ]
}

@test "cp over the cap fails in both directions, explicitly, leaving no partial file" {
  local root=/proc/$(pid)/root
  # In: a file over --limit (refused before the sandbox is touched), and a
  # stream over the 8 MiB default (refused while copying).
  head -c 2097152 /dev/zero > "$BATS_TEST_TMPDIR/big"
  run restricted cp --limit 1MiB "$BATS_TEST_TMPDIR/big" cpbox:/tmp/big
  [ "$status" -ne 0 ]
  [[ "$output" == *"transfer too large"*"over the limit of 1048576 bytes"* ]]
  run maka_sh 'head -c 9437184 /dev/zero | maka cp - cpbox:/maka/work/big9'
  [ "$status" -ne 0 ]
  [[ "$output" == *"/maka/work/big9: transfer too large"*"over the limit of 8388608 bytes"* ]]
  [ ! -e "$root/tmp/big" ] && [ ! -e "$root/maka/work/big9" ]
  [ -z "$(find "$root/tmp" "$root/maka/work" -name '.maka-cp-*')" ]
  # Out: a 2 MiB file of the sandbox's over --limit, to a file and to stdout.
  run restricted cp --limit 1MiB cpbox:/tmp/bigout "$BATS_TEST_TMPDIR/o"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/tmp/bigout: transfer too large"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/o" ]
  [ -z "$(find "$BATS_TEST_TMPDIR" -name '.maka-cp-*')" ]
  run maka_sh 'maka cp --limit 1MiB cpbox:/tmp/bigout - 2>/dev/null | wc -c'
  [ "$output" = 0 ]
}

@test "cp does not hang on a FIFO in the sandbox, and replaces one it copies onto" {
  run timeout 60 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" cp cpbox:/tmp/fifo "$BATS_TEST_TMPDIR/f"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
  [[ "$output" == *"/tmp/fifo: a FIFO, not copied"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/f" ]
  echo data > "$BATS_TEST_TMPDIR/d"
  run timeout 60 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" cp "$BATS_TEST_TMPDIR/d" cpbox:/tmp/fifo
  [ "$status" -eq 0 ]
  [ -f "/proc/$(pid)/root/tmp/fifo" ]
  [ "$(cat "/proc/$(pid)/root/tmp/fifo")" = data ]
}

@test "cp's bad forms fail clearly and change nothing" {
  run restricted cp a b
  [ "$status" -ne 0 ]
  [[ "$output" == *'neither "a" nor "b" is ID:PATH'* ]]
  run restricted cp only-one
  [ "$status" -ne 0 ]
  [[ "$output" == *"cp: exactly 2 arguments expected, 1 given"* ]]
  echo x > "$BATS_TEST_TMPDIR/x"
  run restricted cp "$BATS_TEST_TMPDIR/x" nosuch:/tmp/badform
  [ "$status" -ne 0 ]
  [[ "$output" == *"container nosuch does not exist"* ]]
  run restricted cp --limit lots "$BATS_TEST_TMPDIR/x" cpbox:/tmp/badform
  [ "$status" -ne 0 ]
  [[ "$output" == *'--limit: "lots"'* ]]
  run restricted cp cpbox:/tmp/missing "$BATS_TEST_TMPDIR/y"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/tmp/missing: no such file"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/y" ]
  [ ! -e "/proc/$(pid)/root/tmp/badform" ]
}

@test "cp copies a directory in and out as docker cp; links and FIFOs inside are skipped, reported, never followed" {
  local root=/proc/$(pid)/root before
  before=$(host_sums)
  # In: a host tree (modes set, a link to a host file inside).
  local tree=$BATS_TEST_TMPDIR/tree
  mkdir -p "$tree/sub/deep"
  printf 'alpha\n' > "$tree/a"
  printf 'gamma\n' > "$tree/sub/deep/c"
  chmod 0640 "$tree/a"
  chmod 0700 "$tree/sub/deep"
  chmod 0750 "$tree/sub"
  ln -s /tmp/maka-cp-host/secret "$tree/hostlink"
  run restricted cp "$tree" cpbox:/maka/work/
  [ "$status" -eq 0 ]
  [ "$output" = "cp: skipped $tree/hostlink: a symbolic link, not followed" ]
  [ "$(cat "$root/maka/work/tree/sub/deep/c")" = gamma ]
  [ "$(stat -c %a "$root/maka/work/tree/a" "$root/maka/work/tree/sub" "$root/maka/work/tree/sub/deep")" = "$(printf '640\n750\n700')" ]
  [ ! -e "$root/maka/work/tree/hostlink" ]
  [ ! -L "$root/maka/work/tree/hostlink" ]
  local host
  host=$(jq -r '.uidMappings[0].hostID' "$BATS_FILE_TMPDIR/state.json")
  [ "$(stat -c %u:%g "$root/maka/work/tree/sub/deep/c")" = "$host:$host" ]
  # A new name is the copy; an existing directory receives it under SRC's
  # base name.
  run restricted cp "$tree" cpbox:/tmp/t2
  [ "$status" -eq 0 ]
  [ -f "$root/tmp/t2/a" ]
  run restricted cp "$tree" cpbox:/tmp/t2
  [ "$status" -eq 0 ]
  [ -f "$root/tmp/t2/tree/a" ]
  # Into a planted link (to a host directory, to /etc/shadow, to "/"):
  # refused, nothing written through it.
  run restricted cp "$tree" cpbox:up/x
  [ "$status" -ne 0 ]
  [[ "$output" == *"/maka/work/up/x: a component is a symbolic link"* ]]
  run restricted cp "$tree" cpbox:/tmp/x
  [ "$status" -ne 0 ]
  [[ "$output" == *"/tmp/x: exists (a symbolic link, not replaced)"* ]]
  run restricted cp "$tree" cpbox:/tmp/d/tmp/y
  [ "$status" -ne 0 ]
  [[ "$output" == *"symbolic link"* ]]
  [ ! -e /tmp/maka-cp-host/x ]
  [ ! -e "$root/tmp/y" ]

  # Out: the sandbox's directory; its links to host paths and its FIFO are
  # skipped (the copy does not block), one stderr line each.
  run timeout 60 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" cp cpbox:dir "$BATS_TEST_TMPDIR/out"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 5 ]
  [[ "$output" == *"cp: skipped /maka/work/dir/hs: a symbolic link, not followed"* ]]
  [[ "$output" == *"cp: skipped /maka/work/dir/hd: a symbolic link, not followed"* ]]
  [[ "$output" == *"cp: skipped /maka/work/dir/sub/rel: a symbolic link, not followed"* ]]
  [[ "$output" == *"cp: skipped /maka/work/dir/pr: a symbolic link, not followed"* ]]
  [[ "$output" == *"cp: skipped /maka/work/dir/fifo: a FIFO, not copied"* ]]
  [ "$(cat "$BATS_TEST_TMPDIR/out/a")" = "in dir" ]
  [ "$(cat "$BATS_TEST_TMPDIR/out/sub/b")" = b ]
  [ "$(stat -c %a "$BATS_TEST_TMPDIR/out/sub")" = 750 ]
  [ "$(cd "$BATS_TEST_TMPDIR/out" && find . | sort | tr '\n' ' ')" = ". ./a ./sub ./sub/b " ]
  # Into an existing host directory: under the base name.
  run restricted cp cpbox:/maka/work/dir "$BATS_TEST_TMPDIR/out"
  [ "$status" -eq 0 ]
  [ -f "$BATS_TEST_TMPDIR/out/dir/a" ]
  [ "$(host_sums)" = "$before" ]
  [ -z "$(find "$BATS_TEST_TMPDIR" "$root/tmp" "$root/maka/work" -name '.maka-cp-*')" ]
}

@test "cp of a directory: over the caps, onto a file, to stdout, fails naming the path and leaves nothing" {
  local root=/proc/$(pid)/root
  # Out over --limit (the files together): nothing created on the host.
  run restricted cp --limit 4 cpbox:/maka/work/dir "$BATS_TEST_TMPDIR/o"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/maka/work/dir: transfer too large"*"over the limit of 4 bytes"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/o" ]
  # In over --limit: nothing left in the sandbox.
  mkdir -p "$BATS_TEST_TMPDIR/t/s"
  printf 'abcdef' > "$BATS_TEST_TMPDIR/t/s/f"
  run restricted cp --limit 4 "$BATS_TEST_TMPDIR/t" cpbox:/tmp/t3
  [ "$status" -ne 0 ]
  [[ "$output" == *"$BATS_TEST_TMPDIR/t: transfer too large"* ]]
  [ ! -e "$root/tmp/t3" ]
  # Onto an existing host file: refused, the file unchanged.
  echo keep > "$BATS_TEST_TMPDIR/file"
  run restricted cp cpbox:/maka/work/dir "$BATS_TEST_TMPDIR/file"
  [ "$status" -ne 0 ]
  [[ "$output" == *"$BATS_TEST_TMPDIR/file: exists and is not a directory"* ]]
  [ "$(cat "$BATS_TEST_TMPDIR/file")" = keep ]
  run restricted cp cpbox:/maka/work/dir -
  [ "$status" -ne 0 ]
  [[ "$output" == *"/maka/work/dir: a directory, which cannot be written to stdout"* ]]
  # Into the read-only root: refused before anything is made.
  run restricted cp "$BATS_TEST_TMPDIR/t" cpbox:/etc/t
  [ "$status" -ne 0 ]
  [[ "$output" == *"/etc/t: /etc is on a read-only mount"* ]]
  [ -z "$(find "$BATS_TEST_TMPDIR" "$root/tmp" "$root/maka/work" "$root/etc" -maxdepth 1 -name '.maka-cp-*')" ]
}

# Issue 24, item 3: proc files are regular files of size 0, so a check of
# "regular file" and size alone let cp read /proc/kallsyms (real kernel
# addresses) and drain /proc/kmsg (the kernel log) as host root. Every
# open of a sandbox path checks the filesystem on the O_PATH descriptor
# first: a kernel filesystem is refused, naming the path and the reason,
# and nothing is written, not even a temporary file beside DEST.
@test "cp refuses the sandbox's kernel files (/proc/kallsyms, /proc/kmsg) in both directions and writes nothing" {
  local d=$BATS_TEST_TMPDIR/kern f
  mkdir -p "$d"
  for f in /proc/kallsyms /proc/kmsg; do
    run timeout 60 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" cp "cpbox:$f" "$d/out"
    echo "$f: $status $output"
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
    [[ "$output" == *"$f: on a kernel filesystem (proc), not copied"* ]]
    [ -z "$(ls -A "$d")" ]
    # Into DEST's directory under the base name, and to stdout: nothing.
    run timeout 60 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" cp "cpbox:$f" "$d/"
    [ "$status" -ne 0 ] && [ "$status" -ne 124 ]
    [ -z "$(ls -A "$d")" ]
    run maka_sh "timeout 60 \"\$MAKA_BINARY\" --root \"\$MAKA_ROOT\" --state-dir \"\$MAKA_STATE_DIR\" cp cpbox:$f - 2>/dev/null | wc -c"
    [ "$output" = 0 ]
  done
  # Into the sandbox's /proc: refused before anything is created there.
  echo x > "$BATS_TEST_TMPDIR/x"
  run restricted cp "$BATS_TEST_TMPDIR/x" cpbox:/proc/sys/x
  [ "$status" -ne 0 ]
  [[ "$output" == *"/proc/sys/x: /proc/sys is on a kernel filesystem (proc)"* ]]
  # A host source on a kernel filesystem is refused as well.
  run restricted cp /proc/self/status cpbox:/tmp/status
  [ "$status" -ne 0 ]
  [[ "$output" == *"/proc/self/status: on a kernel filesystem (proc), not copied"* ]]
  [ ! -e "/proc/$(pid)/root/tmp/status" ]
  [ -z "$(find "$BATS_TEST_TMPDIR" "/proc/$(pid)/root/tmp" -name '.maka-cp-*')" ]
}

# The HOME lookup at create and exec reads the root's /etc/passwd: a FIFO
# (or a device node) there must never be opened as host root. A writer
# blocked on the FIFO is the reader's witness: any open for reading
# releases it.
@test "create and exec never open a FIFO at the root's /etc/passwd (HOME lookup)" {
  local r
  r=$(dirname "$MAKA_ROOTFS")/fiforoot
  rm -rf "$r"
  cp -a "$MAKA_ROOTFS" "$r"
  rm "$r/etc/passwd"
  mkfifo -m 0644 "$r/etc/passwd"
  make_bundle "$BATS_TEST_TMPDIR/fb" sleep 1000
  update_config "$BATS_TEST_TMPDIR/fb" '.root.path = $r | .annotations["org.maka.timeout"] = "1200"' --arg r "$r"
  (exec 3>"$r/etc/passwd" && echo opened > "$BATS_TEST_TMPDIR/opened") </dev/null >/dev/null 2>&1 3>&- &
  local w=$! created=0 execd=0 home
  # create's output to a file: the container keeps its stdio open.
  timeout 120 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" --policy "$BATS_FILE_TMPDIR/restricted.json" \
    create --bundle "$BATS_TEST_TMPDIR/fb" fifobox </dev/null >"$BATS_TEST_TMPDIR/create.log" 2>&1 || created=$?
  cat "$BATS_TEST_TMPDIR/create.log"
  timeout 120 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" start fifobox </dev/null >/dev/null 2>&1 || true
  # exec looks HOME up again (for the exec's user).
  home=$(timeout 120 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" --policy "$BATS_FILE_TMPDIR/restricted.json" \
    exec fifobox sh -c 'echo "$HOME"' </dev/null 2>&1) || execd=$?
  local opened=no
  [ ! -e "$BATS_TEST_TMPDIR/opened" ] || opened=yes
  echo "create: $created exec: $execd HOME: $home FIFO opened: $opened"
  kill "$w" 2>/dev/null || true
  wait "$w" 2>/dev/null || true
  # fifobox and its root are removed by teardown_file (each op is slow
  # under emulation).
  [ "$opened" = no ]
  [ "$created" -eq 0 ]
  [ "$execd" -eq 0 ]
  [ "$home" = / ]
}
