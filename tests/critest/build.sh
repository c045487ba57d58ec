#!/bin/bash
# tests/critest/build.sh [WORK]
#
# Builds on the host, into WORK (default build/critest), what `make critest`
# runs in the guest (tests/critest/guest.sh):
#   bin/critest   Kubernetes' CRI validation suite, cri-tools' cmd/critest
#                 (a Ginkgo test binary: `go test -c`) from the Go module
#                 proxy at CRITEST_VERSION (the Makefile passes CRICTL_VERSION:
#                 crictl and critest come from one cri-tools release);
#   bin/registry  distribution's registry (github.com/distribution/
#                 distribution/v3/cmd/registry@REGISTRY_VERSION), which serves
#                 the images in the guest;
#   bin/crane     go-containerregistry's crane (cmd/crane@CRANE_VERSION), which
#                 pushes them there;
#   bin/pause, bin/nginx, bin/nnp  the pause process, the web server
#                 stand-in and the nonewprivs program (images/*.c, static);
#   apparmor/     Debian's apparmor package unpacked (apparmor_parser and
#                 /etc/apparmor.d), for the guest's AppArmor;
#   images/       the images critest pulls, built from Debian's busybox-static
#                 (/bin/busybox) by make-images.py: NAME.tar (an OCI layout)
#                 and images.txt (where each goes in the guest's registry),
#                 each validated by bin/checklayout (go-containerregistry).
# Everything is static (CGO_ENABLED=0 for the Go programs): the guest runs
# them from the host's root, whatever it has.
#
# Environment: CRITEST_VERSION (v1.34.0), REGISTRY_VERSION (v3.1.2),
# CRANE_VERSION (v0.22.1), BUSYBOX (/bin/busybox), GO (go), CC (cc).
# A tool already built at its version is kept (go version -m).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${1:-$repo/build/critest}
GO=${GO:-go}
CC=${CC:-cc}
critest_version=${CRITEST_VERSION:-v1.34.0}
registry_version=${REGISTRY_VERSION:-v3.1.2}
crane_version=${CRANE_VERSION:-v0.22.1}
busybox=${BUSYBOX:-/bin/busybox}
log() { echo "critest-build: $*" >&2; }

[ -x "$busybox" ] || { log "no static busybox at $busybox (apt-get install busybox-static)"; exit 2; }
mkdir -p "$work/bin"
export CGO_ENABLED=0 GOTOOLCHAIN=local

# built BIN MODULE VERSION: BIN exists and Go stamped MODULE@VERSION into it.
# (The output is captured first: grep -q closing the pipe early would fail
# the pipeline under pipefail.)
built() {
  local out
  [ -x "$1" ] && out=$($GO version -m "$1" 2>/dev/null) &&
    grep -qE "^[[:space:]]+(mod|dep)[[:space:]]+$2[[:space:]]+$3([[:space:]]|\$)" <<< "$out"
}

# critest: a test binary of cri-tools' module, built inside a copy of the
# module (its own go.mod and go.sum pin every dependency, tests' included).
# A test binary built in its module says "(devel)" for the module's
# version: the version critest reports (-X below) tells whether it is kept.
# One change to its source: critest-cgroupfs.patch (containerd 1.6 cannot
# tell critest its cgroup driver; see the patch and docs/dev/critest.md).
# bin/critest.patch holds the patch's SHA-256 it was built with.
critest=$work/bin/critest
patch_file=$here/critest-cgroupfs.patch
patch_sum=$(sha256sum "$patch_file" | cut -d' ' -f1)
critest_is() {
  local out
  [ -x "$critest" ] && out=$("$critest" -version 2>/dev/null) && grep -qx "critest version: $1" <<< "$out" &&
    [ "$(cat "$critest.patch" 2>/dev/null)" = "$patch_sum" ]
}
if critest_is "$critest_version"; then
  log "critest $critest_version: kept"
else
  mod=$(GOFLAGS=-mod=mod $GO mod download -json "sigs.k8s.io/cri-tools@$critest_version" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  [ -d "$mod/cmd/critest" ] || { log "no cmd/critest in $mod"; exit 2; }
  src=$work/src/cri-tools
  rm -rf "$src"
  mkdir -p "$work/src"
  cp -r "$mod" "$src"
  chmod -R u+w "$src"
  patch -d "$src" -p1 --no-backup-if-mismatch < "$patch_file" >&2
  log "critest $critest_version: go test -c in $src (a few minutes)"
  start=$(date +%s)
  (cd "$src" && GOFLAGS=-mod=mod $GO test -c -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$critest_version" \
    -o "$critest.tmp" ./cmd/critest)
  mv "$critest.tmp" "$critest"
  echo "$patch_sum" > "$critest.patch"
  log "critest: built in $(( $(date +%s) - start )) s"
fi
critest_is "$critest_version" || { log "$critest does not report version $critest_version"; exit 1; }

# go_install BIN PACKAGE MODULE VERSION
go_install() {
  if built "$work/bin/$1" "$3" "$4"; then log "$1 $4: kept"; return 0; fi
  log "$1: go install $2@$4"
  GOBIN=$work/bin $GO install -trimpath -ldflags "-s -w" "$2@$4"
  built "$work/bin/$1" "$3" "$4" || { log "$work/bin/$1 is not $3 $4"; exit 1; }
}
go_install registry github.com/distribution/distribution/v3/cmd/registry \
  github.com/distribution/distribution/v3 "$registry_version"
go_install crane github.com/google/go-containerregistry/cmd/crane \
  github.com/google/go-containerregistry "$crane_version"

# AppArmor's parser and its /etc/apparmor.d (Debian's apparmor, unpacked,
# never installed): the guest's kernel has AppArmor, so critest's AppArmor
# specs run and load their profiles with `sudo apparmor_parser`, and
# containerd loads its default profile (cri-containerd.apparmor.d) with it.
apparmor=$work/apparmor
if [ -x "$apparmor/sbin/apparmor_parser" ]; then
  log "apparmor: kept ($("$apparmor/sbin/apparmor_parser" --version | head -1))"
else
  dl=$(mktemp -d)
  (cd "$dl" && { apt-get download -q apparmor 2>&1 | grep -v unsandboxed >&2; true; })
  ls "$dl"/apparmor_*.deb > /dev/null 2>&1 || { log "apt-get download apparmor failed"; exit 1; }
  rm -rf "$apparmor"
  dpkg -x "$dl"/apparmor_*.deb "$apparmor"
  rm -rf "$dl"
  log "apparmor: $("$apparmor/sbin/apparmor_parser" --version | head -1)"
fi

for p in pause nginx nnp; do
  $CC -static -Os -Wall -Werror -s -o "$work/bin/$p" "$here/images/$p.c"
done

rm -rf "$work/images"
python3 "$here/make-images.py" "$work/images" "$busybox" "$work/bin/pause" "$work/bin/nginx" "$work/bin/nnp" >&2

# Every image read and validated by go-containerregistry, the library crane
# pushes with (checklayout/, its own module), and its manifest digest the one
# images.txt records (guest.sh checks the pushed digest against it too).
(cd "$here/checklayout" && GOFLAGS=-mod=readonly $GO build -trimpath -o "$work/bin/checklayout" .)
check=$work/check
rm -rf "$check"
while read -r tarball _ ref digest; do
  mkdir -p "$check/${tarball%.tar}"
  tar -C "$check/${tarball%.tar}" -xf "$work/images/$tarball"
  got=$("$work/bin/checklayout" "$check/${tarball%.tar}") || { log "$ref: not a valid image"; exit 1; }
  [[ $got == *": $digest user "* ]] || { log "$ref: images.txt says $digest, the layout: $got"; exit 1; }
done < "$work/images/images.txt"
rm -rf "$check"
log "done: $(cd "$work/bin" && echo *) and $(wc -l < "$work/images/images.txt") images in $work"
