#!/bin/bash
# tests/oci-validation/run.sh [RUNTIME...]
#
# The OCI runtime-tools validation suite (runtime-tools v0.9.0's 58
# validation programs) against maka, runc and crun side by side, in ONE
# throw-away guest (tests/vm/run.sh).  `make oci-validation`.  Never part of
# `make test`.
#
#   - build.sh builds runtimetest and the programs on the host into
#     WORK/src (skipped with OCI_VALIDATION_NO_BUILD=1 when they are there);
#   - guest.sh runs every program once per runtime with RUNTIME set to
#     maka (./maka, MAKA_POLICY=tests/oci-validation/policy.json),
#     /usr/sbin/runc and /usr/bin/crun; TAP in WORK/tap/RUNTIME/NAME.tap;
#   - summary.py writes WORK/summary.txt and WORK/summary.md.
#
# RUNTIME...: any of maka runc crun (default: all three, in that order).
# Environment: OCI_VALIDATION_WORK (build/oci-validation), OCI_VALIDATION_PROGRAMS
# ("create kill ...": a subset), OCI_VALIDATION_TIMEOUT (a program's, 240 s),
# OCI_VALIDATION_VM_TIMEOUT (the guest's, 10800 s), MAKA_BINARY (./maka).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${OCI_VALIDATION_WORK:-$repo/build/oci-validation}
[ $# -gt 0 ] && runtimes=("$@") || runtimes=(maka runc crun)
maka=${MAKA_BINARY:-$repo/maka}
[ -x "$maka" ] || { echo "oci-validation: $maka not built (make build)" >&2; exit 2; }
for rt in "${runtimes[@]}"; do
  case $rt in
    maka) ;;
    runc) [ -x /usr/sbin/runc ] || { echo "oci-validation: no /usr/sbin/runc (make deps)" >&2; exit 2; } ;;
    crun) [ -x /usr/bin/crun ] || { echo "oci-validation: no /usr/bin/crun (make deps)" >&2; exit 2; } ;;
    *) echo "oci-validation: unknown runtime $rt (maka, runc, crun)" >&2; exit 2 ;;
  esac
done

if [ "${OCI_VALIDATION_NO_BUILD:-}" != 1 ] || [ ! -x "$work/src/runtimetest" ]; then
  "$here/build.sh" "$work"
fi

echo "oci-validation: runtime-tools v0.9.0 against ${runtimes[*]} (maka: $("$maka" --version | head -1))"
start=$(date +%s)
# Only WORK is shared read-write (TAP goes there); the guest reads the repo
# (maka, the policy, these scripts) through the host's read-only /.
OCI_VALIDATION_MAKA=$maka OCI_VALIDATION_POLICY=$here/policy.json \
  VM_ENV="OCI_VALIDATION_MAKA OCI_VALIDATION_POLICY OCI_VALIDATION_PROGRAMS OCI_VALIDATION_TIMEOUT" \
  VM_SHARE=$work VM_TIMEOUT=${OCI_VALIDATION_VM_TIMEOUT:-10800} \
  "$repo/tests/vm/run.sh" bash "$here/guest.sh" "$work" "${runtimes[@]}" || true
echo "oci-validation: the guest ran $(( $(date +%s) - start )) s"

python3 "$here/summary.py" "$work" "${runtimes[@]}"
