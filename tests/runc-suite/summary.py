#!/usr/bin/env python3
"""tests/runc-suite/summary.py WORK BY_DESIGN FILE.bats...

The count of `make runc-suite` (tests/runc-suite/run.sh), from the TAP that
guest.sh left in WORK/tap: per file, the tests that pass, fail, are skipped
by the suite's own `requires` (never a pass) and fail by design.

A failing test is "by design" only when BY_DESIGN (by-design.tsv) names it,
file and test name, with the maka floor it meets; every other failing test
is a failure. A listed test that passes is reported (the list is stale), so
is a listed test that no longer exists in runc's suite. Written to stdout;
run.sh keeps it in WORK/summary.txt.
"""
import os
import re
import sys


def load_by_design(path):
    listed = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3 or not all(p.strip() for p in parts):
                sys.exit("runc-suite: %s:%d: want FILE<TAB>TEST<TAB>FLOOR" % (path, n))
            key = (parts[0].strip(), parts[1].strip())
            if key in listed:
                sys.exit("runc-suite: %s:%d: %s listed twice" % (path, n, key))
            listed[key] = parts[2].strip()
    return listed


TAP = re.compile(r"^(ok|not ok) \d+ (.*?)(?: # skip\b.*)?$")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    work, by_design_path, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    listed = load_by_design(by_design_path)
    suite = os.path.join(work, "runc", "tests", "integration")

    totals = [0, 0, 0, 0]
    failing, designed, stale = [], [], []
    print("%-22s %5s %5s %5s %9s %6s" % ("file", "pass", "fail", "skip", "by design", "secs"))
    for f in files:
        name = f[:-5] if f.endswith(".bats") else f
        tap = os.path.join(work, "tap", name + ".tap")
        if not os.path.exists(tap):
            print("%-22s %s" % (f, "(no TAP: the guest did not get there)"))
            continue
        counts = [0, 0, 0, 0]  # pass, fail, skip, by design
        with open(tap, errors="replace") as t:
            for line in t:
                m = TAP.match(line.rstrip("\n"))
                if not m:
                    continue
                result, test = m.group(1), m.group(2).strip()
                floor = listed.get((f, test))
                if result == "ok":
                    if re.search(r" # skip\b", line):
                        counts[2] += 1
                    else:
                        counts[0] += 1
                        if floor is not None:
                            stale.append("%s: %s (listed: %s)" % (f, test, floor))
                elif floor is not None:
                    counts[3] += 1
                    designed.append("%s: %s -- %s" % (f, test, floor))
                else:
                    counts[1] += 1
                    failing.append("%s: %s" % (f, test))
        secs = "?"
        try:
            with open(os.path.join(work, "tap", name + ".secs")) as s:
                secs = s.read().strip()
        except OSError:
            pass
        totals = [a + b for a, b in zip(totals, counts)]
        print("%-22s %5d %5d %5d %9d %6s" % (f, *counts, secs))
    print("%-22s %5d %5d %5d %9d" % ("total", *totals))

    # A listed test that runc's suite no longer has is a stale entry too.
    for (f, test), floor in sorted(listed.items()):
        path = os.path.join(suite, f)
        if f in files and os.path.exists(path):
            with open(path) as s:
                if '@test "%s"' % test not in s.read():
                    stale.append("%s: %s (listed, not in runc's suite)" % (f, test))

    print("runc-suite: failing tests (not by design): %d" % len(failing))
    for x in failing:
        print("  " + x)
    print("runc-suite: failing by design (tests/runc-suite/by-design.tsv): %d" % len(designed))
    for x in designed:
        print("  " + x)
    if stale:
        print("runc-suite: listed by design but not failing (update by-design.tsv): %d" % len(stale))
        for x in stale:
            print("  " + x)


if __name__ == "__main__":
    main()
