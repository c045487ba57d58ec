#!/bin/bash
# tests/bench/bench.sh: maka, runc and crun side by side on one busybox bundle.
#
# Run as root on a cgroup v2 system (`make bench` runs it in the QEMU guest of
# tests/vm/run.sh on other hosts).  It writes raw samples, one line each, to
# $BENCH_OUT/bench-samples.tsv and facts about the run to
# $BENCH_OUT/bench-meta.json; tests/bench/report.py turns them into the table
# and build/bench.json.  It never fails because a runtime is slow or fails:
# failures are counted and reported.
#
# What each runtime runs: the *same* config.json for all three.  It is
# `maka spec` (args /bin/true, no terminal, the busybox rootfs) normalised by
# `maka boundary --format oci` (the document built from the contract): the restricted profile's defaults
# are written into it (seccomp profile, memory/pids/cpu limits, sized tmpfs,
# cgroup namespace), so runc and crun enforce what maka enforces.
# maka-api is maka through its Go API in one process (tests/bench/apibench:
# Launch, Wait, Destroy), on the same bundle under the same policy as the
# CLI's row: run (restricted; maka-api-baseline: baseline), run-nonet, and
# parallel10 (ten at once in one process).
#
# Environment:
#   MAKA_BINARY MAKA_FIXTURES        maka and the fixtures dir (make fixtures)
#   MAKA_RUNC MAKA_CRUN              runc and crun (default: from PATH)
#   BENCH_ROUNDS (30)                interleaved rounds of each timed test
#   BENCH_PAR_ROUNDS (3)             rounds of the 10-in-parallel test
#   BENCH_RSS_ROUNDS (3)             rounds of the peak-RSS measurements
#   BENCH_WORK_ROUNDS (10)           rounds of the busybox workload
#   BENCH_OUT (build)                where the samples go
#   BENCH_MONITOR_PATTERN            pgrep -f pattern of maka's per-container
#                                    monitor (default: the exec container's)
#   BENCH_TESTS                      space-separated subset of: run run-nonet
#                                    create start delete exec agent api parallel
#                                    workload kill rss phases egress
#   BENCH_MAKA_BEFORE                a second maka binary, measured as
#                                    "maka-before" next to maka (before/after
#                                    of a change, in the same run)
#   BENCH_MAKA_BEFORE_PLAIN          non-empty: maka-before gets the .plain
#                                    bundles (a maka older than its monitor)
#   BENCH_CSD_PAUSE (0)              seconds between create and start, and
#                                    between the init's end and delete (each
#                                    runtime alike): the commands without
#                                    the sandbox's own processes beside them
set -uo pipefail

rounds=${BENCH_ROUNDS:-30}
par_rounds=${BENCH_PAR_ROUNDS:-3}
rss_rounds=${BENCH_RSS_ROUNDS:-3}
work_rounds=${BENCH_WORK_ROUNDS:-10}
out=$(mkdir -p "${BENCH_OUT:-build}" && cd "${BENCH_OUT:-build}" && pwd)
# `EXE --root ROOT monitor ... ID` (EXE: the small maka-monitor in ROOT, or
# maka itself): the exec container's monitor (monitor.go).
monitor_pattern=${BENCH_MONITOR_PATTERN:-'^[^ ]* --root [^ ]*/state/maka monitor .* maka-exec$'}
tests=${BENCH_TESTS:-run run-nonet create start delete exec agent api parallel workload kill rss phases egress}
here=$(cd "$(dirname "$0")" && pwd)
baseline_policy=$here/../integration/fixtures/policy-baseline.json

die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || die "needs a cgroup v2 host (use make bench)"
maka_src=${MAKA_BINARY:?MAKA_BINARY: path to maka}
fixtures=${MAKA_FIXTURES:?MAKA_FIXTURES: make fixtures}
runc_src=${MAKA_RUNC:-$(command -v runc || true)}
crun_src=${MAKA_CRUN:-$(command -v crun || true)}
for b in "$maka_src" "$runc_src" "$crun_src"; do [ -x "$b" ] || die "missing runtime binary: '$b'"; done
[ -d "$fixtures/rootfs" ] || die "no rootfs in $fixtures (make fixtures)"
command -v jq >/dev/null || die "needs jq"
gnutime=$(command -v /usr/bin/time || true)

# Everything on tmpfs: the binaries, the rootfs and the state roots, so that
# the 9p share of the guest costs nobody anything.
w=$(mktemp -d /tmp/maka-bench.XXXXXX)
chmod 0711 "$w"   # a user namespace's root must reach the rootfs
cleanup() {
  for rt in maka maka-baseline maka-nouserns maka-hostnet maka-nomon maka-before maka-egress maka-api runc crun; do
    for id in $(rt "$rt" list -q 2>/dev/null); do rt "$rt" delete -f "$id" >/dev/null 2>&1; done
  done
  [ -z "${egress_srv:-}" ] || kill "$egress_srv" 2>/dev/null
  ip link del maka-bench0 2>/dev/null
  rm -rf "$w"
}
trap cleanup EXIT
mkdir -p "$w/bin" "$w/state"
cp "$maka_src" "$w/bin/maka"; cp "$runc_src" "$w/bin/runc"; cp "$crun_src" "$w/bin/crun"
[ ! -x "$fixtures/toolsandbox" ] || cp "$fixtures/toolsandbox" "$w/bin/toolsandbox"
[ ! -x "$fixtures/apibench" ] || cp "$fixtures/apibench" "$w/bin/apibench"
if [ -n "${BENCH_MAKA_BEFORE:-}" ]; then
  mkdir -p "$w/before" && cp "$BENCH_MAKA_BEFORE" "$w/before/maka" || die "BENCH_MAKA_BEFORE: $BENCH_MAKA_BEFORE"
fi
cp -a "$fixtures/rootfs" "$w/rootfs"
errlog=$out/bench-errors.log
: > "$errlog"
# A run that dies half-way must not be reported with an earlier run's facts.
rm -f "$out/bench-meta.json" "$out/bench.json"

# rt RUNTIME ARGS...: one runtime with its own state root.  maka runs under
# its default restricted profile (no policy file); maka-baseline under the
# compatibility suite's baseline policy; maka-hostnet under restricted
# widened by exactly one item, networkModes += host (for the bundle without
# a network namespace, which restricted refuses).
echo '{"profile": "restricted", "networkModes": ["closed", "host"]}' > "$w/policy-hostnet.json"
# maka-nouserns: restricted without its user namespace (issue 12's price).
echo '{"profile": "restricted", "userNamespace": "optional"}' > "$w/policy-nouserns.json"
rt() {
  local r=$1; shift
  local bin=$w/bin/maka pol=
  case $r in
    maka | maka-before) ;;
    maka-baseline) pol=$baseline_policy ;;
    maka-nouserns) pol=$w/policy-nouserns.json ;;
    maka-hostnet | maka-before-hostnet) pol=$w/policy-hostnet.json ;;
    maka-egress) pol=$w/policy-egress.json ;;
    runc | crun) bin=$w/bin/$r ;;
  esac
  if [[ $r == runc || $r == crun || $r == maka-nomon ]] ||
     [[ $r == maka-before* && -n ${BENCH_MAKA_BEFORE_PLAIN:-} ]]; then # NAME.plain bundles (mkbundle)
    local a args=()
    for a in "$@"; do [ ! -d "$a.plain" ] || a=$a.plain; args+=("$a"); done
    set -- "${args[@]}"
  fi
  [[ $r != maka-before* ]] || bin=$w/before/maka
  if [ -n "$pol" ]; then
    MAKA_POLICY=$pol "${pre[@]}" "$bin" --root "$w/state/$r" "$@"
  else
    env -u MAKA_POLICY "${pre[@]}" "$bin" --root "$w/state/$r" "$@"
  fi
}
# pre: a command that wraps the runtime (GNU time for the RSS figures).
pre=()

# The bundles.
gen=$w/gen; mkdir -p "$gen"
env -u MAKA_POLICY "$w/bin/maka" spec --bundle "$gen" || die "maka spec failed"
jq --arg rootfs "$w/rootfs" '.process.args = ["/bin/true"] | .process.terminal = false
    | .root = {path: $rootfs, readonly: true}' "$gen/config.json" > "$gen/c.json"
mv "$gen/c.json" "$gen/config.json"
env -u MAKA_POLICY "$w/bin/maka" boundary --bundle "$gen" --format oci > "$gen/boundary.json" ||
  die "maka's restricted profile refuses the bench bundle: $(env -u MAKA_POLICY "$w/bin/maka" boundary --bundle "$gen" 2>&1)"
# mkbundle NAME JQ: a bundle from the normalised spec, in two forms.  NAME,
# for maka, keeps maka's seccomp profile as it is: the watched syscalls go to
# SCMP_ACT_NOTIFY, served by maka's monitor.  NAME.plain, for runc and crun,
# which have no monitor (and refuse a notify action without a listenerPath),
# answers the same syscalls EPERM, as maka's monitor does under deny.
#
# The user namespace: boundary.json maps the pool's first free block, which
# runc and crun get as it is; maka's copy leaves the mappings out (maka
# leases its own block at create and refuses a config.json's under
# restricted), so both run in a user namespace of the same shape.
mkbundle() {
  mkdir -p "$w/$1" "$w/$1.plain"
  local name=$1 filter=$2; shift 2
  jq "$@" "$filter" "$gen/boundary.json" > "$w/$name.plain/config.json" || die "bundle $name"
  jq '.linux.seccomp.syscalls |= map(if .action == "SCMP_ACT_NOTIFY"
        then .action = "SCMP_ACT_ERRNO" | .errnoRet = 1 else . end)' \
    "$w/$name.plain/config.json" > "$w/$name.plain/c.json" || die "bundle $name.plain"
  mv "$w/$name.plain/c.json" "$w/$name.plain/config.json"
  jq "$@" "$filter | del(.linux.uidMappings, .linux.gidMappings)" "$gen/boundary.json" > "$w/$name/config.json" ||
    die "bundle $name"
}
# ociVersion 1.0.2: crun 1.8 refuses any other ("unknown version specified").
mkbundle true '.ociVersion = "1.0.2"'
# Without a network namespace a user namespace's root may not mount sysfs
# (the kernel ties sysfs to the network namespace's owner): runc and maka
# fail, crun binds the host's /sys instead. The bundle has no /sys, for all
# three alike.
mkbundle true-nonet '.ociVersion = "1.0.2" | .linux.namespaces |= map(select(.type != "network"))
  | .mounts |= map(select(.destination != "/sys"))'
# maka-nouserns: the same bundle without the user namespace (its price).
mkbundle true-nouserns '.ociVersion = "1.0.2" | .linux.namespaces |= map(select(.type != "user")) | del(.linux.uidMappings, .linux.gidMappings)'
# The exec container lives for the whole run: restricted's default lifetime
# (180 s) would end it, so it asks for restricted's largest, an hour.
mkbundle sleep '.ociVersion = "1.0.2" | .process.args = ["sleep", "100000"]
  | .annotations["org.maka.timeout"] = "3600"'
# A tool sandbox (`maka spec --tool`'s idle init, the same config.json for
# all): maka runs its resident agent as the init and starts exec'd commands
# through it (issue 26); runc and crun exec as always.
mkbundle tool '.ociVersion = "1.0.2" | .process.args = ["/bin/sh", "-c", "while :; do sleep 3600 & wait; done"]
  | .annotations["org.maka.timeout"] = "3600"'
# An ordinary busybox workload (issue 4: a sandbox that is watched must run
# it at the speed of one that is not): files written, read, searched and
# removed in /tmp, directories made, pipes and short-lived processes.
workload='i=0; while [ $i -lt 60 ]; do echo "line $i" > /tmp/f$i; cat /tmp/f$i | grep -q line;
  mkdir -p /tmp/d$i/x; ls /tmp/d$i > /dev/null; rm -r /tmp/d$i /tmp/f$i; i=$((i + 1)); done'
mkbundle work '.ociVersion = "1.0.2" | .process.args = ["sh", "-c", $work]' --arg work "$workload"
# A sandbox that crosses its boundary (issue 4): under restricted's kill,
# `maka run` fails with SANDBOX_BOUNDARY_VIOLATION and the time the monitor
# measured from the violation to the empty cgroup ("empty after N ms").
# (mount, not unshare: a profile that config.json brings, as these bundles
# do, has its namespace rules narrowed to a plain EPERM, not notified.)
mkbundle escape '.ociVersion = "1.0.2" | .process.args = ["sh", "-c", "mount -t tmpfs none /tmp; echo survived"]'
cp "$w/true/config.json" "$out/bench-config.json"
cp "$w/true.plain/config.json" "$out/bench-config-plain.json"
jq -e '[.linux.seccomp.syscalls[] | select(.action == "SCMP_ACT_NOTIFY")] | length > 0' \
  "$w/true/config.json" > /dev/null || die "maka's profile notifies nothing: no monitor to measure"
for b in true true-nonet; do
  env -u MAKA_POLICY "$w/bin/maka" boundary --bundle "$w/$b" --format json > /dev/null ||
    [ "$b" = true-nonet ] || die "restricted refuses bundle $b"
done
MAKA_POLICY=$w/policy-hostnet.json "$w/bin/maka" boundary --bundle "$w/true-nonet" > /dev/null ||
  die "the hostnet policy refuses bundle true-nonet"

samples=$out/bench-samples.tsv
printf 'test\truntime\tround\tvalue\trc\n' > "$samples"
sample() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$samples"; }

# timed TEST RUNTIME ROUND CMD...: wall time of CMD in ms (bash's clock: the
# same fork+exec overhead for every runtime).
timed() {
  local test=$1 r=$2 round=$3; shift 3
  local t0 t1 rc=0
  t0=$EPOCHREALTIME
  "$@" </dev/null >/dev/null 2>>"$errlog" || rc=$?
  t1=$EPOCHREALTIME
  [ $rc = 0 ] || echo "[$test $r round $round] exit $rc: $*" >> "$errlog"
  sample "$test" "$r" "$round" "$(( (${t1/./} - ${t0/./}) ))" "$rc"
  return $rc
}

# rotated ROUND RUNTIMES...: the runtimes, rotated by ROUND (A B C, B C A, ...)
rotated() {
  local round=$1; shift
  local n=$# i
  local a=("$@")
  for ((i = 0; i < n; i++)); do echo "${a[(i + round) % n]}"; done
}

wait_gone() { # wait_gone PIDFILE: until the container's init has exited (gone or zombie)
  local i pid st
  pid=$(cat "$1" 2>/dev/null) || return 0
  for i in $(seq 400); do
    st=
    { read -r st < "/proc/$pid/stat"; } 2>/dev/null || return 0
    st=${st##*) }; st=${st%% *}
    [ "$st" = Z ] && return 0
    sleep 0.05
  done
  echo "[$1] pid $pid never exited" >> "$errlog"
}

want() { [[ " $tests " == *" $1 "* ]]; }
agent() { # agent RUNTIME ROUND: launch an idle sandbox, run one command, remove it
  local r=$1 id=$1-agent$2
  if [ "$r" = maka-api ]; then
    "$w/bin/toolsandbox" "$w/rootfs" >/dev/null
    return
  fi
  local e=(exec) t0=$EPOCHREALTIME; [[ $r != maka ]] || e=(exec --timeout 60s)
  rt "$r" run -d -b "$w/tool" "$id" </dev/null >/dev/null &&
    rt "$r" "${e[@]}" "$id" sh -c 'uname -s > /tmp/report.txt; echo done' >/dev/null || return
  # launch to first reply: what an agent waits before its first answer
  sample agent-reply "$r" "$2" "$(( (${EPOCHREALTIME/./} - ${t0/./}) ))" 0
  rt "$r" delete -f "$id"
}
api_samples() { # api_samples ROUND MODE: apibench's samples
  local out rc=0
  out=$("$w/bin/apibench" "$2" "$w/rootfs" "$w/state/maka-api" "$w/state/maka-api-store" 2>>"$errlog" </dev/null) || rc=$?
  [ $rc = 0 ] || echo "[api $2 round $1] exit $rc" >> "$errlog"
  while IFS=$'\t' read -r row r value; do
    [ -n "$row" ] && sample "$row" "$r" "$1" "$value" "$rc"
  done <<<"$out"
}
# The Go API's figures of run, run-nonet and parallel10 (runtimes maka-api
# and maka-api-baseline): apibench run/par, one process per figure, under
# the same policy and on the same bundle as the CLI's row.
api_rts=; [ ! -x "$w/bin/apibench" ] || api_rts="maka-api maka-api-baseline"
api_clean() { # what a failed apibench left (the bench's leftover checks find the rest)
  local id
  for id in $(rt maka-api --state-dir "$w/state/maka-api-store" list -q 2>/dev/null); do
    rt maka-api --state-dir "$w/state/maka-api-store" delete -f "$id" >/dev/null 2>&1
  done
}
api_run() { # api_run TEST RUNTIME ROUND POLICY MODE ARGS...: apibench's figure as TEST's sample of RUNTIME
  local test=$1 r=$2 round=$3 pol=$4 out rc=0 value; shift 4
  local cmd=("$w/bin/apibench" "$@" "$w/state/maka-api" "$w/state/maka-api-store")
  if [ -n "$pol" ]; then
    out=$(MAKA_POLICY=$pol "${cmd[@]}" 2>>"$errlog" </dev/null) || rc=$?
  else
    out=$(env -u MAKA_POLICY "${cmd[@]}" 2>>"$errlog" </dev/null) || rc=$?
  fi
  value=$(head -1 <<<"$out" | cut -f3)
  if [ $rc != 0 ] || [ -z "$value" ]; then
    [ $rc != 0 ] || rc=1
    echo "[$test $r round $round] exit $rc: apibench $*" >> "$errlog"
    value=
    api_clean
  fi
  sample "$test" "$r" "$round" "$value" "$rc"
}
par() { # par RUNTIME ROUND: 10 foreground runs at once
  local i pids=() rc=0
  for i in $(seq 10); do rt "$1" run -b "$w/true" "$1-par$2-$i" & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  return $rc
}
# Egress (issue 27): a 100 MB download through maka's proxy from inside a
# sandbox under restricted + egress, against the same download from the
# guest's host side; a server on a dummy interface (TEST-NET, listed by
# address: the proxy refuses non-public addresses no entry names).
egress_url=http://192.0.2.20/?bytes=104857600
if want egress; then
  ip link add maka-bench0 type dummy && ip addr add 192.0.2.20/32 dev maka-bench0 && ip link set maka-bench0 up ||
    die "egress: the dummy interface"
  "$fixtures/egresstool" serve 192.0.2.20 > "$w/egress-serve.log" 2>&1 &
  egress_srv=$!
  install -m 755 "$fixtures/egresstool" "$w/rootfs/usr/bin/egresstool"
  echo '{"profile": "restricted", "egress": ["192.0.2.20:80"]}' > "$w/policy-egress.json"
  mkbundle egress '.ociVersion = "1.0.2" | .process.args = ["egresstool", "get", "127.0.0.1:3128", $url]
    | .annotations["org.maka.egress"] = "[\"192.0.2.20:80\"]"' --arg url "$egress_url"
  for i in $(seq 100); do { : < /dev/tcp/192.0.2.20/80; } 2>/dev/null && break; sleep 0.1; done
fi
# egress_sample SIDE ROUND CMD...: one download; its MB/s and its time to the
# first byte of the response (µs), as "egress-mbps" and "egress-first".
egress_sample() {
  local side=$1 round=$2 out rc=0; shift 2
  out=$("$@" 2>>"$errlog" </dev/null) || rc=$?
  local bytes secs first
  read -r bytes secs first < <(sed -n 's/^bytes \([0-9]*\) seconds \([0-9.]*\) first \([0-9.]*\)$/\1 \2 \3/p' <<<"$out")
  if [ $rc != 0 ] || [ "${bytes:-0}" != 104857600 ]; then
    echo "[egress $side round $round] exit $rc: $out" >> "$errlog"
    sample egress-mbps "$side" "$round" "" 1; sample egress-first "$side" "$round" "" 1
    return
  fi
  sample egress-mbps "$side" "$round" "$(awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.1f", b / s / 1e6 }')" 0
  sample egress-first "$side" "$round" "$(awk -v f="$first" 'BEGIN { printf "%d", f * 1e6 }')" 0
}
runtimes=(maka runc crun)
[ -z "${BENCH_MAKA_BEFORE:-}" ] || runtimes+=(maka-before)
echo "bench: $rounds rounds (parallel: $par_rounds, rss: $rss_rounds); tests: $tests" >&2
echo "bench: guest load before: $(cat /proc/loadavg)" >&2
guest_load_before=$(cat /proc/loadavg)
started=$(date +%s)

# A long-running container per runtime, for exec (and the monitor's RSS).
if want exec; then
  for r in "${runtimes[@]}"; do
    rt "$r" run -d -b "$w/sleep" "$r-exec" </dev/null >/dev/null 2>>"$errlog" ||
      echo "[$r] could not start the exec container" >> "$errlog"
    rt "$r" run -d -b "$w/tool" "$r-tool" </dev/null >/dev/null 2>>"$errlog" ||
      echo "[$r] could not start the tool container" >> "$errlog"
  done
fi

for ((round = 0; round < rounds; round++)); do
  if want run; then
    # maka-api: the Go API (Launch, Wait, Destroy) under restricted, as
    # maka; maka-api-baseline under baseline, as maka-baseline.
    for r in $(rotated $round "${runtimes[@]}" maka-baseline maka-nouserns $api_rts); do
      case $r in
        maka-api) api_run run "$r" $round "" run "$w/true"; continue ;;
        maka-api-baseline) api_run run "$r" $round "$baseline_policy" run "$w/true"; continue ;;
      esac
      b=true; [ "$r" != maka-nouserns ] || b=true-nouserns
      timed run "$r" $round rt "$r" run -b "$w/$b" "$r-run$round" ||
        rt "$r" delete -f "$r-run$round" >/dev/null 2>&1
    done
  fi
  if want phases; then
    # One `maka run /bin/true` timed from inside: maka records when each
    # phase ends (MAKA_PHASES, libmaka/phase), from the kernel's start of
    # the process to its exit; timed from outside too, as "phases-run".
    MAKA_PHASES=$w/phases.jsonl timed phases-run maka $round rt maka run -b "$w/true" "maka-ph$round" ||
      rt maka delete -f "maka-ph$round" >/dev/null 2>&1
    # The same container in three commands, each timed from inside:
    # where create's, start's and delete's time goes.
    id=maka-phc$round
    rm -f "$w/pid"
    if MAKA_PHASES=$w/phases.jsonl rt maka create --pid-file "$w/pid" -b "$w/true" "$id" </dev/null >/dev/null 2>>"$errlog" &&
      MAKA_PHASES=$w/phases.jsonl rt maka start "$id" </dev/null >/dev/null 2>>"$errlog"; then
      wait_gone "$w/pid"
      MAKA_PHASES=$w/phases.jsonl rt maka delete "$id" </dev/null >/dev/null 2>>"$errlog" ||
        rt maka delete -f "$id" >/dev/null 2>&1
    else
      echo "[phases] create/start of $id failed" >> "$errlog"
      rt maka delete -f "$id" >/dev/null 2>&1
    fi
  fi
  if want run-nonet; then
    # maka-api under maka's policy here: restricted + networkModes host.
    for r in $(rotated $round "${runtimes[@]}" ${api_rts:+maka-api}); do
      if [ "$r" = maka-api ]; then
        api_run run-nonet "$r" $round "$w/policy-hostnet.json" run "$w/true-nonet"
        continue
      fi
      x=$r; [[ $r != maka* ]] || x=$r-hostnet
      timed run-nonet "$r" $round rt "$x" run -b "$w/true-nonet" "$r-nonet$round" ||
        rt "$x" delete -f "$r-nonet$round" >/dev/null 2>&1
    done
  fi
  if want create || want start || want delete; then
    for r in $(rotated $round "${runtimes[@]}"); do
      id=$r-csd$round
      rm -f "$w/pid"
      timed create "$r" $round rt "$r" create --pid-file "$w/pid" -b "$w/true" "$id"
      sleep "${BENCH_CSD_PAUSE:-0}"
      timed start "$r" $round rt "$r" start "$id"
      wait_gone "$w/pid"
      sleep "${BENCH_CSD_PAUSE:-0}"
      timed delete "$r" $round rt "$r" delete "$id" || rt "$r" delete -f "$id" >/dev/null 2>&1
    done
  fi
  if want exec; then
    for r in $(rotated $round "${runtimes[@]}"); do
      timed exec "$r" $round rt "$r" exec "$r-exec" /bin/true
      timed exec-tool "$r" $round rt "$r" exec "$r-tool" /bin/true
    done
    # The same through maka's bounded path (a child cgroup, the turn,
    # the output captured): an agent's tool call into a live sandbox,
    # through its agent.
    timed exec-bounded maka $round rt maka exec --timeout 60s maka-tool /bin/true
  fi
  if want agent; then
    # An agent's whole tool call: launch a sandbox, one command, remove
    # it. maka-api: the Go API in one process (examples/toolsandbox).
    for r in $(rotated $round "${runtimes[@]}" maka-api); do
      timed agent "$r" $round agent "$r" $round
    done
  fi
  if want api; then
    # The Go API in one process (tests/bench/apibench): Sandbox.Exec's
    # median (row exec-tool), a cold launch and a warm pool's claim to the
    # first reply (row agent-reply); once, the scale figures.
    api_samples $round round
    [ $round != 0 ] || api_samples $round scale
  fi
  if want parallel && [ $round -lt "$par_rounds" ]; then
    # maka-api: 10 Launch-Wait-Destroy at once in one process.
    for r in $(rotated $round "${runtimes[@]}" ${api_rts:+maka-api}); do
      if [ "$r" = maka-api ]; then
        api_run parallel10 "$r" $round "" par 10 "$w/true"
        continue
      fi
      timed parallel10 "$r" $round par "$r" $round ||
        for i in $(seq 10); do rt "$r" delete -f "$r-par$round-$i" >/dev/null 2>&1; done
    done
  fi
  if want kill; then
    # maka only: runc and crun answer EPERM and the sandbox lives on.
    kerr=$(rt maka run -b "$w/escape" "maka-kill$round" </dev/null 2>&1 >/dev/null)
    ms=$(sed -n 's/.*(empty after \([0-9.]*\) ms).*/\1/p' <<<"$kerr")
    if [ -n "$ms" ]; then
      sample kill maka $round "$(awk -v ms="$ms" 'BEGIN { printf "%d", ms * 1000 }')" 0
    else
      sample kill maka $round "" 1
      echo "[kill maka round $round] no 'empty after' in run's error: $kerr" >> "$errlog"
      rt maka delete -f "maka-kill$round" >/dev/null 2>&1
    fi
  fi
  if want egress; then
    if ((round % 2)); then order="direct maka"; else order="maka direct"; fi
    for side in $order; do
      if [ "$side" = direct ]; then
        egress_sample direct $round "$fixtures/egresstool" get - "$egress_url"
      else
        egress_sample maka $round rt maka-egress run -b "$w/egress" "maka-egress$round"
        rt maka-egress delete -f "maka-egress$round" >/dev/null 2>&1
      fi
    done
  fi
  if want workload && [ $round -lt "$work_rounds" ]; then
    # maka-nomon: maka on the .plain bundle, whose own seccomp profile
    # notifies nothing, so no syscall reaches a monitor (limits still watched).
    for r in $(rotated $round "${runtimes[@]}" maka-nomon); do
      timed workload "$r" $round rt "$r" run -b "$w/work" "$r-work$round" ||
        rt "$r" delete -f "$r-work$round" >/dev/null 2>&1
    done
  fi
  if want rss && [ -n "$gnutime" ] && [ $round -lt "$rss_rounds" ]; then
    # Peak RSS (KiB, GNU time's %M: the largest ru_maxrss of the runtime
    # process and the children it reaped).  create: the runtime and its
    # setup helpers (the container's init stays, unreaped); run: also the
    # container's init, which re-executes the runtime binary for maka and runc.
    for r in $(rotated $round "${runtimes[@]}"); do
      rc=0
      pre=("$gnutime" -f %M -o "$w/rss")
      rt "$r" create -b "$w/true" "$r-rss$round" \
        </dev/null >/dev/null 2>>"$errlog" || rc=$?
      sample rss-create "$r" $round "$(tail -1 "$w/rss")" $rc
      pre=(); rt "$r" delete -f "$r-rss$round" >/dev/null 2>&1
      pre=("$gnutime" -f %M -o "$w/rss"); rc=0
      rt "$r" run -b "$w/true" "$r-rss$round" \
        </dev/null >/dev/null 2>>"$errlog" || rc=$?
      pre=()
      sample rss-run "$r" $round "$(tail -1 "$w/rss")" $rc
      rt "$r" delete -f "$r-rss$round" >/dev/null 2>&1
    done
  fi
  echo "bench: round $((round + 1))/$rounds done ($(( $(date +%s) - started )) s, load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

# maka's per-container monitor: its peak RSS (VmHWM) while the exec
# container runs.  No monitor process: "n/a".
monitor_kib=
monitor_pid=$(pgrep -f "$monitor_pattern" | head -1 || true)
if [ -n "$monitor_pid" ]; then
  monitor_kib=$(awk '/^VmHWM:/ {print $2}' "/proc/$monitor_pid/status" 2>/dev/null || true)
else
  echo "[monitor] no process matches '$monitor_pattern': $(pgrep -af monitor | head -5)" >> "$errlog"
fi

# The phases of the runs (not the monitor's or any other command's line).
if [ -f "$w/phases.jsonl" ]; then
  jq -c 'select(.command == "run")' "$w/phases.jsonl" > "$out/bench-phases.jsonl" || true
  for c in create start delete; do
    jq -c --arg c "$c" 'select(.command == $c)' "$w/phases.jsonl" > "$out/bench-phases-$c.jsonl" || true
  done
else
  rm -f "$out"/bench-phases*.jsonl
fi

sizes=$(for r in maka runc crun; do printf '"%s": %s,' "$r" "$(stat -c %s "$w/bin/$r")"; done)
versions=$(for r in maka runc crun; do
  printf '"%s": %s,' "$r" "$("$w/bin/$r" --version 2>/dev/null | head -1 | jq -Rs 'rtrimstr("\n")')"
done)
cat > "$out/bench-meta.json" <<EOF
{
  "rounds": $rounds, "parallelRounds": $par_rounds, "rssRounds": $rss_rounds, "workRounds": $work_rounds,
  "tests": $(jq -Rnc --arg t "$tests" '$t | split(" ")'),
  "sizes": {${sizes%,}},
  "versions": {${versions%,}},
  "monitorPattern": $(jq -Rn --arg p "$monitor_pattern" '$p'),
  "monitorPeakRssKiB": ${monitor_kib:-null},
  "guestLoadBefore": "$guest_load_before",
  "guestLoadAfter": "$(cat /proc/loadavg)",
  "guestCpus": $(nproc),
  "kernel": "$(uname -r)",
  "seconds": $(( $(date +%s) - started )),
  "config": "bench-config.json: maka spec with the restricted profile's defaults applied (maka boundary --format oci)"
}
EOF
echo "bench: samples in $samples, errors in $errlog ($(wc -l < "$errlog") lines)" >&2
