#!/usr/bin/env bats
# Declared egress (issue 27, docs/egress.md): a sandbox under egress has
# loopback only, and reaches the hosts its contract names through maka's
# proxy, listening inside its namespace and served from outside. The guest
# gets a dummy interface with two TEST-NET addresses and servers on them
# (egresstool serve: HTTP :80, HTTPS :443, echo :7000), names for them in
# /etc/hosts, and from inside the sandbox every form that should pass
# passes and every way around the list fails, each proxy refusal a record.

load helpers

bats_require_minimum_version 1.5.0

EG_IF=maka-eg0
OK_ADDR=192.0.2.10
OTHER_ADDR=192.0.2.11
# What the sandbox declares (and the policy's ceiling allows): the name and,
# since TEST-NET is not a public address, the address it resolves to.
EG_LIST='["ok.test:80", "ok.test:443", "ok.test:7000", "192.0.2.10:80", "192.0.2.10:443", "192.0.2.10:7000", "loop.test:80", "ten.test:80"]'

setup_file() {
  maka_setup_file
  [ "$(id -u)" = 0 ] || { echo "egress.bats changes the guest's network: run it as root in the guest" >&2; return 1; }
  ip link add "$EG_IF" type dummy
  ip addr add "$OK_ADDR/32" dev "$EG_IF"
  ip addr add "$OTHER_ADDR/32" dev "$EG_IF"
  ip link set "$EG_IF" up
  cp /etc/hosts "$BATS_FILE_TMPDIR/hosts.orig"
  printf '%s\n' "$OK_ADDR ok.test" "$OTHER_ADDR other.test" "127.0.0.1 loop.test" "10.1.2.3 ten.test" >> /etc/hosts
  "$MAKA_FIXTURES/egresstool" serve "$OK_ADDR" "$OTHER_ADDR" > "$BATS_FILE_TMPDIR/serve.log" 2>&1 &
  echo $! > "$BATS_FILE_TMPDIR/serve.pid"
  install -m 755 "$MAKA_FIXTURES/egresstool" "$MAKA_ROOTFS/usr/bin/egresstool"
  jq -n --argjson l "$EG_LIST" '{profile: "restricted", egress: $l}' > "$BATS_FILE_TMPDIR/policy.json"
  jq -n --argjson l "$EG_LIST" '{profile: "restricted", egress: $l, onEgressRefusal: "kill"}' > "$BATS_FILE_TMPDIR/policy-kill.json"
  local i
  for i in $(seq 100); do
    { : < "/dev/tcp/$OK_ADDR/80" && : < "/dev/tcp/$OK_ADDR/443" && : < "/dev/tcp/$OTHER_ADDR/7000"; } 2>/dev/null && return 0
    sleep 0.2
  done
  cat "$BATS_FILE_TMPDIR/serve.log" >&2
  return 1
}

teardown_file() {
  maka_teardown_file
  [ -s "$BATS_FILE_TMPDIR/serve.pid" ] && kill "$(cat "$BATS_FILE_TMPDIR/serve.pid")" 2>/dev/null
  [ -s "$BATS_FILE_TMPDIR/hosts.orig" ] && cp "$BATS_FILE_TMPDIR/hosts.orig" /etc/hosts
  ip link del "$EG_IF" 2>/dev/null || true
}

teardown() { teardown_all_containers; }

# egress_bundle DIR ARGS...: a restricted bundle declaring EG_LIST.
egress_bundle() {
  local dir=$1; shift
  make_bundle "$dir" "$@"
  update_config "$dir" '.annotations["org.maka.egress"] = ($l | tojson)' --argjson l "$EG_LIST"
}

@test "egress: the listed hosts through CONNECT, HTTP and SOCKS5; every way around refused, each proxy refusal a record; counted per destination" {
  export MAKA_POLICY=$BATS_FILE_TMPDIR/policy.json
  # One run tries everything (each start costs seconds under emulation).
  cat > "$MAKA_ROOTFS/usr/bin/egress-tries" <<'S'
#!/bin/sh
P=127.0.0.1:3128
try() { echo "== $*"; egresstool "$@"; echo "rc=$?"; }
echo "env $HTTP_PROXY $https_proxy $ALL_PROXY $no_proxy"
try connect $P ok.test:7000
try tls $P ok.test:443 ok.test
try http $P http://ok.test/
try socks $P ok.test:80
try socks $P ok.test:7000
try connect $P 192.0.2.10:7000
try connect $P evil.test:7000
try connect $P ok.test:8080
try connect $P 192.0.2.11:7000
try http $P http://loop.test/
try http $P http://ten.test/
try tls $P ok.test:443 other.test
try http $P http://ok.test/ other.test
try socks $P evil.test:80
try direct 192.0.2.10:80
try direct 192.0.2.10:7000
try dns 192.0.2.10
try udp 192.0.2.10:9999
ip addr 2>/dev/null | grep -c 'inet ' | sed 's/^/inet addresses: /'
S
  chmod 755 "$MAKA_ROOTFS/usr/bin/egress-tries"
  egress_bundle "$BATS_TEST_TMPDIR/b" egress-tries
  run maka boundary --bundle "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 0 ]
  [[ "$output" == *"network       egress via 127.0.0.1:3128: ok.test:80 ok.test:443 ok.test:7000"* ]]
  run --separate-stderr maka run --keep --bundle "$BATS_TEST_TMPDIR/b" eg1
  echo "$output"; echo "stderr: $stderr"
  [ "$status" -eq 0 ]
  [[ "$output" == *"env http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1,::1"* ]]
  # result NAME TRY...: the rc line after the try's header.
  result() { printf '%s\n' "$output" | awk -v h="== $*" '$0 == h {f = 1; next} f && /^rc=/ {print; exit}'; }
  [ "$(result connect 127.0.0.1:3128 ok.test:7000)" = rc=0 ]
  [ "$(result tls 127.0.0.1:3128 ok.test:443 ok.test)" = rc=0 ]
  [ "$(result http 127.0.0.1:3128 http://ok.test/)" = rc=0 ]
  [ "$(result socks 127.0.0.1:3128 ok.test:80)" = rc=0 ]
  [ "$(result socks 127.0.0.1:3128 ok.test:7000)" = rc=0 ]
  [ "$(result connect 127.0.0.1:3128 192.0.2.10:7000)" = rc=0 ]
  [[ "$output" == *"hello from 192.0.2.10:443 (Host ok.test, TLS true)"* ]]
  [[ "$output" == *"hello from 192.0.2.10:80 (Host ok.test, TLS false)"* ]]
  local t
  for t in "connect 127.0.0.1:3128 evil.test:7000" "connect 127.0.0.1:3128 ok.test:8080" "connect 127.0.0.1:3128 192.0.2.11:7000" \
      "http 127.0.0.1:3128 http://loop.test/" "http 127.0.0.1:3128 http://ten.test/" "tls 127.0.0.1:3128 ok.test:443 other.test" \
      "http 127.0.0.1:3128 http://ok.test/ other.test" "socks 127.0.0.1:3128 evil.test:80" \
      "direct 192.0.2.10:80" "direct 192.0.2.10:7000" "dns 192.0.2.10" "udp 192.0.2.10:9999"; do
    [ "$(result $t)" = rc=1 ] || { echo "not refused: $t"; false; }
  done
  # A refusal is an answer, never a connection that looks open.
  [[ "$output" == *"403 Forbidden maka egress refused: not-listed evil.test:7000"* ]]
  [[ "$output" == *"network is unreachable"* ]]
  # Only loopback inside.
  [[ "$output" == *"inet addresses: 1"* ]]
  [[ "$stderr" == *"8 connection(s) refused by the egress proxy"* ]]
  # The host's view: one record per refusal, and the counters.
  run maka violations --format json eg1
  [ "$status" -eq 0 ]
  [ "$(jq '[.[] | select(.type == "network")] | length' <<< "$output")" -eq 8 ]
  [ "$(jq -r '[.[] | select(.type == "network") | .reason] | sort | join(",")' <<< "$output")" = "host-mismatch,not-listed,not-listed,not-listed,private-address,private-address,raw-ip,sni-mismatch" ]
  [ "$(jq -r '.[] | select(.reason == "raw-ip") | "\(.host):\(.port) \(.action) \(.proto)"' <<< "$output")" = "192.0.2.11:7000 deny connect" ]
  [ "$(jq -r '.[] | select(.host == "loop.test") | .addr' <<< "$output")" = 127.0.0.1 ]
  [ "$(jq -r '.[] | select(.reason == "not-listed" and .proto == "socks5") | .host' <<< "$output")" = evil.test ]
  run maka violations eg1
  [[ "$output" == *"network"*"deny"*"sni-mismatch ok.test:443"* ]]
  peak=$MAKA_ROOT/eg1/peak.json
  jq . "$peak"
  [ "$(jq '.egress.dests[] | select(.dest == "ok.test:7000") | .opened' "$peak")" -eq 2 ]
  [ "$(jq '.egress.dests[] | select(.dest == "ok.test:80") | .bytesDown > 0' "$peak")" = true ]
  [ "$(jq '.egress.refusals["not-listed"]' "$peak")" -eq 3 ]
  maka delete eg1
  assert_nothing_left eg1
}

@test "egress: refused before anything exists outside the ceiling; detached sandboxes are served by their monitor; onEgressRefusal kill" {
  # The ceiling: restricted lists none.
  jq -n '{profile: "restricted"}' > "$BATS_TEST_TMPDIR/none.json"
  egress_bundle "$BATS_TEST_TMPDIR/b" sleep 300
  MAKA_POLICY=$BATS_TEST_TMPDIR/none.json run --separate-stderr maka create --bundle "$BATS_TEST_TMPDIR/b" eg2
  [ "$status" -ne 0 ]
  [[ "$stderr" == *BOUNDARY_REJECTED* ]]
  [[ "$stderr" == *'annotations["org.maka.egress"][0]'*"ok.test:80 is not within the egress allowed by profile restricted"* ]]
  assert_nothing_left eg2
  # Detached: the monitor process serves the proxy.
  export MAKA_POLICY=$BATS_FILE_TMPDIR/policy.json
  maka run -d --bundle "$BATS_TEST_TMPDIR/b" eg2
  run maka exec eg2 egresstool connect 127.0.0.1:3128 ok.test:7000
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"echo ok"* ]]
  run maka exec eg2 egresstool connect 127.0.0.1:3128 evil.test:443
  [ "$status" -eq 1 ]
  [ "$(maka violations --format json eg2 | jq '[.[] | select(.type == "network" and .host == "evil.test")] | length')" -eq 1 ]
  [ "$(maka state eg2 | jq -r .status)" = running ]
  maka delete -f eg2
  assert_nothing_left eg2
  # onEgressRefusal kill: the first refusal destroys the sandbox.
  export MAKA_POLICY=$BATS_FILE_TMPDIR/policy-kill.json
  egress_bundle "$BATS_TEST_TMPDIR/k" sh -c 'egresstool connect 127.0.0.1:3128 ok.test:7000 && egresstool connect 127.0.0.1:3128 evil.test:443; sleep 30; echo survived'
  run --separate-stderr maka run --bundle "$BATS_TEST_TMPDIR/k" eg3
  echo "$output"; echo "stderr: $stderr"
  [ "$status" -ne 0 ]
  [[ "$output" == *"echo ok"* ]]
  [[ "$output" != *survived* ]]
  [[ "$stderr" == *"SANDBOX_BOUNDARY_VIOLATION"*"network not-listed evil.test:443"* ]]
  assert_nothing_left eg3
}
