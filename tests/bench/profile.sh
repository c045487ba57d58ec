#!/bin/bash
# tests/bench/profile.sh: where does `maka run /bin/true` spend its time?
# Run as root on a cgroup v2 system (in the guest: tests/vm/run.sh
# tests/bench/profile.sh).  Prints, for maka, runc and crun: the bare process
# start (`--version`), and a timeline of one `run` from strace -f (each
# process's execve, clone and exit, and the slow system calls).
# Environment: MAKA_BINARY, MAKA_FIXTURES, PROFILE_REPEAT (10).
set -uo pipefail
n=${PROFILE_REPEAT:-10}
w=$(mktemp -d /tmp/maka-profile.XXXXXX)
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/bin"
cp "$MAKA_BINARY" "$w/bin/maka"; cp "$(command -v runc)" "$w/bin/runc"; cp "$(command -v crun)" "$w/bin/crun"
cp -a "$MAKA_FIXTURES/rootfs" "$w/rootfs"
mkdir -p "$w/gen" "$w/b"
"$w/bin/maka" spec --bundle "$w/gen"
jq --arg r "$w/rootfs" '.process.args=["/bin/true"]|.process.terminal=false|.root={path:$r,readonly:true}' \
  "$w/gen/config.json" > "$w/gen/c" && mv "$w/gen/c" "$w/gen/config.json"
"$w/bin/maka" boundary --bundle "$w/gen" --format oci | jq '.ociVersion="1.0.2"' > "$w/b/config.json"
ms() { echo $(( (${2/./} - ${1/./}) / 1000 )); }
avg() { # avg CMD...: mean wall ms of N runs
  local i t0 t1 tot=0
  for ((i = 0; i < n; i++)); do
    t0=$EPOCHREALTIME; "$@" >/dev/null 2>&1 </dev/null; t1=$EPOCHREALTIME
    tot=$((tot + $(ms $t0 $t1)))
  done
  echo $((tot / n))
}
echo "== bare process start, mean of $n (ms)"
for r in maka runc crun; do echo "$r --version: $(avg "$w/bin/$r" --version)"; done
echo "/bin/true: $(avg /bin/true)"
echo "== run /bin/true, mean of $n (ms)"
for r in maka runc crun; do echo "$r run: $(avg "$w/bin/$r" --root "$w/st-$r" run -b "$w/b" p$r)"; done
echo "maka run, GOGC=off: $(GOGC=off avg "$w/bin/maka" --root "$w/st-maka" run -b "$w/b" pg)"
echo "== maka --debug run (exeseal method)"
"$w/bin/maka" --debug --root "$w/st-maka" run -b "$w/b" dbg 2>&1 | grep -iE "exeseal|clon" | head -5
if command -v strace >/dev/null; then
  for r in maka runc crun; do
    echo "== strace -f timeline of $r run (ms since the first execve)"
    strace -f -ttt -qq -o "$w/trace-$r" -e trace=execve,clone,clone3,vfork,exit_group,wait4,fsync,mount,fsopen,fsmount,memfd_create,sendfile,copy_file_range,pivot_root,seccomp,write \
      "$w/bin/$r" --root "$w/st-$r" run -b "$w/b" tr$r </dev/null >/dev/null 2>&1
    awk 'NR == 1 {t0 = $2} {
        d = ($2 - t0) * 1000
        if ($3 ~ /^(execve|clone|clone3|exit_group|fsync|memfd_create|sendfile|copy_file_range|pivot_root|seccomp|fsmount)\(/ || $3 ~ /^mount\(.*overlay/ || $3 ~ /\+\+\+ exited/)
          printf "%8.1f  %s  %s\n", d, $1, substr($0, index($0, $3), 110)
      }' "$w/trace-$r" | head -60
    echo "  total: $(awk 'NR == 1 {t0 = $2} {t = $2} END {printf "%.1f ms", (t - t0) * 1000}' "$w/trace-$r"), $(wc -l < "$w/trace-$r") traced calls"
    echo "  syscall counts (strace -c -f):"
    strace -f -c -o "$w/count-$r" "$w/bin/$r" --root "$w/st-$r" run -b "$w/b" c$r </dev/null >/dev/null 2>&1
    head -14 "$w/count-$r" | sed 's/^/    /'
  done
fi
