#!/bin/bash
# tests/oci-validation/guest.sh WORK RUNTIME...
#
# Runs in the throw-away guest (tests/oci-validation/run.sh starts it through
# tests/vm/run.sh): every runtime-tools validation program built in WORK/src
# (build.sh), once per RUNTIME (maka, runc, crun), its TAP in
# WORK/tap/RUNTIME/NAME.tap, its stderr in NAME.err and "EXIT SECONDS" in
# NAME.status (exit 124: stopped by the per-program timeout); a program's
# files are replaced when it runs, the others' kept (a subset run resumes
# one that was stopped).  Never run it on a host whose cgroups belong to
# other software.
#
# Environment: OCI_VALIDATION_PROGRAMS (names, default all), OCI_VALIDATION_TIMEOUT
# (a program's, 240 s), OCI_VALIDATION_MAKA (the maka binary), OCI_VALIDATION_POLICY
# (maka's policy file).
set -uo pipefail
work=$1; shift
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || { echo "oci-validation: not a cgroup v2 host, refusing" >&2; exit 2; }
src=$work/src
timeout=${OCI_VALIDATION_TIMEOUT:-240}
if [ -n "${OCI_VALIDATION_PROGRAMS:-}" ]; then
  read -ra programs <<< "$OCI_VALIDATION_PROGRAMS"
else
  programs=()
  for d in "$src"/validation/*/; do
    n=$(basename "$d"); [ "$n" = util ] || programs+=("$n")
  done
fi

# The programs read ./runtimetest and ./rootfs-amd64.tar.gz from their working
# directory and make their bundles in $TMPDIR (the guest's fresh /tmp). Both
# files are read once per container: keep them off the 9p share.
cwd=/tmp/oci-validation
mkdir -p "$cwd" /run/oci-validation
cp "$src/runtimetest" "$src/rootfs-amd64.tar.gz" "$cwd/"
# The share has no page cache: maka, run thousands of times, from a tmpfs
# (docs/dev/testing.md).
cp "${OCI_VALIDATION_MAKA:?}" /run/oci-validation/maka

echo "oci-validation: guest $(uname -r), $(nproc) CPU(s), ${#programs[@]} program(s), timeout ${timeout}s each"
for rt in "$@"; do
  case $rt in
    maka) bin=/run/oci-validation/maka; export MAKA_POLICY=${OCI_VALIDATION_POLICY:?} ;;
    runc) bin=/usr/sbin/runc; unset MAKA_POLICY ;;
    crun) bin=/usr/bin/crun; unset MAKA_POLICY ;;
    *) echo "oci-validation: unknown runtime $rt" >&2; exit 2 ;;
  esac
  tap=$work/tap/$rt
  mkdir -p "$tap"
  echo "oci-validation: $rt: $("$bin" --version 2>&1 | head -1)"
  rt_start=$(date +%s)
  for p in "${programs[@]}"; do
    rm -f "$tap/$p".*
    start=$(date +%s)
    (cd "$cwd" && RUNTIME=$bin timeout -k 10 "$timeout" "$src/validation/$p/$p.t") \
      > "$tap/$p.tap" 2> "$tap/$p.err" < /dev/null
    rc=$?
    secs=$(( $(date +%s) - start ))
    echo "$rc $secs" > "$tap/$p.status"
    printf 'oci-validation: %s %-34s exit %3d %4ds  %d ok, %d not ok\n' "$rt" "$p" "$rc" "$secs" \
      "$(grep -cE '^ok ' "$tap/$p.tap")" "$(grep -cE '^not ok ' "$tap/$p.tap")"
    # Whatever a program left (a container it did not delete, a bundle) must
    # not reach the next one.
    for ct in $("$bin" list -q 2>/dev/null); do "$bin" delete -f "$ct" > /dev/null 2>&1; done
    # A program that runs a container without a mount namespace
    # (linux_ns_itype) leaves the runtime's /proc, /sys and /dev mounts in its
    # bundle: remove only what lies on /tmp's own file system.
    rm -rf --one-file-system /tmp/ocitest* 2> /dev/null
  done
  echo "oci-validation: $rt: $(( $(date +%s) - rt_start )) s"
done
