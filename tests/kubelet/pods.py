#!/usr/bin/env python3
"""tests/kubelet/pods.py ready PODS.JSON
   tests/kubelet/pods.py summary WORK HANDLER...

ready: in the guest (guest.sh), reads the kubelet's /pods and exits 0 when
every static pod is where the checks look at it: "shared" Running and Ready
with both containers ready, "liveness" restarted at least once, both
containers of "term" terminated; else prints what is missing and exits 1.

summary: on the host, reads WORK/results/HANDLER/ (what guest.sh collected)
and judges each check per handler; writes WORK/summary.txt and
WORK/summary.md (the table maka vs runc) and exits 1 if any check failed
under any handler, 2 if a handler has no results at all.
"""
import json
import os
import re
import sys

NAMESPACE = "default"
NODE = "maka-node"  # guest.sh's --hostname-override: a static pod is NAME-NODE


def load_pods(path):
    with open(path) as f:
        items = json.load(f).get("items") or []
    return {p["metadata"]["name"]: p for p in items}


def pod(pods, name):
    return pods.get("%s-%s" % (name, NODE))


def cstatus(p, name):
    for c in (p or {}).get("status", {}).get("containerStatuses") or []:
        if c["name"] == name:
            return c
    return None


def condition(p, kind):
    for c in (p or {}).get("status", {}).get("conditions") or []:
        if c["type"] == kind:
            return c.get("status")
    return None


def terminated(p, name):
    c = cstatus(p, name)
    return (c or {}).get("state", {}).get("terminated")


def ready(path):
    pods = load_pods(path)
    missing = []
    s = pod(pods, "shared")
    if not s or s.get("status", {}).get("phase") != "Running" or condition(s, "Ready") != "True":
        missing.append("shared: %s, Ready %s" % ((s or {}).get("status", {}).get("phase"), condition(s, "Ready")))
    for c in ("writer", "reader"):
        if not (cstatus(s, c) or {}).get("ready"):
            missing.append("shared/%s not ready" % c)
    lv = cstatus(pod(pods, "liveness"), "unhealthy")
    if not lv or lv.get("restartCount", 0) < 1:
        missing.append("liveness/unhealthy: restartCount %s" % (lv or {}).get("restartCount"))
    t = pod(pods, "term")
    for c in ("exits", "fromlogs"):
        if not terminated(t, c):
            missing.append("term/%s not terminated" % c)
    print("\n".join(missing) or "all pods ready")
    return 0 if not missing else 1


# crictl's warning when it has no config file (guest.sh gives it one; the
# first run's outputs have it mixed in).
CRICTL_WARNING = re.compile(r'^time="[^"]*" level=warning msg="Config .*\n', re.M)


def read(res, name):
    try:
        with open(os.path.join(res, name), errors="replace") as f:
            return CRICTL_WARNING.sub("", f.read())
    except OSError:
        return None


def exec_out(res, name):
    """Output of a crictl exec guest.sh saved, and its exit status."""
    text = read(res, name)
    if text is None:
        return None, None
    # guest.sh appends "exit N" right after the output, which may not end
    # in a newline (cat of a downwardAPI file).
    m = re.search(r"exit (\d+)\n?\Z", text)
    if not m:
        return text, None
    return text[:m.start()].rstrip("\n"), int(m.group(1))


def judge(res, handler):
    """[(check, ok, detail)] for one handler's results."""
    checks = []

    def check(name, ok, detail=""):
        checks.append((name, bool(ok), detail))

    pj = os.path.join(res, "pods.json")
    if not os.path.exists(pj):
        check("the kubelet served /pods", False, "no pods.json")
        return checks
    pods = load_pods(pj)
    klog = read(res, "kubelet.log") or ""
    st = (read(res, "ready.status") or "").split()
    check("every pod reached its state (pods.py ready)", st[:1] == ["1"],
          "after %s s" % st[-1] if st else "no ready.status")

    # The runtime containerd used for the pods.
    try:
        info = json.loads(read(res, "shared-pod.json") or "").get("info", {})
        binary = (info.get("runtimeOptions") or {}).get("binary_name", "")
        check("the pod sandbox ran under the handler's binary", os.path.basename(binary) == handler,
              "runtimeHandler %r, runtimeType %s, binary %s" % (info.get("runtimeHandler"), info.get("runtimeType"), binary))
    except (OSError, ValueError) as e:
        check("the pod sandbox ran under the handler's binary", False, str(e))

    s = pod(pods, "shared")
    status = (s or {}).get("status", {})
    check("shared: Running, Ready", status.get("phase") == "Running" and condition(s, "Ready") == "True",
          "phase %s, Ready %s" % (status.get("phase"), condition(s, "Ready")))
    for c in ("writer", "reader"):
        cs = cstatus(s, c) or {}
        check("shared/%s: ready, running, restartCount 0" % c,
              cs.get("ready") and "running" in cs.get("state", {}) and cs.get("restartCount") == 0,
              "ready %s, state %s, restartCount %s" % (cs.get("ready"), list(cs.get("state", {})), cs.get("restartCount")))
    shared_pod = "%s/shared-%s" % (NAMESPACE, NODE)
    probe = lambda kind, result, pod_name, container: len(re.findall(
        r'"Probe %s" probeType="%s" pod="%s" podUID="[^"]*" containerName="%s"' % (result, kind, re.escape(pod_name), container), klog))
    ok_l, bad_l = probe("Liveness", "succeeded", shared_pod, "writer"), probe("Liveness", "failed", shared_pod, "writer")
    check("shared/writer: exec liveness probe succeeds, never fails", ok_l > 0 and bad_l == 0,
          "kubelet log: %d succeeded, %d failed" % (ok_l, bad_l))
    ok_r = probe("Readiness", "succeeded", shared_pod, "writer")
    check("shared/writer: exec readiness probe succeeds", ok_r > 0, "kubelet log: %d succeeded" % ok_r)

    msg, rc = exec_out(res, "reader.msg")
    seen, rc2 = exec_out(res, "writer.seen")
    check("emptyDir shared: reader reads writer's file, writer reads reader's",
          rc == 0 and rc2 == 0 and msg and msg.startswith("from writer on ") and seen == msg,
          "reader: %r (exit %s); writer: %r (exit %s)" % (msg, rc, seen, rc2))

    ip = status.get("podIP")
    for c in ("writer", "reader"):
        hosts, rc = exec_out(res, c + ".hosts")
        name, _ = exec_out(res, c + ".hostname")
        check("%s: /etc/hosts is the kubelet's, with the pod's IP and name" % c,
              rc == 0 and hosts and "Kubernetes-managed hosts file" in hosts and ip and
              re.search(r"^%s\s+shared-%s$" % (re.escape(ip), NODE), hosts, re.M) and name == "shared-" + NODE,
              "podIP %s, hostname %r, exit %s" % (ip, name, rc))
        resolv, rc = exec_out(res, c + ".resolv")
        want = ["nameserver 10.96.0.10", "search default.svc.cluster.local svc.cluster.local cluster.local node.example",
                "options ndots:5"]
        check("%s: /etc/resolv.conf is the cluster's (clusterDNS, search, ndots:5)" % c,
              rc == 0 and resolv is not None and all(w in resolv.split("\n") for w in want),
              "%r" % resolv)
    nsv, rc = exec_out(res, "writer.sa-namespace")
    pn, rc2 = exec_out(res, "writer.sa-pod-name")
    check("writer: service-account-like files (a downwardAPI volume at its path)",
          rc == 0 and nsv == NAMESPACE and rc2 == 0 and pn == "shared-" + NODE, "namespace %r, pod-name %r" % (nsv, pn))
    out, rc = exec_out(res, "writer.sa-write")
    check("writer: that volume is read-only", rc not in (None, 0) and "Read-only file system" in (out or ""),
          "touch: exit %s %r" % (rc, out))
    out, rc = exec_out(res, "writer.termlog")
    check("writer: /dev/termination-log is there and writable", rc == 0 and out == "probe", "exit %s %r" % (rc, out))

    ns = {}
    for line in (read(res, "ns.txt") or "").split("\n"):
        f = line.split()
        if len(f) == 3:
            ns[(f[0], f[1])] = f[2]
    for c in ("writer", "reader"):
        same = [k for k in ("net", "ipc", "uts") if ns.get((c, k)) and ns.get((c, k)) == ns.get(("pause", k))]
        own = [k for k in ("pid", "mnt") if ns.get((c, k)) and ns.get(("pause", k)) and ns.get((c, k)) != ns.get(("pause", k))]
        check("%s: the pause container's net, ipc, uts namespaces; its own pid, mnt" % c,
              same == ["net", "ipc", "uts"] and own == ["pid", "mnt"],
              "shared %s, own %s" % (same, own))

    lv = cstatus(pod(pods, "liveness"), "unhealthy") or {}
    live_pod = "%s/liveness-%s" % (NAMESPACE, NODE)
    fails = probe("Liveness", "failed", live_pod, "unhealthy")
    killed = len(re.findall(r"Container unhealthy failed liveness probe, will be restarted", klog))
    check("liveness/unhealthy: a failing exec liveness probe restarts it",
          lv.get("restartCount", 0) >= 1 and fails > 0 and killed > 0,
          "restartCount %s; kubelet log: %d probe failures, %d restarts ordered" % (lv.get("restartCount"), fails, killed))

    t = pod(pods, "term")
    te = terminated(t, "exits") or {}
    check("term/exits: exit 3, message from /dev/termination-log",
          te.get("exitCode") == 3 and (te.get("message") or "").strip() == "exit message from the termination log",
          "exitCode %s, message %r" % (te.get("exitCode"), te.get("message")))
    tl = terminated(t, "fromlogs") or {}
    check("term/fromlogs: exit 4, message from the log (FallbackToLogsOnError)",
          tl.get("exitCode") == 4 and (tl.get("message") or "").strip() == "last line of the log",
          "exitCode %s, message %r" % (tl.get("exitCode"), tl.get("message")))
    check("term: phase Failed", (t or {}).get("status", {}).get("phase") == "Failed",
          "phase %s" % (t or {}).get("status", {}).get("phase"))

    clog = read(res, "containerd.log")
    if handler == "maka":
        rejected = len(re.findall("BOUNDARY_REJECTED", clog or ""))
        check("maka refused nothing (containerd's log: no BOUNDARY_REJECTED)", clog is not None and rejected == 0,
              "%d refusals" % rejected if clog is not None else "no containerd.log")
    return checks


def summary(work, handlers):
    per = {}
    status = 0
    for h in handlers:
        res = os.path.join(work, "results", h)
        if not os.path.isdir(res):
            per[h] = None
            status = 2
            continue
        per[h] = judge(res, h)
    names = []
    for h in handlers:
        for c in per[h] or []:
            if c[0] not in names:
                names.append(c[0])
    lines_txt, lines_md = [], ["| check | " + " | ".join(handlers) + " |", "| --- |" + " --- |" * len(handlers)]
    failed = 0
    for n in names:
        row = []
        for h in handlers:
            r = [c for c in per[h] or [] if c[0] == n]
            row.append("pass" if r and r[0][1] else ("FAIL" if r else "-"))
            if r and not r[0][1]:
                failed += 1
        lines_md.append("| %s | %s |" % (n, " | ".join(row)))
        lines_txt.append("%-78s %s" % (n, "  ".join("%-5s" % x for x in row)))
    details = []
    for h in handlers:
        if per[h] is None:
            details.append("%s: no results (WORK/results/%s missing)" % (h, h))
            continue
        for n, ok, d in per[h]:
            details.append("%s %s %s: %s" % (h, "pass" if ok else "FAIL", n, d))
    text = "%-78s %s\n" % ("check", "  ".join("%-5s" % h for h in handlers)) + "\n".join(lines_txt) + "\n\n" + "\n".join(details) + "\n"
    with open(os.path.join(work, "summary.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(work, "summary.md"), "w") as f:
        f.write("\n".join(lines_md) + "\n")
    sys.stdout.write(text)
    total = sum(len(per[h] or []) for h in handlers)
    print("%d passed, %d failed" % (total - failed, failed))
    if failed and not status:
        status = 1
    return status


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "ready":
        sys.exit(ready(sys.argv[2]))
    if len(sys.argv) >= 4 and sys.argv[1] == "summary":
        sys.exit(summary(sys.argv[2], sys.argv[3:]))
    sys.exit(__doc__)
