#!/bin/bash
# tests/bench/coldstart-lab.sh: where does a sandbox's start go, with and
# without its user namespace?  A lab tool for the cold-start issue (25), not
# a bench row: `make bench` holds the figures.  Run as root on a cgroup v2
# system (in the guest: `MAKA_BINARY=$PWD/maka MAKA_FIXTURES=$PWD/build/fixtures
# tests/vm/run.sh tests/bench/coldstart-lab.sh`).
#
# Each round runs, interleaved, `maka run /bin/true` on the bench's bundle
# under restricted (its user namespace from the pool) and under restricted
# with `userNamespace: optional` on the same bundle without one, with
# MAKA_PHASES, and crun on the plain bundle; it prints the median of each
# phase side by side.  Then one `strace -f -T` of each maka run lists the
# system calls that took longest, by process.
# Environment: MAKA_BINARY, MAKA_FIXTURES, MAKA_LAB_ROUNDS (8), MAKA_LAB_STRACE (1).
set -uo pipefail
rounds=${MAKA_LAB_ROUNDS:-8}
w=$(mktemp -d /tmp/maka-lab.XXXXXX)
chmod 0711 "$w"
trap 'for r in u n; do for id in $("$w/bin/maka" --root "$w/st-$r" list -q 2>/dev/null); do "$w/bin/maka" --root "$w/st-$r" delete -f "$id"; done; done; rm -rf "$w"' EXIT
mkdir -p "$w/bin" "$w/gen" "$w/u" "$w/n" "$w/p"
cp "$MAKA_BINARY" "$w/bin/maka"
cp -a "$MAKA_FIXTURES/rootfs" "$w/rootfs"
maka() { "$w/bin/maka" "$@"; }
env -u MAKA_POLICY "$w/bin/maka" spec --bundle "$w/gen"
jq --arg r "$w/rootfs" '.process.args=["/bin/true"]|.process.terminal=false|.root={path:$r,readonly:true}' \
  "$w/gen/config.json" > "$w/gen/c" && mv "$w/gen/c" "$w/gen/config.json"
env -u MAKA_POLICY "$w/bin/maka" boundary --bundle "$w/gen" --format oci | jq '.ociVersion="1.0.2"' > "$w/gen/oci.json"
jq 'del(.linux.uidMappings, .linux.gidMappings)' "$w/gen/oci.json" > "$w/u/config.json"
jq '.linux.namespaces |= map(select(.type != "user")) | del(.linux.uidMappings, .linux.gidMappings)' "$w/gen/oci.json" > "$w/n/config.json"
jq '.linux.seccomp.syscalls |= map(if .action == "SCMP_ACT_NOTIFY" then .action = "SCMP_ACT_ERRNO" | .errnoRet = 1 else . end)' \
  "$w/gen/oci.json" > "$w/p/config.json"
echo '{"profile": "restricted", "userNamespace": "optional"}' > "$w/nouserns.json"
run_u() { env -u MAKA_POLICY MAKA_PHASES="$w/ph-u.jsonl" "$w/bin/maka" --root "$w/st-u" run -b "$w/u" "$1"; }
run_n() { MAKA_POLICY=$w/nouserns.json MAKA_PHASES="$w/ph-n.jsonl" "$w/bin/maka" --root "$w/st-n" run -b "$w/n" "$1"; }
run_c() { crun --root "$w/st-c" run -b "$w/p" "$1"; }
ms() { echo $(( (${2/./} - ${1/./}) / 1000 )); }
declare -A whole
for ((i = 0; i < rounds; i++)); do
  for r in u n c; do
    t0=$EPOCHREALTIME
    "run_$r" "lab-$r$i" </dev/null >/dev/null 2>>"$w/err" || echo "round $i $r failed" >&2
    t1=$EPOCHREALTIME
    whole[$r]+="$(ms "$t0" "$t1") "
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "== run /bin/true, median of $rounds interleaved rounds [ms] (outside: bash's clock)"
echo "maka (user namespace): $(median <<<"${whole[u]}")"
echo "maka (no user namespace): $(median <<<"${whole[n]}")"
echo "crun: $(median <<<"${whole[c]}")"
[ ! -s "$w/err" ] || { echo "errors:"; head -20 "$w/err"; }
echo "== phases, medians [ms]: with user namespace | without"
python3 - "$w/ph-u.jsonl" "$w/ph-n.jsonl" <<'EOF'
import json, statistics, sys
def load(p):
    out, tot = {}, []
    for line in open(p):
        d = json.loads(line)
        if d.get("command") != "run":
            continue
        tot.append(d["totalMs"])
        for ph in d["phases"]:
            out.setdefault(ph["name"], []).append(ph["ms"])
    return out, tot
u, ut = load(sys.argv[1]); n, nt = load(sys.argv[2])
names = list(u) + [k for k in n if k not in u]
for k in names:
    a = statistics.median(u[k]) if k in u else float("nan")
    b = statistics.median(n[k]) if k in n else float("nan")
    print(f"{k:42s} {a:8.1f} {b:8.1f}")
print(f"{'total (inside)':42s} {statistics.median(ut):8.1f} {statistics.median(nt):8.1f}")
EOF
if [ "${MAKA_LAB_CSD:-1}" = 1 ]; then
  echo "== create, start, delete: medians of $rounds rounds [ms] (outside), and maka's phases of each"
  declare -A csd
  for ((i = 0; i < rounds; i++)); do
    for r in maka runc crun; do
      case $r in
        maka) cmd=(env -u MAKA_POLICY MAKA_PHASES="$w/ph-csd.jsonl" "$w/bin/maka" --root "$w/st-csd") b=$w/u ;;
        *) cmd=("$r" --root "$w/st-$r") b=$w/p ;;
      esac
      for step in create start delete; do
        args=("$step" "csd-$r$i"); [ $step != create ] || args=(create -b "$b" "csd-$r$i")
        [ $step != delete ] || sleep 0.3   # /bin/true has exited
        t0=$EPOCHREALTIME
        "${cmd[@]}" "${args[@]}" </dev/null >/dev/null 2>>"$w/err" || echo "round $i $r $step failed" >&2
        t1=$EPOCHREALTIME
        csd[$r $step]+="$(ms "$t0" "$t1") "
      done
    done
  done
  for step in create start delete; do
    printf '%-8s maka %6s  runc %6s  crun %6s\n' "$step" "$(median <<<"${csd[maka $step]}")" "$(median <<<"${csd[runc $step]}")" "$(median <<<"${csd[crun $step]}")"
  done
  python3 - "$w/ph-csd.jsonl" <<'PY'
import json, statistics, sys
by = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    c = by.setdefault(d["command"], {})
    for ph in d["phases"]:
        c.setdefault(ph["name"], []).append(ph["ms"])
    c.setdefault("total (inside)", []).append(d["totalMs"])
for cmd in ("create", "start", "delete"):
    print(f"  maka {cmd}:")
    for k, v in by.get(cmd, {}).items():
        print(f"    {k:40s} {statistics.median(v):8.1f}")
PY
fi
if [ "${MAKA_LAB_TIMELINE:-1}" = 1 ]; then
  echo "== package initialisers of maka (GODEBUG=inittrace=1 maka --version): the 12 slowest, and the sum"
  GODEBUG=inittrace=1 "$w/bin/maka" --version 2>&1 >/dev/null | awk '/^init / {print $5, $2; s += $5} END {print s, "(sum, ms)"}' | sort -rn | head -30
  echo "== one maka --debug run (user namespace): each log line, ms since the first"
  env -u MAKA_POLICY "$w/bin/maka" --debug --log-format json --log "$w/debug.log" --root "$w/st-u" run -b "$w/u" tl-u </dev/null >/dev/null 2>&1
  python3 - "$w/debug.log" <<'PY'
import json, sys, datetime
t0 = None
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    t = datetime.datetime.fromisoformat(d["time"].replace("Z", "+00:00"))
    t0 = t0 or t
    print(f"{(t - t0).total_seconds() * 1000:8.1f}  {d.get('msg', '')[:110]}")
PY
fi
if [ "${MAKA_LAB_STRACE:-1}" = 1 ] && command -v strace >/dev/null; then
  for r in u n; do
    echo "== strace -f -T of one maka run ($r): the 25 slowest system calls, and the time per process image"
    ( if [ $r = u ]; then env -u MAKA_POLICY strace -f -ttt -T -qq -o "$w/tr-$r" "$w/bin/maka" --root "$w/st-$r" run -b "$w/$r" "tr-$r"
      else MAKA_POLICY=$w/nouserns.json strace -f -ttt -T -qq -o "$w/tr-$r" "$w/bin/maka" --root "$w/st-$r" run -b "$w/$r" "tr-$r"; fi ) </dev/null >/dev/null 2>&1
    awk '{ if (match($0, /<[0-9.]+>$/)) { d = substr($0, RSTART + 1, RLENGTH - 2); printf "%9.1f ms  %s\n", d * 1000, substr($0, 1, 150) } }' "$w/tr-$r" |
      sort -rn | head -25
    echo "  calls: $(wc -l < "$w/tr-$r"); span: $(awk 'NR == 1 {t0 = $2} {t = $2} END {printf "%.0f ms", (t - t0) * 1000}' "$w/tr-$r")"
    echo "  execve timeline (ms since the first):"
    awk 'NR == 1 {t0 = $2} $3 ~ /^execve\(/ || $0 ~ /exited with/ {printf "  %8.1f  %s\n", ($2 - t0) * 1000, substr($0, 1, 130)}' "$w/tr-$r" | head -30
  done
fi
if [ "${MAKA_LAB_PERF:-1}" = 1 ] && command -v perf >/dev/null; then
  for r in u n; do
    echo "== perf (cpu-clock, every CPU) over 4 maka runs ($r): the top symbols, user and kernel"
    pol=(env -u MAKA_POLICY); [ $r = u ] || pol=(env MAKA_POLICY="$w/nouserns.json")
    "${pol[@]}" perf record -q -e cpu-clock -F 2000 -a -g -o "$w/perf-$r.data" -- \
      sh -c "for i in 1 2 3 4; do '$w/bin/maka' --root '$w/st-$r' run -b '$w/$r' pf-$r\$i; done" </dev/null >/dev/null 2>&1
    perf report -q -i "$w/perf-$r.data" --no-children --sort comm,sym --stdio -g none 2>/dev/null |
      grep -v '^$' | head -40
    echo "  by process name:"
    perf report -q -i "$w/perf-$r.data" --no-children --sort comm --stdio -g none 2>/dev/null | grep -v '^$' | head -12
  done
fi
