#!/usr/bin/env python3
"""tests/critest/make-images.py OUT BUSYBOX PAUSE NGINX NNP

Builds, offline and without an engine, the images critest (cri-tools
v1.34.0, pkg/validate and pkg/framework) pulls, as OCI image layouts, each
tarred into OUT/NAME.tar, and writes OUT/images.txt: one line per image,
"NAME.tar REPOSITORY:TAG ORIGINAL-REFERENCE", where REPOSITORY:TAG is the
path under the guest's registry that containerd's mirror of the original
registry asks for (the reference without its host).

  BUSYBOX  a static busybox (Debian's busybox-static, /bin/busybox)
  PAUSE    the pod sandbox's process (images/pause.c, static)
  NGINX    the web server stand-in (images/nginx.c, static)
  NNP      the nonewprivs program (images/nnp.c, static)

The images, for what critest checks in them (docs/dev/critest.md):
  registry.k8s.io/pause:3.6                 containerd 1.6's sandbox_image: /pause
  registry.k8s.io/e2e-test-images/busybox:1.29-2
                                            critest's default container image: busybox
                                            (every applet a hard link in /bin; pgrep and ipcs,
                                            which Debian's lacks, as shell stand-ins),
                                            Cmd ["sh"]
  registry.k8s.io/e2e-test-images/nginx:1.14-2
  gcr.io/k8s-staging-cri-tools/hostnet-nginx-amd64
                                            busybox plus the nginx stand-in on port 80
                                            (the hostnet one: 12003)
  registry.k8s.io/e2e-test-images/httpd:2.4.39-4
                                            busybox plus the nginx stand-in on port 80,
                                            started by httpd-foreground after a line
                                            naming httpd on stderr
  registry.k8s.io/e2e-test-images/nonewprivs:1.3
                                            busybox plus /usr/local/bin/nnp, setuid
                                            root, the entrypoint: prints its euid
  gcr.io/k8s-staging-cri-tools/test-image-*  cri-tools' images/build: busybox plus an
                                            empty file /NAME (distinct images), or the
                                            same image under three tags, or a USER
  gcr.io/k8s-staging-cri-tools/test-image-predefined-group
                                            USER 1000, in group 50000 in /etc/group

Not built: test-image-digest (critest pulls it by the digest of the image
cri-tools published; no image built here has it) and the Windows images.

Every tar is reproducible: the same inputs give the same bytes (mtime 0,
owner 0:0, sorted; layers gzipped with mtime 0), so digests are stable from one build to the next, and
the three test-image-tags tags name one image.
"""
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile

out, busybox, pause, nginx, nnp = sys.argv[1:6]
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
STAGING = "gcr.io/k8s-staging-cri-tools/"
E2E = "registry.k8s.io/e2e-test-images/"

# /etc/passwd and /etc/group of docker's busybox image (as
# tests/runc-suite/make-images.sh writes them).
PASSWD = """root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
"""
GROUP = """root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:32:
www-data:x:33:
operator:x:37:
utmp:x:43:
plugdev:x:46:
staff:x:50:
lock:x:54:
netdev:x:82:
users:x:100:
nogroup:x:65534:
"""


class Layer:
    """A tar layer built in memory, entries in the order added (parents first)."""

    def __init__(self):
        self.entries = {}

    def dir(self, path, mode=0o755):
        self.entries[path] = ("dir", mode, None)

    def file(self, path, data, mode=0o644):
        self.entries[path] = ("file", mode, data)

    def link(self, path, target):
        self.entries[path] = ("sym", 0o777, target)

    def hardlink(self, path, target):
        self.entries[path] = ("hard", 0o755, target)

    def bytes(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            # Hard links after everything else: their targets come first.
            for path in sorted(self.entries, key=lambda p: (self.entries[p][0] == "hard", p)):
                kind, mode, data = self.entries[path]
                ti = tarfile.TarInfo(path)
                ti.mode, ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = mode, 0, 0, 0, "", ""
                if kind == "dir":
                    ti.type = tarfile.DIRTYPE
                    t.addfile(ti)
                elif kind == "sym":
                    ti.type, ti.linkname = tarfile.SYMTYPE, data
                    t.addfile(ti)
                elif kind == "hard":
                    ti.type, ti.linkname = tarfile.LNKTYPE, data
                    t.addfile(ti)
                else:
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
        return buf.getvalue()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def busybox_layer():
    applets = subprocess.run([busybox, "--list"], check=True, capture_output=True,
                             text=True).stdout.split()
    if "sh" not in applets:
        sys.exit("make-images: %s has no sh applet" % busybox)
    l = Layer()
    for d in ("bin", "dev", "etc", "home", "proc", "sys", "usr", "usr/sbin", "var", "var/spool",
              "var/spool/mail", "var/www", "var/run"):
        l.dir(d)
    l.dir("tmp", 0o1777)
    l.dir("root", 0o700)
    l.file("bin/busybox", read(busybox), 0o755)
    # Hard links, as in docker's busybox image: critest's MaskedPaths spec
    # masks /bin/ls and expects sh to run on (a symlink would mask busybox).
    for a in applets:
        if a != "busybox":
            l.hardlink("bin/" + a, "bin/busybox")
    l.file("etc/passwd", PASSWD.encode())
    l.file("etc/group", GROUP.encode())
    # Debian's busybox-static has no pgrep and no ipcs applet, which docker's
    # busybox has and critest runs: small stand-ins (see their text).
    for a in ("pgrep", "ipcs"):
        if a not in applets:
            l.file("bin/" + a, STANDINS[a].encode(), 0o755)
    return l.bytes()


STANDINS = {
    # critest: `sh -c "pgrep sleep || true"` (execSync with timeout: the
    # timed-out exec's sleep must be gone).
    "pgrep": """#!/bin/sh
# pgrep PATTERN: a stand-in (tests/critest/make-images.py) for busybox's
# pgrep, which Debian's busybox-static lacks: the PIDs of the processes whose
# name (comm) matches the extended regular expression PATTERN, exit 1 if none.
[ $# -eq 1 ] || { echo "usage: pgrep PATTERN (stand-in: no options)" >&2; exit 2; }
rc=1
for d in /proc/[0-9]*; do
  { read -r comm < "$d/comm"; } 2>/dev/null || continue
  if echo "$comm" | grep -Eq -- "$1"; then echo "${d#/proc/}"; rc=0; fi
done
exit $rc
""",
    # critest: `ipcs -m` (HostIpc: the host's segment id is listed, or not).
    "ipcs": """#!/bin/sh
# ipcs -m: a stand-in (tests/critest/make-images.py) for busybox's ipcs,
# which Debian's busybox-static lacks: the System V shared memory segments
# of this IPC namespace, from /proc/sysvipc/shm, in util-linux's layout.
[ "$*" = "-m" ] || { echo "usage: ipcs -m (stand-in: shared memory only)" >&2; exit 2; }
echo ""
echo "------ Shared Memory Segments --------"
echo "key        shmid      owner      perms      bytes      nattch     status"
tail -n +2 /proc/sysvipc/shm | while read -r key shmid perms size cpid lpid nattch uid rest; do
  printf '0x%08x %-10s %-10s %-10s %-10s %-10s\\n' "$key" "$shmid" "$uid" "$perms" "$size" "$nattch"
done
echo ""
""",
}


def blob(layout, data):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", d), "wb") as f:
        f.write(data)
    return "sha256:" + d, len(data)


def image(name, ref, layers, config):
    """Writes OUT/NAME.tar (an OCI layout, one manifest) for ref."""
    layout = os.path.join(out, name + ".layout")
    if os.path.exists(layout):
        subprocess.run(["rm", "-rf", layout], check=True)
    os.makedirs(os.path.join(layout, "blobs", "sha256"))
    descs, diff_ids = [], []
    for data in layers:
        # gzip (mtime 0: reproducible); the diff_id is the uncompressed tar's.
        dg, size = blob(layout, gzip.compress(data, compresslevel=6, mtime=0))
        descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": dg, "size": size})
        diff_ids.append("sha256:" + hashlib.sha256(data).hexdigest())
    cfg = {"architecture": ARCH, "os": "linux", "config": config,
           "rootfs": {"type": "layers", "diff_ids": diff_ids},
           "history": [{"created_by": "tests/critest/make-images.py (maka)"}] * len(layers)}
    cdg, csize = blob(layout, json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode())
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cdg, "size": csize},
                "layers": descs}
    mdg, msize = blob(layout, json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode())
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": mdg,
                            "size": msize, "annotations": {"org.opencontainers.image.ref.name": ref}}]}
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(index, f, sort_keys=True, separators=(",", ":"))
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    tar = os.path.join(out, name + ".tar")
    with tarfile.open(tar, "w", format=tarfile.PAX_FORMAT) as t:
        for root, dirs, files in os.walk(layout):
            dirs.sort()
            for fn in sorted(files):
                p = os.path.join(root, fn)
                ti = t.gettarinfo(p, os.path.relpath(p, layout))
                ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname, ti.mode = 0, 0, 0, "", "", 0o644
                with open(p, "rb") as f:
                    t.addfile(ti, f)
    subprocess.run(["rm", "-rf", layout], check=True)
    return mdg


def mirror_path(ref):
    """registry.k8s.io/e2e-test-images/busybox:1.29-2 -> e2e-test-images/busybox:1.29-2"""
    host, rest = ref.split("/", 1)
    if ":" not in rest.rsplit("/", 1)[-1]:
        rest += ":latest"
    return rest


os.makedirs(out, exist_ok=True)
base = busybox_layer()
cmd_sh = {"Env": [PATH_ENV], "Cmd": ["sh"]}
listing = []


def add(name, ref, layers, config):
    dg = image(name, ref, layers, config)
    listing.append("%s.tar %s %s %s" % (name, mirror_path(ref), ref, dg))


# The pod sandbox image: containerd 1.6.20's default sandbox_image (the
# containerd config in tests/critest names it too).
p = Layer()
p.file("pause", read(pause), 0o755)
add("pause", "registry.k8s.io/pause:3.6", [p.bytes()], {"Env": [PATH_ENV], "Entrypoint": ["/pause"]})

add("busybox", E2E + "busybox:1.29-2", [base], cmd_sh)


def nginx_layer(port):
    l = Layer()
    for d in ("usr", "usr/sbin", "usr/share", "usr/share/nginx", "usr/share/nginx/html", "var", "var/run",
              "var/log", "var/log/nginx"):
        l.dir(d)
    l.file("usr/sbin/nginx", read(nginx), 0o755)
    l.file("usr/share/nginx/html/index.html", b"<!DOCTYPE html>\n<title>Welcome to nginx!</title>\n")
    return l.bytes()


for name, ref, port in (("nginx", E2E + "nginx:1.14-2", 80),
                        ("hostnet-nginx", STAGING + "hostnet-nginx-" + ARCH, 12003)):
    add(name, ref, [base, nginx_layer(port)],
        {"Env": [PATH_ENV, "NGINX_PORT=%d" % port], "Cmd": ["nginx", "-g", "daemon off;"],
         "ExposedPorts": {"%d/tcp" % port: {}}, "StopSignal": "SIGQUIT"})


# httpd (the Multiple Containers specs): served on port 80 (the page's
# status is checked), "httpd" in the container's log, `echo` for exec. The
# nginx stand-in serves, after a line on stderr as httpd's own first line
# (AH00558 ...) would be.
h = Layer()
for d in ("usr", "usr/local", "usr/local/bin", "usr/sbin", "var", "var/run"):
    h.dir(d)
h.file("usr/sbin/nginx", read(nginx), 0o755)
h.file("usr/local/bin/httpd-foreground",
       b"#!/bin/sh\necho 'httpd: a stand-in for critest (maka): the nginx stand-in on port 80' >&2\n"
       b"exec /usr/sbin/nginx\n", 0o755)
add("httpd", E2E + "httpd:2.4.39-4", [base, h.bytes()],
    {"Env": [PATH_ENV, "NGINX_PORT=80"], "Cmd": ["httpd-foreground"], "ExposedPorts": {"80/tcp": {}}})


# nonewprivs (Kubernetes' test/images/nonewprivs): nnp setuid root, the
# entrypoint.
n = Layer()
for d in ("usr", "usr/local", "usr/local/bin"):
    n.dir(d)
n.file("usr/local/bin/nnp", read(nnp), 0o4755)
add("nonewprivs", E2E + "nonewprivs:1.3", [base, n.bytes()],
    {"Env": [PATH_ENV], "Entrypoint": ["/usr/local/bin/nnp"]})


def marked(file_name):
    l = Layer()
    l.file(file_name, b"")
    return l.bytes()


# cri-tools' images/build: image-test with ARG TEST (ADD $TEST $TEST: an empty
# file at /$TEST), one image per name; test-image-tags: one image (file
# same-image) under tags 1, 2, 3; test-image-tag: one image per tag (test, all).
for n in ("test-image-1", "test-image-2", "test-image-3", "test-image-latest"):
    add(n, STAGING + n + ":latest", [base, marked(n)], cmd_sh)
same = marked("same-image")
for tag in ("1", "2", "3"):
    add("test-image-tags-" + tag, STAGING + "test-image-tags:" + tag, [base, same], cmd_sh)
for tag in ("test", "all"):
    add("test-image-tag-" + tag, STAGING + "test-image-tag:" + tag, [base, marked(tag)], cmd_sh)

# image-user with ARG USER.
for n, user in (("test-image-user-uid", "1002"), ("test-image-user-username", "www-data"),
                ("test-image-user-uid-group", "1003:1004"), ("test-image-user-username-group", "www-data:1004")):
    add(n, STAGING + n + ":latest", [base], {"Env": [PATH_ENV], "Cmd": ["sh"], "User": user})

# image-predefined-group: adduser -u 1000 -D default-user; addgroup -g 50000
# group-defined-in-image; addgroup default-user group-defined-in-image; USER 1000.
g = Layer()
g.file("etc/passwd", (PASSWD + "default-user:x:1000:1000::/home/default-user:/bin/sh\n").encode())
g.file("etc/group", (GROUP + "default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n").encode())
g.dir("home/default-user")
add("test-image-predefined-group", STAGING + "test-image-predefined-group:latest", [base, g.bytes()],
    {"Env": [PATH_ENV], "Cmd": ["sh"], "User": "1000"})

with open(os.path.join(out, "images.txt"), "w") as f:
    f.write("\n".join(listing) + "\n")
print("make-images: %d images in %s" % (len(listing), out))
