#!/usr/bin/env python3
"""tests/kubelet/archive.py OUT LAYOUT.tar...

Merges OCI image layouts (tests/critest/make-images.py's tarballs, one
manifest each, named by org.opencontainers.image.ref.name) into one OCI
archive OUT for `ctr -n k8s.io image import`, which names an image by the
annotation io.containerd.image.name (as tests/integration/cri.bats does).
Reproducible: sorted, mtime 0, owner 0:0.
"""
import io
import json
import sys
import tarfile

out, inputs = sys.argv[1], sys.argv[2:]
blobs, manifests = {}, []
for path in inputs:
    with tarfile.open(path) as t:
        index = json.load(t.extractfile("index.json"))
        for m in t.getmembers():
            if m.isfile() and m.name.startswith("blobs/"):
                blobs[m.name] = t.extractfile(m).read()
    for m in index["manifests"]:
        ref = m.get("annotations", {}).get("org.opencontainers.image.ref.name")
        if not ref:
            sys.exit("archive.py: %s: a manifest without a reference name" % path)
        m = dict(m, annotations=dict(m["annotations"], **{"io.containerd.image.name": ref}))
        manifests.append(m)
        print("archive.py: %s %s" % (ref, m["digest"]), file=sys.stderr)
files = dict(blobs)
files["index.json"] = json.dumps({"schemaVersion": 2, "manifests": manifests}, sort_keys=True).encode()
files["oci-layout"] = b'{"imageLayoutVersion":"1.0.0"}'
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for name in sorted(files):
        ti = tarfile.TarInfo(name)
        ti.size, ti.mode = len(files[name]), 0o644
        t.addfile(ti, io.BytesIO(files[name]))
