#!/usr/bin/env python3
"""tests/bench/report.py DIR: the table and the JSON of a bench run.

Reads DIR/bench-samples.tsv and DIR/bench-meta.json (written by
tests/bench/bench.sh), prints a table of medians and the ratios maka/runc and
maka/crun, and writes the same figures to DIR/bench.json.  Times are
milliseconds of wall clock, RSS is KiB, sizes are bytes.  Failed samples are
left out of the medians and counted.

Environment: BENCH_HOST_LOAD_BEFORE, BENCH_HOST_LOAD_AFTER (the host's
/proc/loadavg around the guest run), BENCH_NOTE (free text kept in the JSON).
"""
import json
import os
import statistics
import sys
import time

# (key, label, unit) in table order.
ROWS = [
    ("run", "run /bin/true (netns)", "ms"),
    ("run-nonet", "run /bin/true (no netns)", "ms"),
    ("create", "create", "ms"),
    ("start", "start", "ms"),
    ("delete", "delete", "ms"),
    ("exec", "exec /bin/true", "ms"),
    ("exec-tool", "exec /bin/true, tool sandbox (maka: its agent)", "ms"),
    ("exec-bounded", "exec --timeout /bin/true, tool sandbox (maka only)", "ms"),
    ("agent-reply", "tool call: launch to first reply", "ms"),
    ("agent", "tool call: launch, one command, remove", "ms"),
    ("api-seq100", "Go API: 100 sequential Exec /bin/true (maka only)", "ms"),
    ("api-conc20", "Go API: 20 concurrent Exec, 20 sandboxes (maka only)", "ms"),
    ("api-idle", "Go API: host memory per idle sandbox, 50 idle", "KiB"),
    ("parallel10", "10 x run in parallel", "ms"),
    ("workload", "run a busybox workload", "ms"),
    ("kill", "kill: violation to empty sandbox", "ms"),
    ("rss-create", "peak RSS, create", "KiB"),
    ("rss-run", "peak RSS, run", "KiB"),
    ("egress-mbps", "100 MB download through the egress proxy", "MB/s"),
    ("egress-first", "  its time to the first byte", "ms"),
]
RUNTIMES = ["maka", "runc", "crun"]


def load(path):
    samples = {}
    with open(os.path.join(path, "bench-samples.tsv")) as f:
        next(f)
        for line in f:
            test, rt, _round, value, rc = line.rstrip("\n").split("\t")
            entry = samples.setdefault(test, {}).setdefault(rt, {"ok": [], "failed": 0})
            if rc == "0" and value not in ("", "?"):
                entry["ok"].append(float(value))
            else:
                entry["failed"] += 1
    meta_path = os.path.join(path, "bench-meta.json")
    if not os.path.exists(meta_path):
        sys.exit(f"bench: no complete run in {path} ({meta_path} is missing: the run did not finish)")
    with open(meta_path) as f:
        meta = json.load(f)
    return samples, meta


def summarise(values, unit):
    if not values:
        return None
    scale = 1000.0 if unit == "ms" else 1.0  # times are sampled in µs
    v = sorted(x / scale for x in values)
    q = statistics.quantiles(v, n=4) if len(v) >= 2 else [v[0], v[0], v[0]]
    return {"median": round(statistics.median(v), 2), "p25": round(q[0], 2),
            "p75": round(q[2], 2), "min": round(v[0], 2), "max": round(v[-1], 2), "n": len(v)}


def ratio(a, b):
    if not a or not b or not a.get("median") or not b.get("median"):
        return None
    return round(a["median"] / b["median"], 2)


def phase_table(path, samples, command="run"):
    """The phase table: the median of each phase of `maka run /bin/true`
    (or of the create, start or delete of one container) over the rounds
    (bench-phases[-COMMAND].jsonl, from MAKA_PHASES), in the order the
    phases happen, next to the median whole timed from inside (and, for
    run, from outside)."""
    suffix = "" if command == "run" else "-" + command
    fname = os.path.join(path, f"bench-phases{suffix}.jsonl")
    if not os.path.exists(fname):
        return None
    order, values, totals = [], {}, []
    with open(fname) as f:
        for line in f:
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            totals.append(doc.get("totalMs", 0))
            for p in doc.get("phases", []):
                if p["name"] not in values:
                    order.append(p["name"])
                    values[p["name"]] = []
                values[p["name"]].append(p["ms"])
    if not totals:
        return None
    rows = [{"phase": n, "median": round(statistics.median(values[n]), 1), "n": len(values[n])}
            for n in order]
    outside = samples.get("phases-run", {}).get("maka", {}).get("ok", []) if command == "run" else []
    return {"phases": rows, "insideMedian": round(statistics.median(totals), 1),
            "outsideMedian": round(statistics.median(outside) / 1000, 1) if outside else None,
            "rounds": len(totals)}


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "build"
    samples, meta = load(path)
    results = {}
    for key, label, unit in ROWS:
        if key not in samples:
            continue
        row = {"label": label, "unit": unit}
        for rt, entry in samples[key].items():
            s = summarise(entry["ok"], unit) or {}
            s["failed"] = entry["failed"]
            row[rt] = s
        row["maka/runc"] = ratio(row.get("maka"), row.get("runc"))
        row["maka/crun"] = ratio(row.get("maka"), row.get("crun"))
        if "maka-before" in row:
            row["maka/maka-before"] = ratio(row.get("maka"), row.get("maka-before"))
        if "maka-nomon" in row:
            row["maka/maka-nomon"] = ratio(row.get("maka"), row.get("maka-nomon"))
        for api in ("maka-api", "maka-pool", "maka-api-baseline"):
            if api in row:
                row[api + "/runc"] = ratio(row.get(api), row.get("runc"))
                row[api + "/crun"] = ratio(row.get(api), row.get("crun"))
        if "maka-nouserns" in row:
            row["maka/maka-nouserns"] = ratio(row.get("maka"), row.get("maka-nouserns"))
        if "direct" in row:
            row["maka/direct"] = ratio(row.get("maka"), row.get("direct"))
        if "maka-baseline" in row:
            row["maka-baseline/runc"] = ratio(row.get("maka-baseline"), row.get("runc"))
            row["maka-baseline/crun"] = ratio(row.get("maka-baseline"), row.get("crun"))
        results[key] = row

    doc = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "hostLoadBefore": os.environ.get("BENCH_HOST_LOAD_BEFORE", ""),
        "hostLoadAfter": os.environ.get("BENCH_HOST_LOAD_AFTER", ""),
        "note": os.environ.get("BENCH_NOTE", ""),
        "meta": meta,
        "results": results,
        "phases": phase_table(path, samples),
        "phasesByCommand": {c: phase_table(path, samples, c) for c in ("create", "start", "delete")},
    }
    with open(os.path.join(path, "bench.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")

    def cell(s):
        if not s or "median" not in s:
            return "fail" if s and s.get("failed") else "-"
        text = f"{s['median']:.1f}" if s["median"] < 1000 else f"{s['median']:.0f}"
        return text + (f" ({s['failed']} failed)" if s.get("failed") else "")

    def r(x):
        return "-" if x is None else f"{x:.2f}"

    lines = []
    head = ["", "maka", "runc", "crun", "maka/runc", "maka/crun"]
    lines.append(head)
    for key, label, unit in ROWS:
        row = results.get(key)
        if not row:
            continue
        lines.append([f"{label} [{unit}]", cell(row.get("maka")), cell(row.get("runc")),
                      cell(row.get("crun")), r(row["maka/runc"]), r(row["maka/crun"])])
        if "maka-before" in row:
            lines.append([f"  maka-before (maka/maka-before {r(row['maka/maka-before'])})",
                          cell(row["maka-before"]), "", "", "", ""])
        if key == "kill" and row.get("maka", {}).get("max") is not None:
            lines.append([f"  (maka: max {row['maka']['max']:.1f} over {row['maka']['n']} rounds)",
                          "", "", "", "", ""])
        if "maka-nomon" in row:
            lines.append([f"  maka, no syscall watched (maka/that {r(row['maka/maka-nomon'])})",
                          cell(row["maka-nomon"]), "", "", "", ""])
        if "maka-nouserns" in row:
            lines.append([f"  maka without its user namespace (maka/that {r(row['maka/maka-nouserns'])})",
                          cell(row["maka-nouserns"]), "", "", "", ""])
        if "maka-api" in row:
            lines.append([f"  maka through the Go API (one process)", cell(row["maka-api"]), "", "",
                          r(row["maka-api/runc"]), r(row["maka-api/crun"])])
        if "maka-pool" in row:
            lines.append([f"  maka through the Go API, from a warm pool", cell(row["maka-pool"]), "", "",
                          r(row["maka-pool/runc"]), r(row["maka-pool/crun"])])
        if "direct" in row:
            lines.append([f"  direct, from the guest's host side (maka/direct {r(row['maka/direct'])})",
                          cell(row["direct"]), "", "", "", ""])
        if "maka-baseline" in row:
            lines.append([f"  maka under policy-baseline.json", cell(row["maka-baseline"]), "", "",
                          r(row["maka-baseline/runc"]), r(row["maka-baseline/crun"])])
        if "maka-api-baseline" in row:
            lines.append([f"  maka through the Go API under policy-baseline.json", cell(row["maka-api-baseline"]), "", "",
                          r(row["maka-api-baseline/runc"]), r(row["maka-api-baseline/crun"])])
    mon = meta.get("monitorPeakRssKiB")
    lines.append(["maka monitor peak RSS [KiB]", "n/a (no monitor)" if mon is None else str(mon),
                  "", "", "", ""])
    sizes = meta.get("sizes", {})
    lines.append(["binary size [KiB]"] + [str(sizes.get(rt, 0) // 1024) for rt in RUNTIMES] +
                 [r(sizes["maka"] / sizes["runc"]) if sizes.get("runc") else "-",
                  r(sizes["maka"] / sizes["crun"]) if sizes.get("crun") else "-"])
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    print(f"maka bench: medians of {meta['rounds']} interleaved rounds "
          f"(10 x parallel: {meta['parallelRounds']}, workload: {meta.get('workRounds', '-')}, "
          f"RSS: {meta['rssRounds']}); "
          f"guest: {meta['guestCpus']} CPUs, kernel {meta['kernel']}, {meta['seconds']} s")
    for rt in RUNTIMES:
        print(f"  {rt}: {meta['versions'].get(rt, '?')}")
    print("  config: the same config.json for all three (build/bench-config.json): maka spec with")
    print("  the restricted profile's defaults applied (seccomp, limits, sized tmpfs, cgroupns);")
    print("  runc and crun answer the syscalls maka's monitor watches with EPERM (bench-config-plain.json)")
    for i, l in enumerate(lines):
        print("  ".join(c.ljust(widths[j]) if j == 0 else c.rjust(widths[j]) for j, c in enumerate(l)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    tables = [("maka run /bin/true", doc["phases"])]
    tables += [(f"maka {c} (one container)", t) for c, t in (doc.get("phasesByCommand") or {}).items()]
    for title, pt in tables:
        if not pt:
            continue
        print(f"{title} by phase: medians of {pt['rounds']} rounds (ms; "
              f"MAKA_PHASES, docs/dev/performance.md)")
        w = max([len(r["phase"]) for r in pt["phases"]] + [33])
        for r_ in pt["phases"]:
            share = 100 * r_["median"] / pt["insideMedian"] if pt["insideMedian"] else 0
            print(f"  {r_['phase'].ljust(w)}  {r_['median']:8.1f}  {share:4.0f} %")
        print(f"  {'whole, from inside (exec to exit)'.ljust(w)}  {pt['insideMedian']:8.1f}")
        if pt["outsideMedian"] is not None:
            print(f"  {'whole, from outside (bash clock)'.ljust(w)}  {pt['outsideMedian']:8.1f}")
    print(f"load: host before {doc['hostLoadBefore'] or '?'}, after {doc['hostLoadAfter'] or '?'}; "
          f"guest after {meta['guestLoadAfter']}")
    print(f"JSON: {os.path.join(path, 'bench.json')}")


if __name__ == "__main__":
    main()
