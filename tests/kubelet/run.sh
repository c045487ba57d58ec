#!/bin/bash
# tests/kubelet/run.sh [HANDLER...]
#
# A real kubelet against containerd with maka as the runtime, side by side
# with runc, in ONE throw-away guest (tests/vm/run.sh). `make kubelet-test`.
# Never part of `make test`.
#
#   - build-kubelet.sh builds the kubelet from the Go module proxy into
#     WORK/bin (kept when built at its version);
#   - the images (the pause stand-in and busybox) come from
#     tests/critest/make-images.py, run as it is into WORK/oci, and
#     archive.py merges the two into WORK/images.tar for ctr image import;
#   - guest.sh runs the kubelet with static pods once per handler; what it
#     collects goes to WORK/results/HANDLER;
#   - pods.py summary judges it: WORK/summary.txt and summary.md; the exit
#     status is 1 if a check failed under any handler, 2 if a handler has no
#     results.
#
# HANDLER...: maka and/or runc (default: both, maka first).
# Environment: KUBELET_WORK (build/kubelet), KUBELET_VERSION (v1.34.4),
# KUBELET_NO_BUILD=1 (use WORK as it is), KUBELET_POD_TIMEOUT, KUBELET_V,
# KUBELET_POLICY (see guest.sh), KUBELET_VM_TIMEOUT (the guest's, 5400 s),
# MAKA_BINARY (./maka), MAKA_CRICTL (build/tools/crictl), BUSYBOX
# (/bin/busybox), CC (cc).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${KUBELET_WORK:-$repo/build/kubelet}
[ $# -gt 0 ] && handlers=("$@") || handlers=(maka runc)
maka=${MAKA_BINARY:-$repo/maka}
crictl=${MAKA_CRICTL:-$repo/build/tools/crictl}
busybox=${BUSYBOX:-/bin/busybox}
CC=${CC:-cc}
[ -x "$maka" ] || { echo "kubelet-test: $maka not built (make build)" >&2; exit 2; }
[ -x "$crictl" ] || { echo "kubelet-test: $crictl not built (make crictl)" >&2; exit 2; }
for h in "${handlers[@]}"; do
  case $h in
    maka) ;;
    runc) command -v runc > /dev/null || [ -x /usr/sbin/runc ] || { echo "kubelet-test: no runc (make deps)" >&2; exit 2; } ;;
    *) echo "kubelet-test: unknown handler $h (maka, runc)" >&2; exit 2 ;;
  esac
done
for c in containerd containerd-shim-runc-v2 ctr jq curl; do
  command -v "$c" > /dev/null || { echo "kubelet-test: no $c (make deps; curl)" >&2; exit 2; }
done
[ -x "$busybox" ] || { echo "kubelet-test: no static busybox at $busybox (apt-get install busybox-static)" >&2; exit 2; }

if [ "${KUBELET_NO_BUILD:-}" != 1 ] || [ ! -x "$work/bin/kubelet" ] || [ ! -s "$work/images.tar" ]; then
  "$here/build-kubelet.sh" "$work"
  # The images: tests/critest's builder as it is (it makes critest's whole
  # set; two are used here), its pause and nginx programs compiled as
  # tests/critest/build.sh does.
  mkdir -p "$work/bin"
  for p in pause nginx; do
    $CC -static -Os -Wall -Werror -s -o "$work/bin/$p" "$repo/tests/critest/images/$p.c"
  done
  rm -rf "$work/oci"
  python3 "$repo/tests/critest/make-images.py" "$work/oci" "$busybox" "$work/bin/pause" "$work/bin/nginx" > /dev/null
  python3 "$here/archive.py" "$work/images.tar" "$work/oci/pause.tar" "$work/oci/busybox.tar"
fi

echo "kubelet-test: $("$work/bin/kubelet" --version) against ${handlers[*]} (maka: $("$maka" --version | head -1))"
start=$(date +%s)
rm -rf "$work/results" "$work/summary.txt" "$work/summary.md"
# Only WORK is shared read-write (results go there); the guest reads the
# repository (maka, crictl, these scripts) through the host's read-only /.
KUBELET_MAKA=$maka KUBELET_CRICTL=$crictl \
  VM_ENV="KUBELET_MAKA KUBELET_CRICTL KUBELET_POD_TIMEOUT KUBELET_V KUBELET_POLICY" \
  VM_SHARE=$work VM_TIMEOUT=${KUBELET_VM_TIMEOUT:-5400} \
  "$repo/tests/vm/run.sh" bash "$here/guest.sh" "$work" "${handlers[@]}" || true
echo "kubelet-test: the guest ran $(( $(date +%s) - start )) s"

python3 "$here/pods.py" summary "$work" "${handlers[@]}"
