#!/bin/bash
# tests/kubelet/build-kubelet.sh [WORK]
#
# Builds Kubernetes' kubelet from the Go module proxy into WORK/bin/kubelet
# (default build/kubelet), static (CGO_ENABLED=0). k8s.io/kubernetes is not
# meant to be a dependency: its go.mod replaces every k8s.io staging module
# with ./staging/src/..., which a dependent cannot use. So WORK/mod is a
# small module that requires k8s.io/kubernetes at KUBELET_VERSION and
# replaces each staging module with its published release of the same minor
# (v1.34.4 -> v0.34.4), the usual way to build Kubernetes' commands out of
# tree. A kubelet already built at its version is kept (go version -m).
#
# Environment: KUBELET_VERSION (v1.34.4: the newest served 1.34; kubelet
# 1.34 still supports containerd 1.x, which Debian's 1.6.20 in the guest
# is), GO (go). The build cache is kept (a cold build takes a long while on
# two cores).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${1:-$repo/build/kubelet}
GO=${GO:-go}
version=${KUBELET_VERSION:-v1.34.4}
log() { echo "kubelet-build: $*" >&2; }
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod

[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { log "KUBELET_VERSION $version is not v1.MINOR.PATCH"; exit 2; }
minor=${BASH_REMATCH[1]}
staging_version=v0.$minor.${BASH_REMATCH[2]}
bin=$work/bin/kubelet

out=
if [ -x "$bin" ]; then out=$($GO version -m "$bin" 2>/dev/null || true); fi
if grep -qE "^[[:space:]]+(mod|dep)[[:space:]]+k8s.io/kubernetes[[:space:]]+$version([[:space:]]|\$)" <<< "$out"; then
  log "kubelet $version: kept"
  exit 0
fi

mod=$work/mod
mkdir -p "$mod" "$work/bin"
# The staging modules, from k8s.io/kubernetes' own go.mod at that version.
gomod=$($GO mod download -json "k8s.io/kubernetes@$version" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$gomod")
[ "${#staging[@]}" -gt 20 ] || { log "no staging replaces in $gomod"; exit 1; }
{
  echo "module maka.test/kubelet-build"
  echo
  echo "go 1.24.0"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "replace ("
  for m in "${staging[@]}"; do echo "	$m => $m $staging_version"; done
  echo ")"
} > "$mod/go.mod"
cat > "$mod/tools.go" <<'GO'
//go:build tools

// Package tools only records that this module builds kubelet.
package tools

import _ "k8s.io/kubernetes/cmd/kubelet"
GO
rm -f "$mod/go.sum"
log "kubelet $version (staging $staging_version): go mod tidy in $mod"
(cd "$mod" && $GO mod tidy)
log "kubelet $version: go build (long on two cores; the build cache is kept)"
start=$(date +%s)
pkg=k8s.io/component-base/version
(cd "$mod" && $GO build -trimpath -o "$bin.tmp" -ldflags "-s -w \
  -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor \
  -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z" \
  k8s.io/kubernetes/cmd/kubelet)
mv "$bin.tmp" "$bin"
log "kubelet: built in $(( $(date +%s) - start )) s: $("$bin" --version)"
