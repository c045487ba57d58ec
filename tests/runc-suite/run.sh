#!/bin/bash
# tests/runc-suite/run.sh [FILE.bats...]
#
# Runs runc's own integration suite (tests/integration of the runc module this
# project builds on) against maka, in one throw-away guest (tests/vm/run.sh),
# and prints how many of its tests pass, file by file.  `make runc-suite`.
# Never part of `make test`: the 20 core files take most of an hour under
# emulation.
#
#   - the runc module is copied from the module cache into WORK/runc (writable:
#     bats and the helpers write next to the suite) and its helper programs
#     (tests/cmd) are built on the host into tests/cmd/_bin, as runc's
#     Makefile does;
#   - its two images are built offline from Debian packages
#     (make-images.sh, cached in RUNC_SUITE_CACHE) and its get-images.sh is
#     replaced by one that prints their paths;
#   - RUNC is WORK/bin/maka-runc, maka with policy.json (what runc's tests
#     ask for: capabilities, host network for a few, hooks, a writable root);
#   - each file runs in its own bats process (guest.sh); TAP in WORK/tap;
#   - the count (summary.py) is pass / fail / skip / by design, a failure
#     being by design only when by-design.tsv names it with its floor.
#
# Environment: RUNC_SUITE_WORK (build/runc-suite), RUNC_SUITE_CACHE
# (build/fixtures/images, as `make images`), MAKA_RUNC_SUITE_FILTER (bats --filter:
# only the tests whose names match), RUNC_SUITE_RUNC (another runtime binary to
# run the suite against instead of maka, e.g. /usr/sbin/runc, for the
# side-by-side figure), RUNC_SUITE_VM_TIMEOUT (the guest's, 10800 s; make's
# VM_TIMEOUT is for the bats suite), MAKA_RUNC_SUITE_FILE_TIMEOUT (a file's,
# 1800 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${RUNC_SUITE_WORK:-$repo/build/runc-suite}
cache=${RUNC_SUITE_CACHE:-$repo/build/fixtures/images}
GO=${GO:-go}

# The 20 core files the project measures itself by (issue 14).
core=(create.bats start.bats start_detached.bats start_hello.bats run.bats state.bats
  kill.bats delete.bats exec.bats list.bats ps.bats pause.bats update.bats events.bats
  spec.bats tty.bats hooks.bats mounts.bats cgroups.bats mask.bats)
[ $# -gt 0 ] && files=("$@") || files=("${core[@]}")

maka=$repo/maka
[ -x "$maka" ] || { echo "runc-suite: $maka not built (make build)" >&2; exit 2; }
mod=$(cd "$repo" && $GO list -m -f '{{.Dir}}' github.com/opencontainers/runc)
ver=$(cd "$repo" && $GO list -m -f '{{.Version}}' github.com/opencontainers/runc)
[ -d "$mod/tests/integration" ] || { echo "runc-suite: no tests/integration in $mod" >&2; exit 2; }

rm -rf "$work/runc" "$work/tap" "$work/bin"
mkdir -p "$work/bin"
# The whole module, not only tests/: the helpers build with runc's own go.mod
# (some need modules maka does not depend on, urfave/cli v1 among them).
cp -r "$mod" "$work/runc"
chmod -R u+w "$work/runc"

# Two adaptations of the suite, for reasons that are not the runtime's (the
# same for every runtime run through this script):
#  1. setup_recvtty starts recvtty in the background and returns at once;
#     under emulation a test's first command can dial the console socket
#     before recvtty listens ("connect: no such file or directory"), whatever
#     the runtime. Wait for the socket (at most 10 s), as maka's tests do.
#  2. create.bats' fd-leak test allows the runtime's sealed binary by runc's
#     name (/runc, the overlayfs reference of CVE-2019-5736's fix); the same
#     descriptor is named /maka under maka.
patch() { # patch FILE FROM TO: exactly one replacement, or fail
  python3 - "$@" <<'PY'
import sys
f, old, new = sys.argv[1:4]
s = open(f).read()
if s.count(old) != 1:
    sys.exit("runc-suite: cannot adapt %s: %r found %d times" % (f, old, s.count(old)))
open(f, "w").write(s.replace(old, new))
PY
}
suite=$work/runc/tests/integration
patch "$suite/helpers.bash" '"$TESTBINDIR/recvtty" --pid-file "$dir/pid" --mode null "$CONSOLE_SOCKET" &) &' \
  '"$TESTBINDIR/recvtty" --pid-file "$dir/pid" --mode null "$CONSOLE_SOCKET" &) &
	local i; for i in $(seq 100); do [ -S "$CONSOLE_SOCKET" ] && break; sleep 0.1; done # maka: wait for it'
patch "$suite/create.bats" 'grep -Ex "/runc" <<<"$target"' 'grep -Ex "/(runc|maka)" <<<"$target"'

# The helper programs, as runc's `make test-binaries` builds them
# (seccompagent needs libseccomp: the seccomp tag, as maka's build).
for c in "$work"/runc/tests/cmd/*/; do
  c=$(basename "$c")
  [ "$c" = _bin ] && continue
  (cd "$work/runc" && CGO_ENABLED=1 $GO build -tags seccomp -o "tests/cmd/_bin/$c" "./tests/cmd/$c") ||
    { echo "runc-suite: could not build tests/cmd/$c" >&2; exit 1; }
done

# Images, offline; the suite's get-images.sh would download them.
"$here/make-images.sh" "$cache" > "$work/images.env"
cat > "$work/runc/tests/integration/get-images.sh" <<EOF
#!/bin/sh
# Written by maka's tests/runc-suite/run.sh: the images are built offline.
cat "$work/images.env"
EOF
chmod +x "$work/runc/tests/integration/get-images.sh"

runc=${RUNC_SUITE_RUNC:-}
if [ -z "$runc" ]; then
  cat > "$work/bin/maka-runc" <<EOF
#!/bin/sh
exec "$maka" --policy "$here/policy.json" "\$@"
EOF
else
  printf '#!/bin/sh\nexec "%s" "$@"\n' "$runc" > "$work/bin/maka-runc"
fi
chmod +x "$work/bin/maka-runc"

echo "runc-suite: runc $ver's tests/integration against ${runc:-maka ($("$maka" --version | head -1))}: ${files[*]}"
VM_SHARE=$work VM_TIMEOUT=${RUNC_SUITE_VM_TIMEOUT:-10800} "$repo/tests/vm/run.sh" bash "$here/guest.sh" "$work" "${files[@]}" || true

# The count (summary.py): pass, fail, skip (the suite's own `requires`, never
# a pass) and by design (a failing test by-design.tsv names, with the maka
# floor it meets); every other failing test is a failure.
python3 "$here/summary.py" "$work" "$here/by-design.tsv" "${files[@]}" | tee "$work/summary.txt"
