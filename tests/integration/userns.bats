#!/usr/bin/env bats
# Container root is not host root (issue 12): under restricted every
# sandbox has its own user namespace, whose ids 0..65535 are a block of host
# ids leased from the policy's pool, recorded before the cgroup exists,
# given back only once no process of the sandbox lives. Checked from inside
# (uid_map, writes that must fail) and from the host (the processes' uids,
# the lease files, a host file's checksum).

load helpers

# The soak test's 50 creates take minutes under emulation: a wider hang
# detector (read by bats after this file is sourced).
BATS_TEST_TIMEOUT=$(( ${BATS_TEST_TIMEOUT:-240} > 900 ? ${BATS_TEST_TIMEOUT:-240} : 900 ))

POOL=1073741824   # DefaultIDPool.Start
BLOCK=65536

setup_file() {
  maka_setup_file
  echo '{"profile": "restricted"}' > "$BATS_FILE_TMPDIR/restricted.json"
  # A host file the baseline sandbox binds read-write: owned by the host's
  # root, it stays unwritable to the sandbox's root.
  mkdir -p /tmp/maka-userns
  echo "host secret" > /tmp/maka-userns/file
  chmod 0644 /tmp/maka-userns/file
}

teardown_file() {
  rm -rf /tmp/maka-userns
  maka_teardown_file
}

teardown() { teardown_all_containers; }

restricted() { "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" --policy "$BATS_FILE_TMPDIR/restricted.json" "$@"; }

# leases: the lease files of the id pool, one per line ("<first id> <id>");
# each file is named <first id>-<size> (the range it holds).
leases() {
  local f n
  for f in "$MAKA_STATE_DIR"/ids/*; do
    [ -e "$f" ] || continue
    n=$(basename "$f")
    echo "${n%-*} $(jq -r .id "$f")"
  done
}

@test "restricted: the sandbox's root is a leased block of host ids, shown by boundary and state, seen from inside and from the host" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 300
  # Before create, boundary says where the ids will come from.
  run restricted boundary --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 0 ]
  # (the row wraps at 80 columns: joined again)
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"users user namespace: ids 0..65535 = a free block of host ids leased at create from the pool $POOL.."* ]]
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"(read-only, idmapped: its root's files are the sandbox's root's)"* ]]
  run restricted boundary --format json --bundle "$BATS_TEST_TMPDIR/b"
  [ "$(jq -c .users <<<"$output")" = "{\"namespace\":true,\"source\":\"pool\",\"pool\":{\"start\":$POOL,\"size\":$BLOCK,\"count\":1024}}" ]

  run maka_io --policy "$BATS_FILE_TMPDIR/restricted.json" run -d -b "$BATS_TEST_TMPDIR/b" --pid-file "$BATS_TEST_TMPDIR/pid" u1
  [ "$status" -eq 0 ]
  local pid start
  pid=$(cat "$BATS_TEST_TMPDIR/pid")
  run restricted state u1
  [ "$status" -eq 0 ]
  start=$(jq -r '.uidMappings[0].hostID' <<<"$output")
  [ "$(jq -c '.uidMappings' <<<"$output")" = "[{\"containerID\":0,\"hostID\":$start,\"size\":$BLOCK}]" ]
  [ "$(jq -c '.gidMappings' <<<"$output")" = "[{\"containerID\":0,\"hostID\":$start,\"size\":$BLOCK}]" ]
  [ "$start" -ge "$POOL" ] && [ $(( (start - POOL) % BLOCK )) -eq 0 ]
  # The lease names the sandbox; the record holds the mapping.
  [ "$(leases)" = "$start u1" ]
  [ "$(jq -r '.boundary.uidMappings[0].hostID' "$(find "$MAKA_STATE_DIR" -name u1.json)")" = "$start" ]

  # From the host: the sandbox's processes run as the block's first id.
  [ "$(stat -c %u "/proc/$pid")" = "$start" ]
  [ "$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")" = "$start $start $start $start" ]
  [ "$(awk '/^Gid:/ {print $2}' "/proc/$pid/status")" = "$start" ]

  # From inside: the same map; the host's root owns nothing it can use.
  run restricted exec u1 cat /proc/self/uid_map
  [ "$status" -eq 0 ]
  [ "$(echo $output)" = "0 $start $BLOCK" ]
  run restricted exec u1 sh -c 'id -u; stat -c %u /bin/sh; echo x > /proc/sys/kernel/core_pattern || echo REFUSED; echo 0 > /sys/kernel/mm/ksm/run || echo REFUSED; touch /pwn || echo REFUSED'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 0 ]
  [ "${lines[1]}" = 0 ]   # the root is idmapped: its files are the sandbox's root's
  # ... and still read-only: touch /pwn is refused below.
  [ "$(grep -c REFUSED <<<"$output")" -eq 3 ]
  [[ "$output" == *"Permission denied"* || "$output" == *"Read-only file system"* ]]
  # The bounded tmpfs mounts, /dev, /proc, mqueue and devpts work inside.
  run restricted exec u1 sh -c 'echo a > /tmp/a && echo b > /dev/shm/b && cat /tmp/a /dev/shm/b;
    df -k /tmp | awk "NR == 2 {print \$2}"; stat -c "%u %a" /tmp; head -1 /proc/self/status;
    test -c /dev/null && test -c /dev/pts/ptmx && mount | grep -c " /dev/mqueue type mqueue "'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = a ] && [ "${lines[1]}" = b ]
  [ "${lines[2]}" = 131072 ]          # 128 MiB, the default bound
  [ "${lines[3]}" = "0 1777" ]        # owned by the sandbox's root
  [[ "${lines[4]}" == "Name:"* ]]
  [ "${lines[5]}" = 1 ]
  # An exec'd process may not ask for a uid outside the block.
  run restricted exec --user 65536 u1 id
  [ "$status" -ne 0 ]
  [[ "$output" == *"process.user.uid: 65536 is not mapped in the sandbox's user namespace (container ids 0..65535)"* ]]

  run restricted delete --force u1
  [ "$status" -eq 0 ]
  # Given back once nothing of the sandbox lives.
  [ -z "$(leases)" ]
  [ ! -e "/proc/$pid" ]
}

@test "restricted: the root is one overlay over the read-only root; root.readonly false is a writable view whose writes land in the sandbox's bounded tmpfs and vanish with it; the sandbox's mountinfo names none of maka's host paths" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 300
  update_config "$BATS_TEST_TMPDIR/b" '.root.readonly = false | .linux.resources.memory.limit = 536870912'
  local sum_before
  sum_before=$(find "$MAKA_ROOTFS" -xdev -printf '%p %y %s %m %U %T@\n' | sort | sha256sum)
  run restricted boundary --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 0 ]
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"(read-only, seen writable: writes land in a tmpfs of 128 MiB, gone with the sandbox, idmapped: its root's files are the sandbox's root's)"* ]]
  run restricted boundary --format json --bundle "$BATS_TEST_TMPDIR/b"
  jq -e '.rootfs.readonly == true and .rootfs.writableView == true' <<<"$output"
  run maka_io --policy "$BATS_FILE_TMPDIR/restricted.json" run -d -b "$BATS_TEST_TMPDIR/b" uv
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  # The sandbox writes its root: new files, a changed one, a removed one.
  run restricted exec uv sh -c 'echo mine > /etc/new-file && echo changed >> /etc/hostname && rm /bin/true &&
    mkdir -p /opt/x && cat /etc/new-file && stat -c %u /etc/passwd && ! test -e /bin/true && echo WROTE'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = mine ]
  [ "${lines[1]}" = 0 ]    # idmapped: the root's files are the sandbox's root's
  [ "${lines[2]}" = WROTE ]
  # Its writes are bounded: the view holds at most the tmpfs limit.
  run restricted exec uv sh -c 'head -c 200000000 /dev/zero 2>/dev/null > /fill; echo "exit $?"; ls -l /fill | awk "{print \$5}"'
  echo "$output"
  [ "${lines[0]}" != "exit 0" ]
  [ "${lines[1]}" -le $((128 * 1048576)) ]
  # The mount table the sandbox reads names no host path of maka's (the
  # overlay's layers are given by descriptor).
  run restricted exec uv cat /proc/self/mountinfo
  [ "$status" -eq 0 ]
  [[ "$output" != *"$MAKA_STATE_DIR"* ]]
  [[ "$output" != *"/stage/"* ]]
  [[ "$output" != *"$MAKA_ROOT"* ]]
  [ "$(awk '$5 == "/" { for (i = 7; i < NF; i++) if ($i == "-") { print $(i + 1); break } }' <<<"$output")" = overlay ]
  # The trusted root was never written.
  [ "$(find "$MAKA_ROOTFS" -xdev -printf '%p %y %s %m %U %T@\n' | sort | sha256sum)" = "$sum_before" ]
  [ -e "$MAKA_ROOTFS/bin/true" ] && [ ! -e "$MAKA_ROOTFS/etc/new-file" ]
  run restricted delete --force uv
  [ "$status" -eq 0 ]
  assert_nothing_left uv
  # A read-only root is one overlay too, and stays read-only.
  update_config "$BATS_TEST_TMPDIR/b" '.root.readonly = true'
  run maka_io --policy "$BATS_FILE_TMPDIR/restricted.json" run -d -b "$BATS_TEST_TMPDIR/b" uv
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  # (and the first one's writes are gone)
  run restricted exec uv sh -c 'grep " / / " /proc/self/mountinfo | sed "s/.* - //" | cut -d" " -f1; test -e /etc/new-file && echo LEAKED;
    test -e /bin/true && echo INTACT; touch /etc/x 2>&1 || echo REFUSED'
  echo "$output"
  [ "${lines[0]}" = overlay ]
  [ "${lines[1]}" = INTACT ]
  [[ "$output" == *"Read-only file system"* ]]
  [ "${lines[-1]}" = REFUSED ]
  run restricted delete --force uv
  [ "$status" -eq 0 ]
  assert_nothing_left uv
  # The user namespace's holder lived only while the sandbox was created.
  local p
  for p in /proc/[0-9]*; do
    [ "$(tr -d '\0' < "$p/cmdline" 2>/dev/null)" != maka-userns ] || { echo "holder $p left"; false; }
  done
  [ "$(find "$MAKA_ROOTFS" -xdev -printf '%p %y %s %m %U %T@\n' | sort | sha256sum)" = "$sum_before" ]
  # A root with a mount below it: an overlay's layer would not show that
  # mount (but what it covers), so the root is assembled as before, the
  # mount shown; a writable view of it is refused, naming the field.
  local r=$BATS_TEST_TMPDIR/subroot
  cp -a "$MAKA_ROOTFS" "$r"
  mkdir -p "$r/opt" && echo covered > "$r/opt/f"
  mount -t tmpfs -o size=1m tmpfs "$r/opt"
  echo submount > "$r/opt/f"
  update_config "$BATS_TEST_TMPDIR/b" '.root.path = $r | .process.args = ["cat", "/opt/f"]' --arg r "$r"
  run maka_io --policy "$BATS_FILE_TMPDIR/restricted.json" run -b "$BATS_TEST_TMPDIR/b" uv-sub
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = submount ]
  update_config "$BATS_TEST_TMPDIR/b" '.root.readonly = false'
  run maka_io --policy "$BATS_FILE_TMPDIR/restricted.json" run -b "$BATS_TEST_TMPDIR/b" uv-sub
  echo "$output"
  umount "$r/opt"
  [ "$status" -ne 0 ]
  [[ "$output" == *"root.readonly: false asks for a writable view of $r, which has a mount below it"* ]]
  assert_nothing_left uv-sub
}

@test "without a user namespace (a baseline policy without writableRootfs): root.readonly false is a writable view too; the root is not written" {
  echo '{"profile": "baseline", "writableRootfs": false}' > "$BATS_TEST_TMPDIR/p.json"
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'echo mine > /etc/new-file && rm /bin/true && cat /etc/new-file; grep " / / " /proc/self/mountinfo | sed "s/.* - //" | cut -d" " -f1; cat /proc/self/uid_map'
  update_config "$BATS_TEST_TMPDIR/b" '.root.readonly = false'
  local sum_before
  sum_before=$(find "$MAKA_ROOTFS" -xdev -printf '%p %y %s %m %U %T@\n' | sort | sha256sum)
  run --separate-stderr maka --policy "$BATS_TEST_TMPDIR/p.json" boundary --bundle "$BATS_TEST_TMPDIR/b" --format json
  jq -e '.rootfs.readonly == true and .rootfs.writableView == true and .users.namespace != true' <<<"$output"
  run maka_io --policy "$BATS_TEST_TMPDIR/p.json" run -b "$BATS_TEST_TMPDIR/b" uv-plain
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = mine ]
  [ "${lines[1]}" = overlay ]
  [ "$(echo ${lines[2]})" = "0 0 4294967295" ]   # no user namespace
  [ "$(find "$MAKA_ROOTFS" -xdev -printf '%p %y %s %m %U %T@\n' | sort | sha256sum)" = "$sum_before" ]
  assert_nothing_left uv-plain
}

@test "config.json's own mappings: refused under restricted; under baseline a delegated block is applied; a host file bound read-only stays unwritten, read-write needs idmap" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'cat /proc/self/uid_map; cat /mnt/file; stat -c "owner %u" /mnt/file; echo pwned > /mnt/file || echo REFUSED; echo new > /mnt/new && echo WROTE; true'
  local sum
  sum=$(sha256sum /tmp/maka-userns/file)
  update_config "$BATS_TEST_TMPDIR/b" '.linux.namespaces += [{type: "user"}]
    | .linux.uidMappings = [{containerID: 0, hostID: 327680, size: 65536}]
    | .linux.gidMappings = [{containerID: 0, hostID: 327680, size: 65536}]
    | .mounts += [{destination: "/mnt", type: "bind", source: "/tmp/maka-userns", options: ["rbind", "ro"]}]'
  run restricted run -b "$BATS_TEST_TMPDIR/b" u2
  [ "$status" -ne 0 ]
  [[ "$output" == *"linux.uidMappings[0].hostID: host ids 327680..393215 are not in a range profile restricted delegates to engines (none)"* ]]
  assert_nothing_left u2

  # Baseline (the tests' policy, which may bind /tmp rw): Kubernetes'
  # hostUsers: false hands its own block. Read-only: readable, never written.
  run maka_io run -b "$BATS_TEST_TMPDIR/b" u2
  [ "$status" -eq 0 ]
  [ "$(echo ${lines[0]})" = "0 327680 65536" ]
  [ "${lines[1]}" = "host secret" ]
  [ "${lines[2]}" = "owner 65534" ]   # the host's root, unmapped
  [[ "$output" == *"Read-only file system"* ]]
  [ "$(grep -c REFUSED <<<"$output")" -eq 1 ]
  [[ "$output" != *WROTE* ]]
  [ "$(sha256sum /tmp/maka-userns/file)" = "$sum" ]
  [ ! -e /tmp/maka-userns/new ]
  [ -z "$(leases)" ]   # not from maka's pool: nothing leased
  assert_nothing_left u2

  # Read-write without idmap: its root could not write there; refused.
  update_config "$BATS_TEST_TMPDIR/b" '.mounts[-1].options = ["rbind", "rw"]'
  run maka run -b "$BATS_TEST_TMPDIR/b" u2
  [ "$status" -ne 0 ]
  [[ "$output" == *"].options: /tmp/maka-userns belongs to host uid 0, which the sandbox's user namespace does not map: its root could not write there. Add \"idmap\""* ]]
  assert_nothing_left u2
  # With idmap: mounted through the sandbox's mapping, what the host's
  # root owns is the sandbox root's.
  update_config "$BATS_TEST_TMPDIR/b" '.mounts[-1].options = ["rbind", "rw", "idmap"]'
  run maka_io run -b "$BATS_TEST_TMPDIR/b" u2
  [ "$status" -eq 0 ]
  [ "${lines[2]}" = "owner 0" ]
  [[ "$output" == *WROTE* ]]
  [ "$(stat -c %u /tmp/maka-userns/new)" = 0 ]
  rm -f /tmp/maka-userns/new
  echo "host secret" > /tmp/maka-userns/file
  assert_nothing_left u2

  # A mapping inside maka's pool, or onto the host's root, is refused.
  update_config "$BATS_TEST_TMPDIR/b" ".linux.uidMappings[0].hostID = $POOL"
  run maka run -b "$BATS_TEST_TMPDIR/b" u2
  [ "$status" -ne 0 ]
  [[ "$output" == *"linux.uidMappings[0].hostID: host ids $POOL..$((POOL + BLOCK - 1)) are in maka's id pool"* ]]
  update_config "$BATS_TEST_TMPDIR/b" '.linux.uidMappings[0].hostID = 0'
  run maka run -b "$BATS_TEST_TMPDIR/b" u2
  [ "$status" -ne 0 ]
  [[ "$output" == *"linux.uidMappings[0].hostID: 0 would make the sandbox's user the host's root"* ]]
  assert_nothing_left u2
}

# concurrent_creates N: N restricted creates at once each get their own
# block (the state of each shows it, the lease names it); deleting them
# gives every block back.
concurrent_creates() {
  local n=$1 i
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 300
  seq "$n" | xargs -P 10 -I{} "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" \
    --policy "$BATS_FILE_TMPDIR/restricted.json" create -b "$BATS_TEST_TMPDIR/b" c{} >"$BATS_TEST_TMPDIR/out" 2>&1 \
    || { cat "$BATS_TEST_TMPDIR/out"; false; }
  local held
  held=$(leases)   # one jq per lease: forks are slow under emulation
  [ "$(wc -l <<<"$held")" -eq "$n" ]
  [ "$(awk '{print $1}' <<<"$held" | sort -u | wc -l)" -eq "$n" ]
  for i in $(seq "$n"); do
    [ "$(restricted state "c$i" | jq -r '.uidMappings[0].hostID')" = "$(awk -v id="c$i" '$2 == id {print $1}' <<<"$held")" ]
  done
  seq "$n" | xargs -P 10 -I{} "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" delete --force c{}
  [ -z "$(leases)" ]
}

@test "6 concurrent creates each get their own block; deleting them gives every block back" {
  concurrent_creates 6
}

# Under emulation 50 creates take minutes: `make soak`.
# bats test_tags=soak
@test "50 concurrent creates each get their own block; deleting them gives every block back" {
  concurrent_creates 50
}

@test "leases of two policies whose pools are offset by half a block never overlap: the second gets the next block that meets no lease, or is refused" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 300
  # b's blocks start 32768 ids into a's first block.
  echo "{\"profile\": \"restricted\", \"idPool\": {\"start\": $POOL, \"count\": 1}}" > "$BATS_TEST_TMPDIR/a.json"
  echo "{\"profile\": \"restricted\", \"idPool\": {\"start\": $((POOL + BLOCK / 2)), \"count\": 2}}" > "$BATS_TEST_TMPDIR/b.json"
  run maka_io --policy "$BATS_TEST_TMPDIR/a.json" create -b "$BATS_TEST_TMPDIR/b" ua
  [ "$status" -eq 0 ]
  run maka_io --policy "$BATS_TEST_TMPDIR/b.json" create -b "$BATS_TEST_TMPDIR/b" ub
  [ "$status" -eq 0 ]
  [ "$(maka state ua | jq -r '.uidMappings[0].hostID')" = "$POOL" ]
  # b's block 0 ([POOL+32768, POOL+98304)) meets ua's: ub gets block 1.
  [ "$(maka state ub | jq -r '.uidMappings[0].hostID')" = $((POOL + BLOCK / 2 + BLOCK)) ]
  ls "$MAKA_STATE_DIR/ids" | sort > "$BATS_TEST_TMPDIR/names"
  diff "$BATS_TEST_TMPDIR/names" <(printf '%s\n' "$POOL-$BLOCK" "$((POOL + BLOCK / 2 + BLOCK))-$BLOCK" | sort)
  # Each of b's blocks now meets a lease: refused, nothing left behind.
  run maka_io --policy "$BATS_TEST_TMPDIR/b.json" create -b "$BATS_TEST_TMPDIR/b" uc
  [ "$status" -ne 0 ]
  [[ "$output" == *"meet a range leased from another pool"* ]]
  # (assert_nothing_left counts every waiting init: ua's and ub's)
  [ ! -e "$MAKA_ROOT/uc" ]
  [ -z "$(find "$MAKA_STATE_DIR" -name uc.json)" ]
  [ -z "$(find /sys/fs/cgroup -type d -name uc)" ]
  [ "$(leases | wc -l)" -eq 2 ]
}

@test "a crash after leasing and before the cgroup exists leaves a lease (and the root's overlay) that recover gives back" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 300
  for stage in create:ids-leased create:root-built create:record-published; do
    local rc=0
    MAKA_TEST_CRASH_AT=$stage "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" \
      --policy "$BATS_FILE_TMPDIR/restricted.json" create -b "$BATS_TEST_TMPDIR/b" u3 \
      </dev/null >"$BATS_TEST_TMPDIR/crash" 2>&1 3>&- || rc=$?
    [ "$rc" -eq 137 ] || { cat "$BATS_TEST_TMPDIR/crash"; false; }
    [ "$(leases | awk '{print $2}')" = u3 ]
    [ -z "$(find /sys/fs/cgroup -type d -name u3)" ]
    if [ "$stage" != create:ids-leased ]; then
      # the idmapped root's overlay, in the sandbox's stage
      [ -d "$(echo "$MAKA_STATE_DIR"/stage/*/u3)" ]
      [ -n "$(awk '$5 ~ /\/stage\/.*\/u3\/[0-9]+$/ { for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "overlay") print; break } }' /proc/self/mountinfo)" ]
    fi
    run maka recover
    [ "$status" -eq 0 ]
    [ -z "$(leases)" ]
    assert_nothing_left u3
  done
  # The block is free again: the next sandbox gets it.
  run maka_io --policy "$BATS_FILE_TMPDIR/restricted.json" run -d -b "$BATS_TEST_TMPDIR/b" u3
  [ "$status" -eq 0 ]
  [ "$(leases)" = "$POOL u3" ]
}
