#!/usr/bin/env python3
"""Compares two bench/run.sh result directories: an older build and a newer.

    bench/compare.py BEFORE AFTER COMMAND ELAPSED_S > report.md

Each directory holds its own references, so what is compared is each
build's ratio against a reference measured in its own run (median req/s ÷
median req/s), case by case, and the mixed tier's /db p99 and throughput
beside slow clients.  Written by bench/before_after.sh.
"""
import json
import os
import statistics
import sys

# A ratio that moved by less than this is within the run-to-run spread of
# these machines (see bench/README.md): it is reported, not called a change.
NOISE = 0.05


def load(d):
    """The results.json of a result directory."""
    with open(os.path.join(d, "results.json")) as f:
        return json.load(f)


def mixed_rows(d):
    """The mixed tier's runs, or an empty list."""
    p = os.path.join(d, "raw", "mixed", "mixed.jsonl")
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [json.loads(line) for line in f if line.strip()]


def mixed_levels(rows):
    """Per level of slow clients: median /db req/s, p99 (ms), and the slow answered/refused."""
    out = {}
    for n in sorted({r["slow_clients"] for r in rows}):
        rs = [r for r in rows if r["slow_clients"] == n]
        p99 = [r["p99_us"] / 1000.0 for r in rs if r["p99_us"] is not None]
        out[n] = {
            "rps": statistics.median([r["rps"] for r in rs]),
            "p99": statistics.median(p99) if p99 else None,
            "p99_range": (min(p99), max(p99)) if p99 else None,
            "answered": sum(r["slow"]["answered"] for r in rs),
            "refused": sum(r["slow"]["refused"] for r in rs),
        }
    return out


def fmt_rps(x):
    """req/s, short."""
    return "%.1fk" % (x / 1000.0) if x >= 10000 else "%d" % round(x)


def verdict(before, after):
    """How a ratio moved."""
    if before is None or after is None:
        return ""
    change = after / before
    if change < 1 - NOISE:
        return "**%.2f× (lower)**" % change
    if change > 1 + NOISE:
        return "%.2f× (higher)" % change
    return "%.2f× (same within %d%%)" % (change, NOISE * 100)


def main():
    before_dir, after_dir, command, elapsed = sys.argv[1:5]
    b, a = load(before_dir), load(after_dir)
    mb, ma = b["meta"], a["meta"]
    L = []
    L.append("# webgres before and after: %s → %s" % (mb.get("build", "?"), ma.get("build", "?")))
    L.append("")
    L.append("Command: `%s`, which ran `bench/run.sh` of `%s` twice: on the build of `%s`, "
             "then on the build of `%s`, each run with its own references. It took %d min. "
             "Machine: %d × %s, kernel %s, %s. `webgres.share_read_transactions` was `%s` "
             "before and `%s` after (TechEmpower's rules forbid sharing a transaction)."
             % (command, ma.get("git", "?"), mb.get("build", "?"), ma.get("build", "?"),
                int(elapsed) // 60, ma.get("nproc", 0), ma.get("cpu", "?"), ma.get("kernel", "?"),
                ma.get("postgres", "?"), mb.get("share_read_transactions", "?"),
                ma.get("share_read_transactions", "?")))
    if any(str(m.get(k, "")).endswith("-dirty") for m in (mb, ma) for k in ("git", "build")):
        L.append("")
        L.append("**A tree had uncommitted changes**: no commit reproduces these figures.")
    L.append("")
    L.append("The full reports: [before](before/report.md), [after](after/report.md). "
             "A ratio is webgres' median req/s ÷ the reference's median req/s in the same run "
             "(%d repetitions of %d s, interleaved); a change under %d%% is within the spread "
             "these shared 2-core machines show between runs."
             % (ma.get("reps", 0), ma.get("duration_s", 0), NOISE * 100))
    L.append("")
    L.append("## TechEmpower tiers: ratios against the references")
    L.append("")
    L.append("| case | reference | before: webgres req/s, ratio | after: webgres req/s, ratio | after ÷ before |")
    L.append("|---|---|---|---|---|")
    bcases = {c["label"]: c for c in b["cases"] if c.get("tier") == "tfb"}
    for c in a["cases"]:
        if c.get("tier") != "tfb" or c["label"] not in bcases:
            continue
        bc = bcases[c["label"]]
        for ref in sorted(set(c.get("ratios", {})) | set(bc.get("ratios", {}))):
            rb, ra = bc.get("ratios", {}).get(ref), c.get("ratios", {}).get(ref)
            wb = bc["servers"].get("webgres", {}).get("rps", {}).get("median")
            wa = c["servers"].get("webgres", {}).get("rps", {}).get("median")
            L.append("| %s | %s | %s, %s | %s, %s | %s |" % (
                c["label"], ref,
                fmt_rps(wb) if wb else "-", "%.2f×" % rb if rb else "-",
                fmt_rps(wa) if wa else "-", "%.2f×" % ra if ra else "-",
                verdict(rb, ra)))
    L.append("")
    xb, xa = mixed_levels(mixed_rows(before_dir)), mixed_levels(mixed_rows(after_dir))
    if xb and xa:
        L.append("## Mixed tier: /db at 64 connections beside clients looping on a 1 s handler")
        L.append("")
        L.append("bench/mixed.sh with `make run`'s settings; medians of %d runs (p99 min–max in "
                 "brackets). Target: p99 ≤ 2× and req/s ≥ 0.8× /db alone, at every level."
                 % ma.get("reps", 0))
        L.append("")
        L.append("| slow clients | before: /db p99 ms | before: p99, req/s vs alone | before: slow answered / refused "
                 "| after: /db p99 ms | after: p99, req/s vs alone | after: slow answered / refused |")
        L.append("|---|---|---|---|---|---|---|")
        for n in sorted(set(xb) & set(xa)):
            cells = []
            for x in (xb, xa):
                lv, alone = x[n], x.get(0)
                rng = lv["p99_range"]
                cells.append("%.2f (%.2f–%.2f)" % (lv["p99"], rng[0], rng[1]) if lv["p99"] is not None else "-")
                cells.append("%.2f×, %.2f×" % (lv["p99"] / alone["p99"], lv["rps"] / alone["rps"])
                             if alone and alone["p99"] and lv["p99"] is not None else "-")
                cells.append("%d / %d" % (lv["answered"], lv["refused"]))
            L.append("| %d | %s |" % (n, " | ".join(cells)))
        L.append("")
    extra = sorted({c.get("tier") for c in a["cases"]} - {c.get("tier") for c in b["cases"]} - {None})
    extra += [t for t in ("stream", "sse") if os.path.isdir(os.path.join(after_dir, "raw", t))
              or (t == "sse" and a.get("sse"))]
    if extra:
        L.append("Measured on the newer build only: %s; see [after/report.md](after/report.md)."
                 % ", ".join(extra))
        L.append("")
    print("\n".join(L))


if __name__ == "__main__":
    main()
