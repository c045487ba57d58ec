#!/usr/bin/env python3
"""tests/oci-validation/summary.py WORK RUNTIME...

Reads WORK/tap/RUNTIME/NAME.{tap,status,err} (guest.sh) and writes
WORK/summary.txt (per program and runtime: pass / fail / skip, and totals)
and WORK/summary.md (the same as a Markdown table, for
docs/dev/oci-validation.md), then prints summary.txt.

A program passes when it exits 0, prints a plan, as many results as the plan
says, no "not ok", and at least one "ok" that is not "# SKIP". It is skipped
when every result is a "# SKIP" (and it exits 0 with its plan). Anything else
fails: a "not ok", a program that dies (exit status not 0, 124 for the
per-program timeout), no plan, fewer results than the plan.
"""
import os
import re
import sys

work, runtimes = sys.argv[1], sys.argv[2:]


def program_names():
    names = set()
    for rt in runtimes:
        d = os.path.join(work, "tap", rt)
        if os.path.isdir(d):
            names |= {f[:-4] for f in os.listdir(d) if f.endswith(".tap")}
    return sorted(names)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def verdict(rt, name):
    base = os.path.join(work, "tap", rt, name)
    tap = read(base + ".tap")
    if tap is None:
        return {"verdict": "-", "cell": "not run", "why": "not run"}
    status = (read(base + ".status") or "? ?").split()
    rc = int(status[0]) if status[0].lstrip("-").isdigit() else None
    secs = status[1] if len(status) > 1 else "?"
    plan = None
    ok = nok = skip = 0
    first_nok = None
    for line in tap.splitlines():
        m = re.match(r"^1\.\.(\d+)", line)
        if m and plan is None:
            plan = int(m.group(1))
        elif line.startswith("not ok"):
            nok += 1
            first_nok = first_nok or line.strip()
        elif line.startswith("ok"):
            if re.search(r"#\s*skip", line, re.I):
                skip += 1
            else:
                ok += 1
    total = ok + nok + skip
    err = [l.strip() for l in (read(base + ".err") or "").splitlines() if l.strip()]
    last_err = " | ".join(err[:3])[:400]
    counts = "%d/%s" % (ok, plan if plan is not None else "?")
    if rc == 124 or rc == 137:
        v, why = "fail", "timeout after %s s (exit %s)" % (secs, rc)
    elif rc != 0:
        v, why = "fail", first_nok or "died (exit %s): %s" % (rc, last_err or "no stderr")
    elif plan is None:
        v, why = "fail", first_nok or "no plan: %s" % (last_err or "no output")
    elif nok:
        v, why = "fail", first_nok
    elif total < plan:
        v, why = "fail", "%d of %d results" % (total, plan)
    elif ok == 0 and skip:
        v, why = "skip", tap.splitlines()[1].strip() if len(tap.splitlines()) > 1 else "skip"
    elif ok == 0:
        v, why = "fail", "no result"
    else:
        v, why = "pass", ""
    if v == "fail" and rc not in (0, None):
        cell = "fail %s (exit %s)" % (counts, rc)
    elif v == "skip":
        cell = "skip"
    else:
        cell = "%s %s" % (v, counts)
    return {"verdict": v, "cell": cell, "why": why, "ok": ok, "nok": nok, "skip": skip,
            "secs": secs, "rc": rc}


names = program_names()
res = {(rt, n): verdict(rt, n) for rt in runtimes for n in names}

lines = []
w = max([len(n) for n in names] + [7])
lines.append("%-*s  %s" % (w, "program", "  ".join("%-22s" % rt for rt in runtimes)))
for n in names:
    lines.append("%-*s  %s" % (w, n, "  ".join("%-22s" % res[(rt, n)]["cell"] for rt in runtimes)))
lines.append("")
for rt in runtimes:
    vs = [res[(rt, n)] for n in names]
    c = {k: sum(1 for v in vs if v["verdict"] == k) for k in ("pass", "fail", "skip", "-")}
    tests = [sum(v.get(k, 0) for v in vs) for k in ("ok", "nok", "skip")]
    lines.append("%s: programs %d pass, %d fail, %d skip%s of %d; TAP results %d ok, %d not ok, %d skip"
                 % (rt, c["pass"], c["fail"], c["skip"], ", %d not run" % c["-"] if c["-"] else "",
                    len(names), *tests))
lines.append("")
lines.append("failures (first failing TAP line, or how the program ended):")
for rt in runtimes:
    for n in names:
        r = res[(rt, n)]
        if r["verdict"] == "fail":
            lines.append("  %s %s: %s" % (rt, n, r["why"]))
if "maka" in runtimes:
    others = [rt for rt in runtimes if rt != "maka"]
    lines.append("")
    lines.append("maka fails where %s pass(es):" % " or ".join(others))
    for n in names:
        if res[("maka", n)]["verdict"] == "fail" and any(res[(o, n)]["verdict"] == "pass" for o in others):
            lines.append("  %s (%s): %s" % (n, ", ".join("%s %s" % (o, res[(o, n)]["verdict"]) for o in others),
                                            res[("maka", n)]["why"]))
text = "\n".join(lines) + "\n"
with open(os.path.join(work, "summary.txt"), "w") as f:
    f.write(text)

md = ["| program | " + " | ".join(runtimes) + " |", "| --- |" + " --- |" * len(runtimes)]
for n in names:
    md.append("| %s | %s |" % (n, " | ".join(res[(rt, n)]["cell"] for rt in runtimes)))
tot = []
for rt in runtimes:
    vs = [res[(rt, n)] for n in names]
    tot.append("**%d pass, %d fail, %d skip**" % tuple(sum(1 for v in vs if v["verdict"] == k)
                                                      for k in ("pass", "fail", "skip")))
md.append("| **programs** | " + " | ".join(tot) + " |")
with open(os.path.join(work, "summary.md"), "w") as f:
    f.write("\n".join(md) + "\n")
sys.stdout.write(text)
