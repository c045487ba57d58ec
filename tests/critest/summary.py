#!/usr/bin/env python3
"""tests/critest/summary.py WORK HANDLER...

Reads critest's Ginkgo JSON reports WORK/results/HANDLER.json (guest.sh,
one per runtime handler) and writes WORK/summary.txt, every spec with its
verdict per handler side by side and the totals, then the failures (first
line of each message, and where), then the specs maka fails and runc passes;
and WORK/summary.md (the table in Markdown, for docs/dev/critest.md). Prints
summary.txt.

A spec's verdict:
  pass      Ginkgo's "passed";
  FAIL      failed, panicked, timed out, interrupted or aborted (which one
            is said when it is not "failed");
  skip      the spec skipped itself (Ginkgo's Skip: no AppArmor, no
            SELinux, a feature the runtime does not report, ...), with its
            message;
  excluded  not run because exclude.txt (or CRITEST_SKIP) says so: the
            reasons are listed;
  -         not run: outside CRITEST_FOCUS, or no report for the handler
            (critest died: the status and the log's tail say why).
critest's benchmarks (skipped by critest itself outside -benchmark) are
left out of the table and counted once.
"""
import json
import os
import re
import sys

work, handlers = sys.argv[1], sys.argv[2:] or ["maka", "runc"]
res_dir = os.path.join(work, "results")


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def exclusions():
    out = []
    for line in (read(os.path.join(res_dir, "exclude.txt")) or "").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        rx, _, why = line.partition(" ## ")
        out.append((re.compile(rx), why.strip()))
    extra = (read(os.path.join(res_dir, "extra-skip.txt")) or "").strip()
    if extra:
        out.append((re.compile(extra), "CRITEST_SKIP=%s" % extra))
    return out


EXCL = exclusions()
FAILED = {"failed": "", "panicked": " (panicked)", "timedout": " (timed out)",
          "interrupted": " (interrupted)", "aborted": " (aborted)"}


def spec_name(s):
    parts = [t for t in (s.get("ContainerHierarchyTexts") or []) + [s.get("LeafNodeText") or ""] if t]
    return " ".join(parts)


def short(name):
    return name.replace("[k8s.io] ", "")


def first_line(msg):
    for line in (msg or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def verdict(s):
    name = spec_name(s)
    state = s.get("State", "")
    failure = s.get("Failure") or {}
    msg = first_line(failure.get("Message"))
    loc = failure.get("Location") or {}
    where = "%s:%s" % (loc.get("FileName", "?"), loc.get("LineNumber", "?")) if loc else ""
    if state == "passed":
        return "pass", ""
    if state in FAILED:
        return "FAIL", "%s%s%s" % (msg or state, FAILED[state], " at " + where if where else "")
    if state == "skipped":
        if msg:
            return "skip", msg
        for rx, why in EXCL:
            if rx.search(name):
                return "excluded", why
        return "-", "not focused"
    if state == "pending":
        return "-", "pending"
    return "FAIL", "state %s: %s" % (state, msg)


def load(h):
    """{spec name: (verdict, why)}, suite-level problems, a note on the run."""
    specs, suite = {}, []
    status = (read(os.path.join(res_dir, h + ".status")) or "").split()
    note = "exit %s after %s s" % (status[0], status[1]) if len(status) == 2 else "no status (not run?)"
    raw = read(os.path.join(res_dir, h + ".json"))
    if raw is None:
        tail = [l for l in (read(os.path.join(res_dir, h + ".log")) or "").splitlines() if l.strip()][-3:]
        return specs, suite, note + "; no report" + ("; log: " + " | ".join(tail) if tail else "")
    try:
        reports = json.loads(raw)
    except ValueError as e:
        return specs, suite, note + "; report unreadable: %s" % e
    for r in reports:
        for s in r.get("SpecReports") or []:
            if s.get("LeafNodeType") != "It":
                if s.get("State") not in ("passed", None):
                    suite.append("%s %s: %s" % (s.get("LeafNodeType"), s.get("State"),
                                                first_line((s.get("Failure") or {}).get("Message"))))
                continue
            specs[spec_name(s)] = verdict(s)
        for reason in r.get("SpecialSuiteFailureReasons") or []:
            suite.append(reason)
    return specs, suite, note


data = {h: load(h) for h in handlers}
names = sorted({n for h in handlers for n in data[h][0]})
bench = [n for n in names if "benchmark" in n]
names = [n for n in names if "benchmark" not in n]


def cell(h, n):
    v = data[h][0].get(n)
    return v if v else ("-", "no report")


lines = ["critest (cri-tools) against containerd, runtime handlers side by side: " + ", ".join(handlers), ""]
for h in handlers:
    lines.append("%s: %s" % (h, data[h][2]))
lines.append("")
# The verdicts first, then the spec's whole name (names are long).
lines.append("%s  %s" % ("  ".join("%-8s" % h for h in handlers), "spec"))
for n in names:
    lines.append("%s  %s" % ("  ".join("%-8s" % cell(h, n)[0] for h in handlers), short(n)))
lines.append("")
for h in handlers:
    c = {}
    for n in names:
        c[cell(h, n)[0]] = c.get(cell(h, n)[0], 0) + 1
    lines.append("%s: %d pass, %d fail, %d skip, %d excluded, %d not run, of %d specs"
                 % (h, c.get("pass", 0), c.get("FAIL", 0), c.get("skip", 0), c.get("excluded", 0),
                    c.get("-", 0), len(names)))
if bench:
    lines.append("(and %d benchmark specs, which critest runs only with -benchmark)" % len(bench))
for h in handlers:
    for p in data[h][1]:
        lines.append("%s: suite: %s" % (h, p))

lines.append("")
lines.append("failures (first line of the message, and where):")
for h in handlers:
    for n in names:
        v, why = cell(h, n)
        if v == "FAIL":
            lines.append("  %s: %s\n      %s" % (h, short(n), why))
lines.append("")
lines.append("skipped by the spec itself:")
for h in handlers:
    for n in names:
        v, why = cell(h, n)
        if v == "skip":
            lines.append("  %s: %s: %s" % (h, short(n), why))
lines.append("")
lines.append("excluded (exclude.txt, CRITEST_SKIP):")
seen = set()
for h in handlers:
    for n in names:
        v, why = cell(h, n)
        if v == "excluded" and n not in seen:
            seen.add(n)
            lines.append("  %s: %s" % (short(n), why))
if "maka" in handlers and "runc" in handlers:
    lines.append("")
    lines.append("maka fails where runc passes:")
    for n in names:
        if cell("maka", n)[0] == "FAIL" and cell("runc", n)[0] == "pass":
            lines.append("  %s: %s" % (short(n), cell("maka", n)[1]))
    lines.append("runc fails where maka passes:")
    for n in names:
        if cell("runc", n)[0] == "FAIL" and cell("maka", n)[0] == "pass":
            lines.append("  %s" % short(n))
text = "\n".join(lines) + "\n"
with open(os.path.join(work, "summary.txt"), "w") as f:
    f.write(text)

md = ["| spec | " + " | ".join(handlers) + " |", "| --- |" + " --- |" * len(handlers)]
for n in names:
    md.append("| %s | %s |" % (short(n).replace("|", "\\|"), " | ".join(cell(h, n)[0] for h in handlers)))
with open(os.path.join(work, "summary.md"), "w") as f:
    f.write("\n".join(md) + "\n")
sys.stdout.write(text)
