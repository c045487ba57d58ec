#!/bin/bash
# tests/critest/run.sh [HANDLER...]
#
# Kubernetes' CRI validation suite (cri-tools' critest) against containerd
# with maka as the runtime handler, side by side with runc, in ONE
# throw-away guest (tests/vm/run.sh). `make critest`. Never part of
# `make test`.
#
#   - build.sh builds critest, distribution's registry, crane and the
#     images on the host into WORK (skipped with CRITEST_NO_BUILD=1 when
#     they are there);
#   - guest.sh starts the registry and containerd in the guest and runs
#     critest once per handler; results in WORK/results;
#   - summary.py writes WORK/summary.txt (and summary.md).
#
# HANDLER...: maka and/or runc (default: both, maka first).
# Environment: CRITEST_WORK (build/critest), CRITEST_FOCUS, CRITEST_SKIP,
# CRITEST_SEED, CRITEST_TIMEOUT (see guest.sh), CRITEST_VM_TIMEOUT (the
# guest's, 36000 s), CRITEST_VERSION (the Makefile passes CRICTL_VERSION),
# MAKA_BINARY (./maka), MAKA_CRICTL (build/tools/crictl).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${CRITEST_WORK:-$repo/build/critest}
[ $# -gt 0 ] && handlers=("$@") || handlers=(maka runc)
maka=${MAKA_BINARY:-$repo/maka}
crictl=${MAKA_CRICTL:-$repo/build/tools/crictl}
[ -x "$maka" ] || { echo "critest: $maka not built (make build)" >&2; exit 2; }
[ -x "$crictl" ] || { echo "critest: $crictl not built (make crictl)" >&2; exit 2; }
for h in "${handlers[@]}"; do
  case $h in
    maka) ;;
    runc) command -v runc > /dev/null || [ -x /usr/sbin/runc ] || { echo "critest: no runc (make deps)" >&2; exit 2; } ;;
    *) echo "critest: unknown handler $h (maka, runc)" >&2; exit 2 ;;
  esac
done
for c in containerd containerd-shim-runc-v2; do
  command -v "$c" > /dev/null || { echo "critest: no $c (make deps)" >&2; exit 2; }
done

if [ "${CRITEST_NO_BUILD:-}" != 1 ] || [ ! -x "$work/bin/critest" ] || [ ! -s "$work/images/images.txt" ]; then
  "$here/build.sh" "$work"
fi

echo "critest: $("$work/bin/critest" -version 2>&1 | grep -m1 'critest version') against ${handlers[*]} (maka: $("$maka" --version | head -1))"
start=$(date +%s)
# Only WORK is shared read-write (results go there); the guest reads the
# repository (maka, crictl, these scripts) through the host's read-only /.
CRITEST_MAKA=$maka CRITEST_CRICTL=$crictl \
  VM_ENV="CRITEST_MAKA CRITEST_CRICTL CRITEST_FOCUS CRITEST_SKIP CRITEST_SEED CRITEST_TIMEOUT CRITEST_POLICY" \
  VM_SHARE=$work VM_TIMEOUT=${CRITEST_VM_TIMEOUT:-36000} \
  "$repo/tests/vm/run.sh" bash "$here/guest.sh" "$work" "${handlers[@]}" || true
echo "critest: the guest ran $(( $(date +%s) - start )) s"

python3 "$here/summary.py" "$work" "${handlers[@]}"
