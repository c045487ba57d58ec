#!/usr/bin/env python3
"""tests/oci-validation/summary.py WORK RUNTIME...

Reads WORK/tap/RUNTIME/NAME.{tap,status,err} (guest.sh) and writes
WORK/summary.txt (per program and runtime: pass / fail / skip, and totals)
and WORK/summary.md (the same as a Markdown table, for
docs/dev/oci-validation.md), then prints summary.txt.

A program fails when it dies (exit status not 0: util.Fatal, a panic, 124
for the per-program timeout), prints a "not ok", reports an error in a YAML
diagnostic attached to no result (the lifecycle programs: poststart,
prestart_fail, hooks, ... print their error so and end with "1..0"), prints
no plan, or fewer results than its plan. It is skipped when every result is
a "# SKIP". Otherwise it passes: with results, or, for the lifecycle
programs, "1..0" and no error; process_capabilities_fail and
process_rlimits_fail pass by printing nothing (they die only when the
runtime accepts what it must refuse).
"""
import json
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


# The two programs that pass by printing nothing: they call util.Fatal (exit 1)
# only when the runtime accepts what it must refuse.
SILENT_PASS = {"process_capabilities_fail", "process_rlimits_fail"}


def parse(tap):
    """Results and the YAML diagnostics (JSON in v0.9.0) attached to them."""
    plan, results, orphans, pending = None, [], [], None
    lines = tap.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^1\.\.(\d+)", line)
        if m and plan is None:
            plan = int(m.group(1))
        elif re.match(r"^(not )?ok\b", line):
            results.append({"line": line.strip(), "nok": line.startswith("not ok"),
                            "skip": bool(re.search(r"#\s*skip", line, re.I)), "yaml": pending or {}})
            pending = None
        elif line.strip() == "---":
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "...":
                body.append(lines[i])
                i += 1
            try:
                y = json.loads("\n".join(body))
            except ValueError:
                y = {"text": "\n".join(body)}
            if not isinstance(y, dict):
                y = {"text": str(y)}
            # A block follows its result (SpecErrorOK), except in
            # RuntimeInsideValidate with a TAP, whose block (the container's
            # "stdout" and "stderr") comes before it; one attached to no
            # result is a program's own error report.
            if "stdout" in y:
                pending = y
            elif results and not results[-1]["yaml"]:
                results[-1]["yaml"] = y
            else:
                orphans.append(y)
        i += 1
    if pending is not None:
        orphans.append(pending)
    return plan, results, orphans


def first_line(v):
    v = str(v).strip()
    return v.splitlines()[0] if v else ""


def detail(y):
    parts = [first_line(y[k]) for k in ("error", "stderr") if k in y and first_line(y[k])]
    return "; ".join(parts)[:300]


def verdict(rt, name):
    base = os.path.join(work, "tap", rt, name)
    tap = read(base + ".tap")
    if tap is None:
        return {"verdict": "-", "cell": "not run", "why": "not run"}
    status = (read(base + ".status") or "? ?").split()
    rc = int(status[0]) if status[0].lstrip("-").isdigit() else None
    secs = status[1] if len(status) > 1 else "?"
    plan, results, orphans = parse(tap)
    ok = sum(1 for r in results if not r["nok"] and not r["skip"])
    nok = sum(1 for r in results if r["nok"])
    skip = sum(1 for r in results if r["skip"])
    total = ok + nok + skip
    err = [l.strip() for l in (read(base + ".err") or "").splitlines() if l.strip()]
    last_err = " | ".join(err[:3])[:400]
    counts = "%d/%s" % (ok, plan if plan is not None else "?")
    first_nok = next((r for r in results if r["nok"]), None)
    errors = [y for y in orphans if "error" in y]
    if rc == 124 or rc == 137:
        v, why = "fail", "timeout after %s s (exit %s)" % (secs, rc)
    elif rc != 0:
        v, why = "fail", "died (exit %s): %s" % (rc, last_err or "no stderr")
    elif first_nok:
        d = detail(first_nok["yaml"])
        v, why = "fail", first_nok["line"] + (" -- " + d if d else "")
    elif errors:
        v, why = "fail", "error reported without a result: " + detail(errors[0])
    elif not tap.strip() and name in SILENT_PASS:
        v, why = "pass", ""
    elif plan is None:
        v, why = "fail", "no plan: %s" % (last_err or "no output")
    elif total < plan:
        v, why = "fail", "%d of %d results" % (total, plan)
    elif total and ok == 0:
        v, why = "skip", results[0]["line"]
    else:
        v, why = "pass", ""
    if v == "fail" and rc not in (0, None):
        cell = "fail (exit %s)" % rc
    elif v == "skip":
        cell = "skip"
    elif total == 0:
        cell = v + " (no results)"
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
if "maka" in runtimes and len(runtimes) > 1:
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
