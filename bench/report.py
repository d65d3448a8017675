#!/usr/bin/env python3
"""report.py: turns the raw output of bench/run.sh into a report.

    report.py build RESULTS_DIR
        reads RESULTS_DIR/raw/{meta.json,cases.jsonl,ops.jsonl} and writes
        RESULTS_DIR/results.json, RESULTS_DIR/report.md, RESULTS_DIR/chart.svg

    report.py guard RESULTS_DIR [LOSS]
        reads a bench/guard.sh run (this build and an older one, repetitions
        paired) and prints every TechEmpower case whose loss exceeds LOSS
        (default 0.05) and is more than the repetitions' spread, with the
        smallest loss the run could flag; then, from
        RESULTS_DIR/instructions/instructions.tsv if the run has it, every
        route whose instructions per request rose by more than a loss of
        LOSS and their repeat spread.  Exits 1 if any case lost in either;
        0 if none lost and the instructions saw every route at LOSS (or the
        throughput saw every case); 2 if none lost but the throughput was
        too coarse to see LOSS and the instructions too, or not counted.

    report.py tls-md TLS_JSONL
        prints the TLS tier's tables (markdown) from bench/tls.sh's tls.jsonl;
        bench/tls.sh writes them to its tls.md with it

    report.py pgbench-json PGBENCH_OUTPUT LOGDIR
        prints "WRKJSON {...}" for a pgbench run (its text output plus the
        per-transaction logs written with -l --log-prefix=LOGDIR/log), in the
        shape bench/wrk/report.lua gives wrk runs, so both read alike.

Python 3 standard library only.
"""
import glob
import json
import math
import os
import re
import statistics
import sys

SERVERS = ["webgres", "webgres-base", "h2o", "pgbench", "pgbench-sql", "node-pg", "axum"]
COLOURS = {"webgres": "#336791", "webgres-base": "#8fa9c4", "h2o": "#e8a33d", "pgbench": "#6a9f58",
           "pgbench-sql": "#9bc48a", "node-pg": "#c0504d", "axum": "#7b4ea3"}
# An older webgres build measured beside this one (bench/before_after.sh); its
# repetitions are interleaved with this build's, so rep i of each is paired.
BASE = "webgres-base"
# A change smaller than this is within the spread of these shared machines.
BASE_SAME_WITHIN = 0.05
REFERENCES = ["h2o", "pgbench", "pgbench-sql", "node-pg", "axum"]
# The TechEmpower cases (bench/run.sh's tier "tfb") compared with axum.
AXUM = "axum"
PCTS = ["p50", "p90", "p99", "p99.9"]
DB_ENDPOINTS = ["db", "queries", "fortunes", "updates"]
# pgbench logging 0 µs for more than this share of transactions means its
# clock readings, not the transactions, were measured
MAX_ZERO_LATENCY_SHARE = 0.01

# Why such figures are wrong, said once under "Figures not reported".
LATENCY_EXPLAINED = (
    "wrk 4.1 corrects its histogram for coordinated omission after the run: for "
    "every sample longer than twice the expected interval (run time divided by "
    "the requests per connection) it adds samples at that length minus one, two, "
    "... intervals. It does not lower the histogram's minimum for them, and its "
    "percentile search starts at that minimum, so corrected samples below it are "
    "counted but never found: a percentile whose rank falls among them reads 0. "
    "With pipelining it is worse: wrk times one response in each batch, while the "
    "expected interval counts every response, so most corrected samples land below "
    "the minimum; wrk gives no usable latency for pipelined runs. pgbench 15 logs "
    "0 µs for most transactions of a script that begins with an SQL command (35 to "
    "70% of them at 16 to 256 clients on this machine; the same script behind a "
    "meta-command logs none); "
    "bench/run.sh starts every pgbench script with a `\\set` so that it reads the "
    "clock at each start, and flags a run that still logged zeros.")
# (endpoint, wrk pipeline depth): TechEmpower's plaintext test pipelines 16
# requests at 256 to 16,384 connections; its database tests do not pipeline.
CAPACITY_ENDPOINTS = [("plaintext-conns", 1), ("plaintext-pipelined-conns", 16), ("db-conns", 1)]
CAPACITY_BASE_CONNS = 256
CAPACITY_TARGET = 0.7          # throughput at the most connections ÷ at 256
TFB_PLAINTEXT_CONNS = 16384    # TechEmpower's highest plaintext level


# ---------------------------------------------------------------- pgbench --

def percentile(sorted_values, p):
    if not sorted_values:
        return 0
    k = max(0, min(len(sorted_values) - 1, int(math.ceil(p / 100.0 * len(sorted_values))) - 1))
    return sorted_values[k]


def pgbench_json(output_path, logdir):
    with open(output_path, errors="replace") as f:
        text = f.read()

    def grab(pattern, cast=float, default=0):
        m = re.search(pattern, text, re.M)
        return cast(m.group(1)) if m else default

    processed = grab(r"^number of transactions actually processed: (\d+)", int)
    failed = grab(r"^number of failed transactions: (\d+)", int)
    tps = grab(r"^tps = ([0-9.]+)", float)
    aborted = len(re.findall(r"client \d+ aborted", text))
    times = []
    for path in glob.glob(os.path.join(logdir, "log*")):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2].isdigit():
                    times.append(int(parts[2]))
    times.sort()
    zeros = sum(1 for t in times if t == 0)
    mean = statistics.fmean(times) if times else 0.0
    result = {
        "requests": processed,
        "duration_us": int(processed / tps * 1e6) if tps > 0 else 0,
        "bytes": 0,
        "errors": {"connect": 0, "read": aborted, "write": 0, "timeout": 0, "status": failed},
        "latency_us": {
            "min": times[0] if times else 0,
            "mean": round(mean, 1),
            "stdev": round(statistics.pstdev(times), 1) if len(times) > 1 else 0.0,
            "max": times[-1] if times else 0,
            "p50": percentile(times, 50), "p75": percentile(times, 75),
            "p90": percentile(times, 90), "p99": percentile(times, 99),
            "p99.9": percentile(times, 99.9),
        },
        # a transaction cannot take 0 µs: report.py flags the run's latency
        # when pgbench logged many (see bench/run.sh, pgbench_cmd)
        "latency_samples": len(times),
        "latency_zero": zeros,
    }
    if processed == 0:
        result = None
    print("WRKJSON " + json.dumps(result, separators=(",", ":")))


# ---------------------------------------------------------------- analysis --

def load_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    return out


def case_key(c):
    return (c["tier"], c["endpoint"], c["path"], c["conns"], c["pipeline"])


def case_label(key):
    tier, endpoint, path, conns, pipe = key
    label = path + (" (pipelined %d)" % pipe if pipe > 1 else "")
    return "%s c=%d" % (label, conns)


def latency_problem(server, pipeline, result):
    """Why the latency percentiles of one run cannot be right, or None."""
    if pipeline > 1 and not server.startswith("pgbench"):
        return "pipelined: wrk times one response per batch"
    lat = result["latency_us"]
    vals = [lat[p] for p in PCTS]
    if result.get("latency_samples") and \
            result.get("latency_zero", 0) > MAX_ZERO_LATENCY_SHARE * result["latency_samples"]:
        return ("pgbench logged 0 µs for %.0f%% of its transactions"
                % (100.0 * result["latency_zero"] / result["latency_samples"]))
    if result["requests"] > 0 and min(vals) <= 0:
        return "%s %s = 0 µs" % ("pgbench's log gave" if server.startswith("pgbench") else "wrk gave",
                                 ", ".join(p for p in PCTS if lat[p] <= 0))
    if any(a > b for a, b in zip(vals, vals[1:])):
        return "percentiles out of order (%s)" % " > ".join(str(v) for v in vals)
    return None


def errors_of(d):
    """'N socket errors, M non-2xx' for a server's figures, or None if clean."""
    if "rps" not in d or (d["socket_errors_total"] == 0 and d["non_2xx"] == 0):
        return None
    return "%d socket errors, %d non-2xx" % (d["socket_errors_total"], d["non_2xx"])


def run_rps(r):
    """Requests per second of one run."""
    d = r["result"]["duration_us"]
    return r["result"]["requests"] / (d / 1e6) if d else 0.0


def base_comparison(servers):
    """This build against the older one in one case: the ratio of medians and
    the spread of the per-repetition ratios (rep i of each ran side by side),
    or None when the older build was not measured."""
    pairs = {}
    for server in ("webgres", BASE):
        for r in servers.get(server, {}).get("runs", []):
            if r.get("result"):
                pairs.setdefault(r["rep"], {})[server] = run_rps(r)
    ratios = [p["webgres"] / p[BASE] for p in pairs.values() if len(p) == 2 and p[BASE] > 0]
    if not ratios:
        return None
    return {"rep_ratio": {"min": min(ratios), "median": statistics.median(ratios), "max": max(ratios)},
            "reps": len(ratios)}


def aggregate(cases):
    """Groups the repetitions of each (case, server)."""
    groups, order = {}, []
    for c in cases:
        key = case_key(c)
        if key not in order:
            order.append(key)
        g = groups.setdefault(key, {}).setdefault(c["server"], {"runs": [], "unavailable": None})
        if "unavailable" in c:
            g["unavailable"] = c["unavailable"]
        else:
            g["runs"].append(c)
    summary = []
    for key in order:
        entry = {"tier": key[0], "endpoint": key[1], "path": key[2], "conns": key[3],
                 "pipeline": key[4], "label": case_label(key), "servers": {}}
        for server, g in groups[key].items():
            runs = [r for r in g["runs"] if r.get("result")]
            if not runs:
                entry["servers"][server] = {"unavailable": g["unavailable"] or "no result",
                                            "reps": len(g["runs"])}
                continue
            rps = [run_rps(r) for r in runs]
            lat = {p: statistics.median(r["result"]["latency_us"][p] for r in runs) for p in PCTS}
            problems = sorted(set(filter(None, (latency_problem(server, key[4], r["result"]) for r in runs))))
            errs = {k: sum(r["result"]["errors"][k] for r in runs)
                    for k in ("connect", "read", "write", "timeout")}
            cpu = sum(r.get("cpu_s", 0.0) for r in runs)
            # every core's busy time over the runs: load generator and other
            # tenants of the machine included
            mcpu = sum(r.get("machine_cpu_s", 0.0) for r in runs)
            # TCP segments the machine sent per request, both ends together
            tcp = [(r["tcp"]["out_segs"] / r["result"]["requests"], r["tcp"]["delayed_acks"] / r["result"]["requests"])
                   for r in runs if r.get("tcp") and r["result"]["requests"] > 0]
            reqs = sum(r["result"]["requests"] for r in runs)
            entry["servers"][server] = {
                "reps": len(runs),
                "rps": {"min": min(rps), "median": statistics.median(rps), "max": max(rps)},
                "socket_errors": errs,
                "socket_errors_total": sum(errs.values()),
                "non_2xx": sum(r["result"]["errors"]["status"] for r in runs),
                "requests": reqs,
                "cpu_s": round(cpu, 2),
                "requests_per_cpu_s": round(reqs / cpu) if cpu > 0 else None,
                "machine_cpu_s": round(mcpu, 2),
                "requests_per_machine_cpu_s": round(reqs / mcpu) if mcpu > 0 else None,
            }
            if tcp:
                entry["servers"][server]["tcp_per_request"] = {
                    "segments": statistics.median(t[0] for t in tcp),
                    "delayed_acks": statistics.median(t[1] for t in tcp)}
            # figures that cannot be right are kept apart, never reported
            if problems:
                entry["servers"][server]["latency_us_unreliable"] = lat
                entry["servers"][server]["latency_problem"] = "; ".join(problems)
            else:
                entry["servers"][server]["latency_us"] = lat
        w = entry["servers"].get("webgres", {})
        base_vs = base_comparison(groups[key])
        if base_vs:
            entry["base"] = base_vs
        entry["ratios"] = {}
        # a ratio whose either side had socket errors or error statuses
        # compares something other than served requests: marked, not counted
        entry["ratio_doubts"] = {}
        b = entry["servers"].get(BASE, {})
        if "base" in entry and "rps" in w and "rps" in b and b["rps"]["median"] > 0:
            entry["base"]["ratio"] = w["rps"]["median"] / b["rps"]["median"]
            entry["base"]["doubt"] = "; ".join(filter(None, (
                errors_of(w) and "webgres had %s" % errors_of(w),
                errors_of(b) and "the older build had %s" % errors_of(b)))) or None
            entry["base"]["ref_ratios"] = {
                ref: (b["rps"]["median"] / entry["servers"][ref]["rps"]["median"],
                      w["rps"]["median"] / entry["servers"][ref]["rps"]["median"])
                for ref in REFERENCES
                if entry["servers"].get(ref, {}).get("rps", {}).get("median", 0) > 0}
        for ref in REFERENCES:
            r = entry["servers"].get(ref, {})
            if "rps" in w and "rps" in r and r["rps"]["median"] > 0:
                entry["ratios"][ref] = w["rps"]["median"] / r["rps"]["median"]
                doubt = []
                if errors_of(r):
                    doubt.append("%s had %s" % (ref, errors_of(r)))
                if errors_of(w):
                    doubt.append("webgres had %s" % errors_of(w))
                if doubt:
                    entry["ratio_doubts"][ref] = "; ".join(doubt)
        summary.append(entry)
    return summary


def ops_dict(ops):
    d = {}
    for o in ops:
        d[o["key"]] = o["value"]
    return d


def find(summary, endpoint, conns=None, path=None, pipeline=1):
    out = []
    for e in summary:
        if e["endpoint"] == endpoint and e["pipeline"] == pipeline \
                and (conns is None or e["conns"] == conns) and (path is None or e["path"] == path):
            out.append(e)
    return out


def verdict(ok):
    return "n/a" if ok is None else ("**met**" if ok else "**not met**")


def targets(summary, ops, meta):
    """The issue's targets, each with what was measured and whether it is met."""
    rows = []

    def ratio_target(name, entries, ref, floor):
        vals = [(e["label"], e["ratios"].get(ref), e["ratio_doubts"].get(ref)) for e in entries]
        have = [(l, v, d) for l, v, d in vals if v is not None]
        if not have:
            why = ["webgres %s" % e["servers"]["webgres"]["unavailable"] for e in entries
                   if "unavailable" in e["servers"].get("webgres", {})]
            rows.append((name, "; ".join(sorted(set(why))) or "no %s comparison in this run" % ref, None))
            return
        clean = [v for _, v, d in have if d is None]
        ok = all(v >= floor for v in clean) if clean else None
        rows.append((name, ", ".join("%s: %.2f×" % (l, v) + (" ⚠ not counted: %s" % d if d else "")
                                     for l, v, d in have), ok))

    ratio_target("/plaintext ≥ 0.85× bare h2o", find(summary, "plaintext"), "h2o", 0.85)
    ratio_target("/plaintext pipelined ≥ 0.85× bare h2o", find(summary, "plaintext-pipelined", pipeline=16), "h2o", 0.85)
    ratio_target("/json ≥ 0.85× bare h2o", find(summary, "json"), "h2o", 0.85)
    ratio_target("/db ≥ 1.0× pgbench (same clients)", find(summary, "db"), "pgbench", 1.0)
    ratio_target("/fortunes ≥ 1.0× pgbench fortune select", find(summary, "fortunes"), "pgbench", 1.0)
    for ep in DB_ENDPOINTS:
        entries = [e for e in find(summary, ep) if e["path"] != "/queries?queries=20"]
        if entries:
            ratio_target("/%s ≥ 3× node-pg" % ep, entries, "node-pg", 3.0)
    ratio_target("/queries?queries=20 ≥ 5× node-pg", find(summary, "queries", path="/queries?queries=20"), "node-pg", 5.0)

    # RSS: after the last step ≤ after the previous step + 1 MiB, per worker
    steps = sorted(int(k[len("rss_after_"):]) for k in ops if re.fullmatch(r"rss_after_\d+", k))
    if len(steps) >= 2:
        a, b = ops["rss_after_%d" % steps[-2]], ops["rss_after_%d" % steps[-1]]
        pids = sorted(set(a) & set(b))
        if pids:
            growth = [(b[p] - a[p]) for p in pids]
            ok = all(g <= 1024 for g in growth)
            rows.append(("worker RSS after %s ≤ after %s + 1 MiB" % (fmt_count(steps[-1]), fmt_count(steps[-2])),
                         ", ".join("pid %s: %+d KiB" % (p, g) for p, g in zip(pids, growth)), ok))
        else:
            rows.append(("worker RSS flat", "worker pids changed between samples", None))
    else:
        rows.append(("worker RSS flat", "not measured", None))

    db = find(summary, "db")
    if db:
        at256 = [e for e in db if e["conns"] == 256]
        top = at256[0] if at256 else max(db, key=lambda e: e["conns"])
        w = top["servers"].get("webgres", {})
        note = "" if top["conns"] == 256 else " (256 not run; at %d)" % top["conns"]
        if "latency_us" in w:
            r = w["latency_us"]["p99"] / w["latency_us"]["p50"]
            rows.append(("/db p99 ≤ 3× p50 at 256 connections%s" % note,
                         "p50 %s, p99 %s: %.1f×" % (fmt_us(w["latency_us"]["p50"]), fmt_us(w["latency_us"]["p99"]), r),
                         r <= 3.0))
        elif "latency_problem" in w:
            rows.append(("/db p99 ≤ 3× p50 at 256 connections%s" % note,
                         "not measured: %s" % w["latency_problem"], None))
    for ep, pipe in CAPACITY_ENDPOINTS:
        r = capacity_ratio(summary, ep, pipeline=pipe)
        if r is not None:
            top, ratio = r
            # the target holds only with no socket error at any level
            errs = sum(e["servers"]["webgres"]["socket_errors_total"] for e in find(summary, ep, pipeline=pipe)
                       if "rps" in e["servers"].get("webgres", {}))
            rows.append(("%s: req/s at %s connections ≥ %.1f× at %d (medians), no socket errors"
                         % (ep.replace("-pipelined-conns", " pipelined %d" % pipe).replace("-conns", ""),
                            fmt_count(top), CAPACITY_TARGET, CAPACITY_BASE_CONNS),
                         "%.2f×, %d socket errors" % (ratio, errs), ratio >= CAPACITY_TARGET and errs == 0))
    # The capacity tier reports its own socket errors (see its section).
    tfb = [e for e in summary if e.get("tier") != "capacity"]
    errs = sum(s.get("socket_errors_total", 0) for e in tfb for n, s in e["servers"].items() if n == "webgres")
    non2 = sum(s.get("non_2xx", 0) for e in tfb for n, s in e["servers"].items() if n == "webgres")
    measured = [e for e in tfb if "rps" in e["servers"].get("webgres", {})]
    rows.append(("zero socket errors and zero non-2xx (webgres, all cases but the capacity tier)",
                 "%d socket errors, %d non-2xx over %d cases" % (errs, non2, len(measured)),
                 (errs == 0 and non2 == 0) if measured else None))
    soak = ops.get("soak")
    if isinstance(soak, dict):
        se = sum(soak["errors"][k] for k in ("connect", "read", "write", "timeout"))
        rows.append(("soak: zero socket errors", "%d socket errors in %s requests" % (se, fmt_count(soak["requests"])), se == 0))
        b, a = ops.get("soak_rss_before"), ops.get("soak_rss_after")
        if isinstance(b, dict) and isinstance(a, dict):
            pids = sorted(set(a) & set(b))
            if pids:
                growth = [a[p] - b[p] for p in pids]
                rows.append(("soak: worker RSS flat (after ≤ before + 1 MiB)",
                             ", ".join("pid %s: %+d KiB" % (p, g) for p, g in zip(pids, growth)),
                             all(g <= 1024 for g in growth)))
    for f in ("restart-fast", "restart-immediate", "kill-worker"):
        v = ops.get("fault_" + f)
        if isinstance(v, dict):
            rows.append(("serving resumes after %s (within 60 s)" % f,
                         "%d ms" % v["resumed_ms"] if v["resumed_ms"] >= 0 else "did not resume",
                         v["resumed_ms"] >= 0))
    dur = ops.get("durability")
    if isinstance(dur, dict):
        rows.append(("every acknowledged write present after the faults",
                     "%d of %d" % (dur["present"], dur["acknowledged"]),
                     dur["acknowledged"] > 0 and dur["present"] == dur["acknowledged"]))
    return rows


def capacity_ratio(summary, endpoint, server="webgres", pipeline=1):
    """(most connections, its median req/s ÷ that at CAPACITY_BASE_CONNS), or None."""
    runs = {e["conns"]: e["servers"][server]["rps"]["median"] for e in find(summary, endpoint, pipeline=pipeline)
            if "rps" in e["servers"].get(server, {})}
    if CAPACITY_BASE_CONNS not in runs or len(runs) < 2 or runs[CAPACITY_BASE_CONNS] <= 0:
        return None
    top = max(runs)
    return top, runs[top] / runs[CAPACITY_BASE_CONNS]


def capacity_md(summary, ops):
    """The connection capacity tier: figures, limits, and what 16,384 would need."""
    L = ["## Connection capacity", ""]
    rows = []
    for ep, pipe in CAPACITY_ENDPOINTS:
        base = [e for e in find(summary, ep, conns=CAPACITY_BASE_CONNS, pipeline=pipe)
                if "rps" in e["servers"].get("webgres", {})]
        for e in find(summary, ep, pipeline=pipe):
            w = e["servers"].get("webgres", {})
            if "rps" not in w:
                rows.append((e["label"], "– (%s)" % w.get("unavailable", "not run"), "", "", "", "", ""))
                continue
            se = w["socket_errors"]
            ratio = (w["rps"]["median"] / base[0]["servers"]["webgres"]["rps"]["median"]) if base else None
            h = e["servers"].get("h2o", {})
            hb = [b["servers"]["h2o"]["rps"]["median"] for b in base if "rps" in b["servers"].get("h2o", {})]
            href = ("%s (%.2f×)" % (fmt_rps(h["rps"]["median"]), h["rps"]["median"] / hb[0])
                    if "rps" in h and hb and hb[0] > 0 else "")
            tcp = w.get("tcp_per_request")
            rows.append((e["label"], "%s (%s–%s)" % (fmt_rps(w["rps"]["median"]), fmt_rps(w["rps"]["min"]), fmt_rps(w["rps"]["max"])),
                         "%s / %s" % (fmt_us(w["latency_us"]["p50"]), fmt_us(w["latency_us"]["p99"]))
                         if "latency_us" in w else "not measured (%s)" % w.get("latency_problem", "?"),
                         "%d / %d / %d / %d" % (se["connect"], se["read"], se["write"], se["timeout"]),
                         "%.2f×" % ratio if ratio is not None else "", href,
                         "%.2f (%.2f)" % (tcp["segments"], tcp["delayed_acks"]) if tcp else ""))
    if not rows:
        L += ["Not run (CAPACITY=1 runs it; on by default in full runs, off with QUICK=1).", ""]
        return L
    L.append(md_table(["case", "webgres req/s, median (min–max)", "p50 / p99",
                       "socket errors connect / read / write / timeout", "÷ at %d" % CAPACITY_BASE_CONNS,
                       "bare h2o_hello req/s (÷ at %d)" % CAPACITY_BASE_CONNS,
                       "TCP segments per request (delayed ACKs)"], rows))
    L.append("")
    L.append("wrk, the workers and Postgres share the machine's cores; bare h2o_hello, measured "
             "in the same run at the same levels, shows how much of any fall with more "
             "connections is the load generator's and the kernel's rather than webgres'. "
             "The last column counts the TCP segments the machine sent per request, both "
             "ends together (`/proc/net/snmp` OutSegs; delayed ACKs from `/proc/net/netstat`): "
             "2 means the request and its response, each carrying the ACK of the other. "
             "With thousands of connections each waiting its turn, a request waits longer "
             "than the kernel's delayed-ACK timer (40 ms at least), so the kernel sends its "
             "ACK in a packet of its own; and every new connection acknowledges its first "
             "segments at once. Both cost kernel time on the same two cores.")
    L.append("")
    lim = ops.get("capacity_limits") if isinstance(ops.get("capacity_limits"), dict) else {}
    idle = ops.get("capacity_idle") if isinstance(ops.get("capacity_idle"), dict) else {}
    if lim:
        L.append("Limits in this run: net.core.somaxconn %s (the accept queue of each worker's "
                 "listening socket: ss shows %s), tcp_max_syn_backlog %s, ephemeral ports %s, "
                 "fs.file-max %s, fs.nr_open %s; open file limit of wrk %s (hard %s), of a worker %s; "
                 "%s workers."
                 % (lim.get("somaxconn"), lim.get("listen_backlog"), lim.get("tcp_max_syn_backlog"),
                    lim.get("port_range"), lim.get("file_max"), lim.get("nr_open"), lim.get("bench_nofile_soft"),
                    lim.get("bench_nofile_hard"), lim.get("worker_nofile_soft"), lim.get("workers")))
        L.append("")
    per_conn = idle.get("server_bytes_per_connection")
    if per_conn is not None and per_conn <= 0:
        # The workers gave back memory of earlier tiers while the connections
        # were held: the difference says nothing about the connections.
        per_conn = None
    if idle:
        L.append("Idle keep-alive connections (`bench/idleconns.py`: %s opened, one request each, "
                 "then held): %s; kernel socket buffers %s bytes and slab about %s bytes per "
                 "connection, both ends together (slab is machine-wide, so approximate)."
                 % (idle.get("connections"),
                    "worker RSS grew by %s in all, **%s bytes per connection**"
                    % (fmt_kib(idle.get("rss_delta_kib", 0)), per_conn) if per_conn else
                    "worker memory per connection **not measured**: the workers' RSS changed by %s "
                    "while the connections were held, so they gave back memory of earlier tiers "
                    "meanwhile (run the capacity tier first, or alone, to measure it)"
                    % fmt_kib(idle.get("rss_delta_kib", 0)),
                    idle.get("kernel_buffer_bytes_per_connection_both_ends"),
                    idle.get("kernel_slab_bytes_per_connection_both_ends")))
        L.append("")
    n = TFB_PLAINTEXT_CONNS
    workers = lim.get("workers") or 0
    mem = ("%.0f MiB of worker memory at the measured %s bytes each" % (n * per_conn / 1048576.0, per_conn)
           if per_conn else "worker memory per connection times %d" % n)
    L.append("What %s connections (TechEmpower's plaintext level) need: the load generator %s "
             "descriptors and as many ephemeral ports towards the one server address (the range "
             "here holds %s); the server %s descriptors in all%s, each worker's soft limit above "
             "its share plus what PostgreSQL keeps for files (the workers raise the soft limit "
             "to the hard one themselves; the hard limit is LimitNOFILE for a systemd service); "
             "net.core.somaxconn high enough for the connect burst (wrk opens every connection at "
             "once: %s queued per worker); and %s."
             % (fmt_count(n), fmt_count(n),
                (lambda r: fmt_count(int(r[1]) - int(r[0]) + 1) if len(r) == 2 else "?")(
                    str(lim.get("port_range", "")).split()),
                fmt_count(n), (", about %s per worker with %d" % (fmt_count(-(-n // workers)), workers)) if workers else "",
                (fmt_count(-(-n // workers)) if workers else "the share"), mem))
    L.append("")
    return L


# ---------------------------------------------------------------- formatting --

def fmt_rps(v):
    if v is None:
        return "–"
    if v >= 1000000:
        return "%.2fM" % (v / 1e6) if v % 1e6 else "%dM" % (v // 1e6)
    if v >= 100000:
        return "%.0fk" % (v / 1000)
    if v >= 10000:
        return "%.1fk" % (v / 1000)
    return "%.0f" % v


def fmt_us(v):
    if v is None:
        return "–"
    if v >= 1000000:
        return "%.2f s" % (v / 1e6)
    if v >= 1000:
        return "%.2f ms" % (v / 1000)
    return "%d µs" % v


def fmt_count(n):
    if n >= 1000000 and n % 1000000 == 0:
        return "%dM" % (n // 1000000)
    if n >= 1000 and n % 1000 == 0:
        return "%dk" % (n // 1000)
    return str(n)


def fmt_kib(k):
    return "%.1f MiB" % (k / 1024.0)


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(x) for x in r) + " |")
    return "\n".join(out)


def axum_cpu(d, key):
    """A server's requests per CPU-second (key: requests_per_cpu_s or
    requests_per_machine_cpu_s), or None."""
    return d.get(key) or None


def axum_md(summary):
    """Every TechEmpower case against the axum reference: the ratio of
    median req/s and of requests per CPU-second, server plus Postgres."""
    rows = []
    for e in summary:
        if e.get("tier") != "tfb" or AXUM not in e["servers"]:
            continue
        w, a = e["servers"].get("webgres", {}), e["servers"][AXUM]
        if "rps" not in w or "rps" not in a:
            rows.append((e["label"], "– (%s)" % w.get("unavailable", "not run") if "rps" not in w
                         else fmt_rps(w["rps"]["median"]),
                         "– (%s)" % a.get("unavailable", "?") if "rps" not in a else fmt_rps(a["rps"]["median"]),
                         "", "", "", "", "", ""))
            continue
        ratio = e["ratios"].get(AXUM)
        doubt = e["ratio_doubts"].get(AXUM)
        cells = [e["label"],
                 "%s (%s–%s)" % (fmt_rps(w["rps"]["median"]), fmt_rps(w["rps"]["min"]), fmt_rps(w["rps"]["max"])),
                 "%s (%s–%s)" % (fmt_rps(a["rps"]["median"]), fmt_rps(a["rps"]["min"]), fmt_rps(a["rps"]["max"])),
                 ("%.2f× ⚠ (%s)" % (ratio, doubt)) if doubt else "**%.2f×**" % ratio]
        for key in ("requests_per_cpu_s", "requests_per_machine_cpu_s"):
            wc, ac = axum_cpu(w, key), axum_cpu(a, key)
            cells += [fmt_rps(wc), fmt_rps(ac), "%.2f×" % (wc / ac) if wc and ac else "–"]
        rows.append(cells)
    if not rows:
        return []
    return ["## Against axum (webgres ÷ axum)",
            "",
            "`bench/reference/axum`: axum 0.8 and tokio-postgres, built as TechEmpower's axum "
            "entry is (a single-threaded runtime, listener and Postgres connection per core, "
            "prepared statements, the queries of a request pipelined on its connection, one "
            "batched UPDATE), against the same database as the other references, its "
            "repetitions interleaved with theirs. *req/CPU-s* counts the CPU time of the server "
            "plus all of Postgres (webgres: the postmaster and its children, which include the "
            "workers; axum: its process plus the postmaster and its children), summed over the "
            "repetitions: on a shared 2-core machine, where wrk takes much of a core, it is the "
            "fairer measure of what each stack costs. *machine* divides by every core's busy "
            "time over the same runs (`/proc/stat`), the load generator and anything else the "
            "machine ran included: it is only as clean as the machine was quiet.",
            "",
            md_table(["case", "webgres req/s (min–max)", "axum req/s (min–max)", "webgres ÷ axum",
                      "webgres req/CPU-s", "axum req/CPU-s", "÷ (req/CPU-s)",
                      "webgres req/machine-CPU-s", "axum req/machine-CPU-s", "÷ (machine)"], rows),
            ""]


def base_md(meta, summary):
    """The section comparing this build with the older one, or nothing."""
    rows = []
    for e in summary:
        c = e.get("base")
        if not c or "ratio" not in c:
            continue
        w, b = e["servers"]["webgres"], e["servers"][BASE]
        change = c["ratio"] - 1
        verdict_ = ("same within %d%%" % round(BASE_SAME_WITHIN * 100) if abs(change) < BASE_SAME_WITHIN
                    else ("**%+.0f%%**" % (change * 100)))
        refs = ", ".join("%s %.2f× → %.2f×" % (ref, before, after)
                         for ref, (before, after) in sorted(c["ref_ratios"].items()))
        rows.append((e["label"],
                     "%s (%s–%s)" % (fmt_rps(b["rps"]["median"]), fmt_rps(b["rps"]["min"]), fmt_rps(b["rps"]["max"])),
                     "%s (%s–%s)" % (fmt_rps(w["rps"]["median"]), fmt_rps(w["rps"]["min"]), fmt_rps(w["rps"]["max"])),
                     "%.2f×" % c["ratio"] + (" ⚠ (%s)" % c["doubt"] if c["doubt"] else ""),
                     "%.2f–%.2f×" % (c["rep_ratio"]["min"], c["rep_ratio"]["max"]),
                     verdict_, refs or "–"))
    if not rows:
        return []
    return ["## Against the older build",
            "",
            "The older build `%s` and this one, each served by its own cluster with the same "
            "settings and set up by its own `scripts/tfb-db.sh`, measured in this one run: "
            "their repetitions alternate (this build, then the older, then each reference), "
            "so a drift of the machine hits both alike. *This ÷ older* is the ratio of the "
            "medians; *per repetition* gives the lowest and highest ratio of the runs made side "
            "by side. The last column is each build's ratio against the references of the "
            "same case, older → this." % meta.get("base_build", "?"),
            "",
            md_table(["case", "older build req/s (min–max)", "this build req/s (min–max)",
                      "this ÷ older", "per repetition", "change", "ratios to references, older → this"], rows),
            ""]


def report_md(meta, summary, ops, target_rows):
    L = []
    L.append("# webgres bench report — %s" % meta.get("stamp", "?"))
    L.append("")
    L.append("%s run: %d repetition(s) of %d s per case, %d webgres workers (and as many "
             "h2o_hello processes and node-pg workers), wrk with %d threads, connections %s "
             "(queries/updates/cached-queries at %s). Machine: %d × %s, %s, kernel %s. %s, libh2o %s, "
             "node %s, wrk %s%s. Commit `%s`%s."
             % ("QUICK" if meta.get("quick") else "Full", meta.get("reps", 0), meta.get("duration_s", 0),
                meta.get("workers", 0), meta.get("wrk_threads", 2),
                "/".join(str(c) for c in meta.get("conns", [])), meta.get("qconns"),
                meta.get("nproc", 0), meta.get("cpu", "?"), fmt_kib(meta.get("mem_total_kib", 0)),
                meta.get("kernel", "?"), meta.get("postgres", "?"), meta.get("libh2o", "?"),
                meta.get("node", "?"), meta.get("wrk", "?"),
                (", axum with %s runtimes and connections (%s)" % (meta["axum_threads"], meta.get("rustc") or "?"))
                if meta.get("axum_threads") else "", meta.get("git", "?"),
                "; beside it the older build `%s`, served by a second cluster of the same "
                "settings (see [the comparison](#against-the-older-build))" % meta["base_build"]
                if meta.get("base_build") else ""))
    L.append("")
    facts = []
    if meta.get("command"):
        facts.append("Command: `%s` (every setting as it was; `make bench` runs `bench/run.sh` after "
                     "`make all install`)." % meta["command"])
    if "elapsed_s" in ops:
        facts.append("The run took %d min %02d s." % (ops["elapsed_s"] // 60, ops["elapsed_s"] % 60))
    if "share_read_transactions" in meta:
        facts.append("`webgres.share_read_transactions` was `%s`%s." % (
            meta["share_read_transactions"],
            "" if meta["share_read_transactions"] == "off"
            else " (TechEmpower's rules forbid it: these figures are not TechEmpower-legal)"))
    if str(meta.get("git", "")).endswith("-dirty"):
        facts.append("**The tree had uncommitted changes**: no commit reproduces these figures.")
    if facts:
        L.append(" ".join(facts))
        L.append("")
    L.append("Load generator, servers and Postgres share the same cores, so absolute figures "
             "say little; the ratios against references measured in the same run, with "
             "repetitions interleaved, are what this report is about (bench/README.md).")
    L.append("")
    L.append("![throughput and latency](chart.svg)")
    L.append("")

    L.append("## Targets")
    L.append("")
    L.append(md_table(["target", "measured", "verdict"],
                      [(n, m, verdict(ok)) for n, m, ok in target_rows]))
    L.append("")

    L.append("## Ratios (webgres median req/s ÷ reference median req/s, same run)")
    L.append("")
    rows = []
    for e in summary:
        w = e["servers"].get("webgres", {})
        cells = [e["label"]]
        if "rps" in w:
            cells.append("%s (%s–%s)" % (fmt_rps(w["rps"]["median"]), fmt_rps(w["rps"]["min"]), fmt_rps(w["rps"]["max"])))
        else:
            cells.append("– (%s)" % w.get("unavailable", "not run"))
        for ref in REFERENCES:
            r = e["servers"].get(ref)
            if r is None:
                cells.append("")
            elif "rps" not in r:
                cells.append("– (%s)" % r.get("unavailable", "?"))
            else:
                ratio = e["ratios"].get(ref)
                doubt = e["ratio_doubts"].get(ref)
                if ratio is None:
                    cells.append(fmt_rps(r["rps"]["median"]))
                elif doubt:
                    cells.append("%s → %.2f× ⚠ (%s)" % (fmt_rps(r["rps"]["median"]), ratio, doubt))
                else:
                    cells.append("%s → **%.2f×**" % (fmt_rps(r["rps"]["median"]), ratio))
        if "latency_us" in w:
            cells.append("%s / %s" % (fmt_us(w["latency_us"]["p50"]), fmt_us(w["latency_us"]["p99"])))
        elif "latency_problem" in w:
            cells.append("not measured †")
        else:
            cells.append("")
        cells.append("%d / %d" % (w["socket_errors_total"], w["non_2xx"]) if "rps" in w else "")
        rows.append(cells)
    L.append(md_table(["case", "webgres req/s (min–max)", "h2o_hello", "pgbench", "pgbench, handler's SQL", "node-pg",
                       "axum", "webgres p50 / p99", "webgres sock err / non-2xx"], rows))
    L.append("")
    L.append("A ratio marked ⚠ compares a server that had socket errors or error statuses "
             "(≥ 400) in that case: it is shown, but no target counts it. † marks latency "
             "figures that cannot be right, listed under [Figures not reported](#figures-not-reported).")
    L.append("")

    L.extend(base_md(meta, summary))
    L.extend(axum_md(summary))

    L.append("## Overhead tax")
    L.append("")
    orow = []
    for ep in ("plaintext", "json"):
        for e in find(summary, ep):
            if "h2o" in e["ratios"]:
                doubt = e["ratio_doubts"].get("h2o")
                orow.append(("%s vs bare h2o" % e["label"],
                             "%.2f×" % e["ratios"]["h2o"] + (" ⚠ (%s)" % doubt if doubt else ""),
                             "%.1f%%" % ((1 - e["ratios"]["h2o"]) * 100)))
    s1 = find(summary, "select1")
    for e in s1:
        w = e["servers"].get("webgres", {})
        p = [x for x in find(summary, "plaintext", conns=e["conns"]) if "rps" in x["servers"].get("webgres", {})]
        if "rps" in w and p:
            ratio = w["rps"]["median"] / p[0]["servers"]["webgres"]["rps"]["median"]
            orow.append(("/select1 (a one-row SELECT run on every request) vs /plaintext, c=%d" % e["conns"],
                         "%.2f×" % ratio, "%.1f%%" % ((1 - ratio) * 100)))
    L.append(md_table(["comparison", "ratio", "cost (1 − ratio)"], orow) if orow else "Not measured in this run.")
    if s1:
        L.append("")
        L.append("`/select1`'s handler is `SELECT 200 AS status, 'text/plain' AS content_type, "
                 "CASE WHEN random() >= 0 THEN 'x' END AS body`: the volatile expression keeps webgres "
                 "from answering it from memory as it does handlers that fold to constants, so it "
                 "pays for a transaction and its expressions on every request (a handler that is one "
                 "row of expressions is evaluated without the executor). Its ratio to "
                 "`/plaintext` is the price of running SQL at all.")
    L.append("")

    rt = [e for e in find(summary, "routes") if "rps" in e["servers"].get("webgres", {})]
    L.append("## Route-table size")
    L.append("")
    if rt:
        base = rt[0]["servers"]["webgres"]["rps"]["median"]
        rrow = []
        for e in rt:
            w = e["servers"]["webgres"]
            others = e["path"].split("others=")[-1]
            rrow.append(("/bench/constant beside %s other route%s, c=%d"
                         % (others, "" if others == "1" else "s", e["conns"]),
                         "%s (%s–%s)" % (fmt_rps(w["rps"]["median"]), fmt_rps(w["rps"]["min"]), fmt_rps(w["rps"]["max"])),
                         "%.2f×" % (w["rps"]["median"] / base) if base else "–"))
        L.append(md_table(["case", "webgres req/s (min–max)", "vs the first row"], rrow))
        L.append("")
        L.append("`/bench/constant` folds to one constant row and is answered from memory, so its "
                 "throughput is the price of finding the route. The other routes are generated with "
                 "a higher priority (`/bench/other/N/:id`, `/otherN`, `/:p/otherN`), so a router that "
                 "tried routes in order would pass all of them first; the TechEmpower and bench "
                 "routes are there too. Finding a route should not cost more as the table grows.")
    else:
        L.append("Not measured in this run.")
    L.append("")

    L.append("## Per-route counting")
    L.append("")
    crow = []
    for ep in ("plaintext", "db"):
        on = [e for e in find(summary, "counting-" + ep, path="/%s?route_stats=on" % ep)
              if "rps" in e["servers"].get("webgres", {})]
        off = [e for e in find(summary, "counting-" + ep, path="/%s?route_stats=off" % ep)
               if "rps" in e["servers"].get("webgres", {})]
        if on and off:
            a = on[0]["servers"]["webgres"]["rps"]
            b = off[0]["servers"]["webgres"]["rps"]
            crow.append(("/%s, c=%d" % (ep, on[0]["conns"]),
                         "%s (%s–%s)" % (fmt_rps(a["median"]), fmt_rps(a["min"]), fmt_rps(a["max"])),
                         "%s (%s–%s)" % (fmt_rps(b["median"]), fmt_rps(b["min"]), fmt_rps(b["max"])),
                         "%.3f×" % (a["median"] / b["median"]) if b["median"] else "–"))
    if crow:
        L.append(md_table(["case", "counting on, req/s (min–max)", "off, req/s (min–max)", "on / off"], crow))
        L.append("")
        L.append("The same build and cluster with `webgres.track_route_stats` on and off, alternating "
                 "every repetition: the price of the per-route counters and latency histograms "
                 "behind `webgres.route_stats` and the Prometheus endpoint.")
    else:
        L.append("Not measured in this run.")
    L.append("")

    L.extend(auth_md(summary))

    L.append("## Operational")
    L.append("")
    orows = []
    if "startup_ms" in ops:
        orows.append(("pg_ctl start → first 200 on /plaintext", "%d ms (Postgres ready after %d ms)"
                      % (ops["startup_ms"], ops.get("startup_pg_ready_ms", -1))))
    if "so_bytes" in ops:
        orows.append(("webgres.so size", "%.0f KiB" % (ops["so_bytes"] / 1024.0)))
    for k in ["rss_idle"] + ["rss_after_%s" % s for s in sorted(
            (int(k[10:]) for k in ops if re.fullmatch(r"rss_after_\d+", k)))] + ["rss_after_cases"]:
        if k in ops and isinstance(ops[k], dict):
            if k == "rss_idle":
                name = "worker RSS, idle"
            elif k == "rss_after_cases":
                name = "worker RSS, after every case"
            else:
                name = "worker RSS, after %s /db requests" % fmt_count(int(k[len("rss_after_"):]))
            orows.append((name, ", ".join("pid %s: %s" % (p, fmt_kib(v)) for p, v in sorted(ops[k].items())) or "no workers found"))
    L.append(md_table(["measure", "value"], orows))
    L.append("")
    L.append("Requests per CPU-second of the serving processes (webgres and pgbench: the "
             "postmaster and all its children; h2o_hello: its processes; node-pg and axum: "
             "their processes plus Postgres), summed over repetitions:")
    L.append("")
    crow = []
    for e in summary:
        cells = [e["label"]]
        for s in SERVERS:
            v = e["servers"].get(s, {}).get("requests_per_cpu_s")
            cells.append(fmt_rps(v) if v else "")
        crow.append(cells)
    L.append(md_table(["case"] + SERVERS, crow))
    L.append("")

    L.append("## All figures")
    L.append("")
    frows = []
    for e in summary:
        for s in SERVERS:
            d = e["servers"].get(s)
            if not d:
                continue
            if "rps" not in d:
                frows.append((e["label"], s, "– (%s)" % d.get("unavailable"), "", "", "", "", "", "", ""))
                continue
            lat = d.get("latency_us")
            frows.append((e["label"], s, fmt_rps(d["rps"]["min"]), fmt_rps(d["rps"]["median"]), fmt_rps(d["rps"]["max"]))
                         + (tuple(fmt_us(lat[p]) for p in PCTS) if lat else ("†", "†", "†", "†"))
                         + ("%d / %d" % (d["socket_errors_total"], d["non_2xx"])
                            + (" ⚠" if errors_of(d) else ""),))
    L.append(md_table(["case", "server", "min req/s", "median", "max", "p50", "p90", "p99", "p99.9",
                       "sock err / non-2xx"], frows))
    L.append("")
    L.append("Latency is per request as wrk measures it, from writing a request to reading its "
             "response. pgbench latency is per transaction from its -l log, from sending the first "
             "command to reading the last result: the time a client waits for its pgbench thread "
             "to start its next transaction is not in it, so with many clients per thread its "
             "percentiles run far below wrk's and are not comparable with them. With pipelining "
             "wrk gives no usable latency (†).")
    L.append("")

    L.append("## Figures not reported")
    L.append("")
    bad = [(e["label"], s, d["latency_problem"], d["latency_us_unreliable"])
           for e in summary for s, d in e["servers"].items() if "latency_problem" in d]
    if bad:
        L.append("Latency figures that cannot be right are left out of every table above "
                 "and out of the targets; what the tool gave is here. " + LATENCY_EXPLAINED)
        L.append("")
        L.append(md_table(["case", "server", "why", "p50 / p90 / p99 / p99.9 as given"],
                          [(l, s, why, " / ".join(fmt_us(raw[p]) for p in PCTS)) for l, s, why, raw in bad]))
    else:
        L.append("None: every latency figure passed the checks (no percentile of 0, percentiles "
                 "in order, pgbench logging no 0 µs transactions).")
    L.append("")

    L += capacity_md(summary, ops)

    L.append("## Soak and faults")
    L.append("")
    soak = ops.get("soak")
    if isinstance(soak, dict):
        se = soak["errors"]
        why = latency_problem("webgres", 1, soak)
        L.append("%s requests through 256 connections in %.0f s: sent %s; statuses %s; socket errors "
                 "connect %d, read %d, write %d, timeout %d; %s."
                 % (fmt_count(soak["requests"]), soak["duration_us"] / 1e6,
                    ", ".join("%s %d" % kv for kv in sorted(soak.get("sent", {}).items())),
                    ", ".join("%s: %d" % kv for kv in sorted(soak.get("statuses", {}).items())),
                    se["connect"], se["read"], se["write"], se["timeout"],
                    "latency not reported (%s)" % why if why else
                    "latency p50 %s, p99 %s" % (fmt_us(soak["latency_us"]["p50"]), fmt_us(soak["latency_us"]["p99"]))))
        sent = soak.get("sent", {})
        st = soak.get("statuses", {})
        L.append("")
        L.append(md_table(["expectation", "sent", "answered", "verdict"], [
            ("/bench/raise → 500", sent.get("/bench/raise", 0), st.get("500", 0),
             verdict(abs(st.get("500", 0) - sent.get("/bench/raise", 0)) <= 256)),
            ("/bench/sleep → 504", sent.get("/bench/sleep", 0), st.get("504", 0),
             verdict(abs(st.get("504", 0) - sent.get("/bench/sleep", 0)) <= 256)),
            ("/db → 200", sent.get("/db", 0), st.get("200", 0),
             verdict(abs(st.get("200", 0) - sent.get("/db", 0)) <= 256)),
        ]))
        L.append("")
        L.append("(Responses on different connections interleave, so statuses are compared with the "
                 "count sent per path; up to 256 requests can be in flight when the run stops.)")
        b, a = ops.get("soak_rss_before", {}), ops.get("soak_rss_after", {})
        if isinstance(b, dict) and isinstance(a, dict) and set(a) & set(b):
            L.append("")
            L.append("Worker RSS across the soak: " + ", ".join(
                "pid %s %s → %s" % (p, fmt_kib(b[p]), fmt_kib(a[p])) for p in sorted(set(a) & set(b))) + ".")
        L.append("")
        frow = []
        for f in ("restart-fast", "restart-immediate", "kill-worker"):
            v = ops.get("fault_" + f)
            if isinstance(v, dict):
                frow.append((f, "%d ms" % v["resumed_ms"] if v["resumed_ms"] >= 0 else "did not resume within 60 s"))
        if frow:
            L.append("Faults under /db load (64 connections): time from the fault to the next 200.")
            L.append("")
            L.append(md_table(["fault", "serving again after"], frow))
            L.append("")
        fl = ops.get("fault_load")
        if isinstance(fl, dict):
            fe = fl["errors"]
            L.append("The /db load through the three faults (wrk, 64 connections, `--timeout 2`): "
                     "%s requests in %.0f s; socket errors connect %d, read %d, write %d, timeout %d; "
                     "%d responses with status ≥ 400."
                     % (fmt_count(fl["requests"]), fl["duration_us"] / 1e6, fe["connect"], fe["read"],
                        fe["write"], fe["timeout"], fe["status"]))
            L.append("")
            L.append("These errors are expected: every fault closes the load's connections. Requests "
                     "in flight then fail as read errors (the server closed the connection). While "
                     "nothing listens on the port, wrk reconnects at once and without pause; its "
                     "connect is non-blocking, so a refused connection shows up as a write error on "
                     "the first write: write errors count reconnection attempts during the downtime "
                     "(hundreds of thousands a second), not requests. Timeout errors are requests "
                     "caught by a stop that waited out wrk's 2 s timeout; connect errors, refusals "
                     "reported by connect itself. Error statuses (503 while the database shuts down "
                     "or starts) may appear too. What matters is that serving resumes (the table "
                     "above) and that no acknowledged write is lost (below).")
            L.append("")
        dur = ops.get("durability")
        if isinstance(dur, dict):
            ok = dur["acknowledged"] > 0 and dur["present"] == dur["acknowledged"]
            L.append("Acknowledged writes (GET /bench/ack/:id inserting into bench_ack, one client "
                     "through all three faults, synchronous_commit = on for this part): %d acknowledged, "
                     "%d present afterwards: %s. Client: %s."
                     % (dur["acknowledged"], dur["present"], verdict(ok), json.dumps(dur.get("client"))))
            L.append("")
    else:
        L.append("Not run (SOAK=1 runs it; on by default in full runs, off with QUICK=1).")
        L.append("")

    L += profile_md(ops)
    # runs before the per-request account: perf report text while serving a path
    prof = [k for k in ops if k.startswith("profile:")]
    if prof:
        L.append("## Profile of the hot path")
        L.append("")
        if isinstance(ops.get("profile"), str):
            L.append(ops["profile"])
            L.append("")
        for k in sorted(prof):
            L.append("Self time by shared object, then the top symbols, while serving `%s`:" % k[len("profile:"):])
            L.append("")
            L.append("```")
            L.append("\n".join(str(ops[k]).splitlines()[:34]))
            L.append("```")
            L.append("")
    return "\n".join(L) + "\n"


# -------------------------------------------------------------- profile --

PROFILE_ROUTES = ["/plaintext", "/json", "/db", "/fortunes", "/updates?queries=20"]
PROFILE_LIBRARIES = ["kernel", "postgres", "plpgsql.so", "pg_stat_statements.so", "libh2o",
                     "webgres.so", "libc", "other"]
PROFILE_TOP = 12


def fmt_us_share(us, share):
    """Microseconds per request and the share of the worker's CPU time."""
    if us is None:
        return "%.1f %%" % share
    return "%s (%.0f %%)" % ("%.2f" % us if us < 10 else "%.1f" % us, share)


def profile_failure(v):
    """Why a route's per-request account is missing."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return ("the worker's CPU time over the window was not measured (%s requests, %s samples)"
                % (v.get("requests", "?"), v.get("samples", "?")))
    return "no account"


def profile_md(ops):
    """Where the time goes, per request: perf on one worker, its CPU time
    over the requests it served, by library, step and function."""
    L = ["## Where the time goes, per request", ""]
    prof = {k[len("profile_request:"):]: v for k, v in ops.items() if k.startswith("profile_request:")}
    routes = [r for r in PROFILE_ROUTES if r in prof] + sorted(r for r in prof if r not in PROFILE_ROUTES)
    done = [r for r in routes if isinstance(prof[r], dict) and prof[r].get("us_per_request")]
    failed = [r for r in routes if r not in done]
    if not done:
        L.append("Not measured in this run." + (
            "" if prof or "profile" in ops else
            " (PROFILE=1 runs it: perf on one worker under wrk, on /plaintext, /json, /db, /fortunes and /updates?queries=20.)"))
        L.append("")
        if isinstance(ops.get("profile"), str) and not any(k.startswith("profile:") for k in ops):
            L.append(ops["profile"] + ".")
            L.append("")
        for r in failed:
            L.append("- `%s`: %s" % (r, profile_failure(prof[r])))
        if failed:
            L.append("")
        return L
    first = prof[done[0]]
    L.append("One webgres worker (pid %s), profiled while wrk loads each route with %s connections "
             "for %s s. Sampling: %s. A route's CPU time per request is that worker's CPU time over the "
             "window (every thread's `/proc/PID/task/*/schedstat`) over the requests it served in "
             "it (its `requests` in `webgres.workers`, read before and after); each library's, "
             "step's and function's figure is its share of the perf samples times that. Steps "
             "are inclusive (a step counts what it calls), so they nest and do not add up; "
             "libraries and functions are self time and add up to the total. The software "
             "clock cannot interrupt the kernel where interrupts are off, so that time is "
             "charged to where they come back on (`finish_task_switch`, "
             "`_raw_spin_unlock_irqrestore`). The row without perf is the same worker's CPU "
             "time per request, under the same load, for as long again without sampling "
             "(half just before perf's window, half just after): the difference is what the "
             "sampling costs it, and the profiled figures include it."
             % (first.get("pid", "?"), first.get("conns", "?"), first.get("seconds", "?"),
                str(ops.get("profile", "perf record")).rstrip(".")))
    L.append("")
    L.append("µs per request (share of the worker's CPU time):")
    L.append("")
    header = [""] + ["`%s`" % r for r in done]
    rows = [["**worker CPU per request**"] + ["**%.1f µs**" % prof[r]["us_per_request"] for r in done],
            ["worker CPU per request without perf"] +
            ["%.1f µs" % prof[r]["us_per_request_unprofiled"] if prof[r].get("us_per_request_unprofiled")
             else "–" for r in done],
            ["requests the worker served while profiled"] + [fmt_count(prof[r]["requests"]) for r in done],
            ["perf samples (of the CPU time's at the sampling rate)"] +
            ["%s (%.0f %%)" % (prof[r].get("samples", "–"), 100 * prof[r]["sample_coverage"])
             if prof[r].get("sample_coverage") else str(prof[r].get("samples", "–")) for r in done],
            ["*by library (self)*"] + [""] * len(done)]

    def cell(r, kind, name):
        for e in prof[r].get(kind, []):
            if e.get("name") == name:
                return fmt_us_share(e.get("us"), e["share"])
        return "–"
    libs = [n for n in PROFILE_LIBRARIES if any(cell(r, "libraries", n) != "–" for r in done)]
    libs += sorted({e["name"] for r in done for e in prof[r].get("libraries", [])} - set(libs))
    for n in libs:
        rows.append([n] + [cell(r, "libraries", n) for r in done])
    steps = []
    for r in done:
        for e in prof[r].get("steps", []):
            if e["name"] not in steps:
                steps.append(e["name"])
    try:        # in the order of a request, as bench/profile_account.py lists them
        from profile_account import STEPS
        order = [n for n, _ in STEPS]
        steps.sort(key=lambda n: order.index(n) if n in order else len(order))
    except ImportError:
        pass
    if steps:
        rows.append(["*by step (inclusive)*"] + [""] * len(done))
        for n in steps:
            rows.append([n] + [cell(r, "steps", n) for r in done])
    L.append(md_table(header, rows))
    L.append("")
    L.append("Top functions by self time, µs per request (share):")
    L.append("")
    top = []
    for i in range(PROFILE_TOP):
        row = [str(i + 1)]
        for r in done:
            t = prof[r].get("top", [])
            row.append("`%s` (%s) %s" % (t[i]["symbol"], t[i]["dso"], fmt_us_share(t[i].get("us"), t[i]["share"]))
                       if i < len(t) else "")
        if any(row[1:]):
            top.append(row)
    L.append(md_table(["#"] + ["`%s`" % r for r in done], top))
    L.append("")
    for r in failed:
        L.append("`%s`: not measured: %s" % (r, profile_failure(prof[r])))
        L.append("")
    return L


# ------------------------------------------------------------------ sse --

def auth_md(summary):
    """The auth tier: /db without authentication, and a route with auth
    without a token, with an HS256 and with an ES256 token."""
    L = ["## Authentication cost", ""]
    cases = [("db-no-token", "/db, auth none (the TechEmpower route)"),
             ("db-anon", "/bench/auth/db, auth optional, no token"),
             ("db-hs256", "/bench/auth/db, valid HS256 token"),
             ("db-es256", "/bench/auth/db, valid ES256 token")]
    found = {ep: [e for e in find(summary, ep) if "rps" in e["servers"].get("webgres", {})]
             for ep, _ in cases}

    def median(ep):
        return found[ep][0]["servers"]["webgres"]["rps"]["median"] if found[ep] else None

    base, anon = median("db-no-token"), median("db-anon")
    if not base and not anon:
        return L + ["Not measured in this run.", ""]
    rows = []
    for ep, name in cases:
        for e in found[ep]:
            w = e["servers"]["webgres"]
            rows.append(("%s, c=%d" % (name, e["conns"]),
                         "%s (%s–%s)" % (fmt_rps(w["rps"]["median"]), fmt_rps(w["rps"]["min"]),
                                         fmt_rps(w["rps"]["max"])),
                         "%.2f×" % (w["rps"]["median"] / anon) if anon else "–",
                         "%.2f×" % (w["rps"]["median"] / base) if base else "–"))
    L.append(md_table(["case", "webgres req/s (min–max)", "vs no token, same route",
                       "vs auth none"], rows))
    L.append("")
    hs = median("db-hs256")
    if hs and anon:
        ratio = hs / anon
        L.append("Target: HS256 within 5 %% of no token once cached (the same route without a "
                 "token): %.1f %% slower, %s." % ((1 - ratio) * 100, verdict(ratio >= 0.95)))
        L.append("")
    L.append("The four cases take turns in each repetition. Each token case sends one token on "
             "every request, so after the first it is found in the worker's cache of verified "
             "tokens: what remains is finding the token, looking it up, checking its times, and "
             "setting `request.jwt.claims`. Without a token the same route runs as "
             "`webgres.anon_role`, the role the tokens claim; the TechEmpower route, with auth "
             "none, runs as its owner and sets nothing.")
    L.append("")
    return L


def sse_md(rows):
    """The sse tier (bench/sse/run.sh): subscribers, delivery latency, worker RSS."""
    L = ["## Event streams (sse tier)", ""]
    if not rows:
        L.append("Not run (SSE=1, the default, runs it; bench/sse/run.sh alone runs only it).")
        return "\n".join(L) + "\n\n"
    L.append("Subscribers on one channel of an event-stream route; each of %d NOTIFYs, "
             "100 ms apart, carries its send time; latency is NOTIFY to the client "
             "reading the event, over every (subscriber, event) pair. Target: p99 "
             "<= 100 ms at 1,000 subscribers." % rows[0].get("events", 0))
    L.append("")
    table = []
    for r in rows:
        table.append((fmt_count(r["subscribers"]), "%d / %d" % (r["delivered"], r["expected"]),
                      "%.1f ms" % r["p50_ms"] if r.get("p50_ms") is not None else "-",
                      "%.1f ms" % r["p99_ms"] if r.get("p99_ms") is not None else "-",
                      "%.1f ms" % r["max_ms"] if r.get("max_ms") is not None else "-",
                      fmt_kib(r.get("worker_rss_kib_before", 0)), fmt_kib(r.get("worker_rss_kib_streaming", 0))))
    L.append(md_table(("subscribers", "delivered", "p50", "p99", "max", "worker RSS before", "worker RSS streaming"), table))
    return "\n".join(L) + "\n\n"


# ---------------------------------------------------------------- guard --

# The guard (bench/guard.sh) judges each TechEmpower case on the paired
# repetitions of the two builds: d_i = ln(this_i / older_i), rep i of each
# run side by side.  A case lost when the median of d is below ln(1 - LOSS)
# and a sign test over the pairs says the loss is more than noise: its exact
# one-sided upper confidence bound of the median (an order statistic of d)
# is below 0.  The error rate GUARD_ALPHA is shared among the cases judged
# (Bonferroni), so that an A/A run of every case flags none in 95 % of runs.
# On a busy machine throughput spreads too much for that to see LOSS; the
# instruction leg below, deterministic, then decides (guard_report: exit 1
# if either leg finds a loss, 0 if neither does and the instruction leg saw
# every route, 2 if neither does but both were too coarse).
GUARD_LOSS = 0.05
GUARD_ALPHA = 0.05             # chance that a run flags a case that did not lose
GUARD_POWER = 0.80             # "reliably": flagged in this share of runs
# A case whose smallest reliably flagged loss exceeds this × LOSS was
# measured too coarsely: the guard says so and names the REPS that would do.
GUARD_MAX_MDL_FACTOR = 1.2
# the standard error of a median of normal samples is this × s / sqrt(n)
MEDIAN_SE_FACTOR = 1.2533


def paired_log_ratios(servers):
    """ln(this / older) for each repetition both builds ran without errors."""
    pairs = {}
    for server in ("webgres", BASE):
        for r in servers.get(server, {}).get("runs", []):
            res = r.get("result")
            if res and not any(res["errors"].values()):
                pairs.setdefault(r["rep"], {})[server] = run_rps(r)
    return [math.log(p["webgres"] / p[BASE]) for _, p in sorted(pairs.items())
            if len(p) == 2 and p[BASE] > 0 and p["webgres"] > 0]


def sign_bound_rank(n, alpha):
    """The smallest u such that at least u of n pairs below the true median
    happens with chance at most alpha: the u-th smallest d is then a one-sided
    upper bound of the median at 1 - alpha.  None when n is too small."""
    tail = 0.0
    for u in range(n, 0, -1):
        p = tail + math.comb(n, u) / (1 << n)
        if p > alpha:
            return u + 1 if u < n else None
        tail = p
    return 1


def guard_alpha(cases):
    """The one-sided error rate of each case's test."""
    return GUARD_ALPHA / max(1, cases)


def guard_mdl(spread, n, loss=GUARD_LOSS, cases=1):
    """The smallest loss flagged in GUARD_POWER of runs with n paired
    repetitions whose log ratios spread with standard deviation `spread`
    (normal approximation): the estimate must fall below ln(1 - loss) and
    clear the sign test's bound.  None when n pairs can never pass the test."""
    if n < 2 or spread is None or sign_bound_rank(n, guard_alpha(cases)) is None:
        return None
    z = statistics.NormalDist()
    zc, zp = z.inv_cdf(1 - guard_alpha(cases)), z.inv_cdf(GUARD_POWER)
    se = MEDIAN_SE_FACTOR * spread / math.sqrt(n)
    need = max(-math.log(1 - loss) + zp * se, (zc + zp) * se)
    return 1 - math.exp(-need)


def guard_reps_needed(spread, loss=GUARD_LOSS, cases=1, mdl=None):
    """The fewest pairs for which guard_mdl falls to mdl (default
    GUARD_MAX_MDL_FACTOR × loss)."""
    mdl = mdl or GUARD_MAX_MDL_FACTOR * loss
    if not spread:
        spread = 1e-6
    # the largest standard error that keeps both conditions of guard_mdl,
    # then the n it takes, then up to where the sign test can pass too
    z = statistics.NormalDist()
    zc, zp = z.inv_cdf(1 - guard_alpha(cases)), z.inv_cdf(GUARD_POWER)
    se = min((math.log(1 - loss) - math.log(1 - mdl)) / zp, -math.log(1 - mdl) / (zc + zp))
    n = max(2, int((MEDIAN_SE_FACTOR * spread / se) ** 2) - 1)
    while guard_mdl(spread, n, loss, cases) is None or guard_mdl(spread, n, loss, cases) > mdl:
        n += 1
    return n


def guard_cases(cases, loss=GUARD_LOSS):
    """One verdict per TechEmpower case measured on both builds."""
    groups, order = {}, []
    for c in cases:
        if c.get("tier") != "tfb" or "unavailable" in c:
            continue
        key = case_key(c)
        if key not in groups:
            order.append(key)
        groups.setdefault(key, {}).setdefault(c["server"], {"runs": []})["runs"].append(c)
    judged = len(order)
    out = []
    for key in order:
        d = paired_log_ratios(groups[key])
        v = {"label": case_label(key), "reps": len(d)}
        if not d:
            v.update(verdict="unmeasured")
            out.append(v)
            continue
        spread = statistics.stdev(d) if len(d) >= 2 else None
        med = statistics.median(d)
        u = sign_bound_rank(len(d), guard_alpha(judged))
        upper = sorted(d)[u - 1] if u else None
        mdl = guard_mdl(spread, len(d), loss, judged)
        v.update(ratio=math.exp(med), upper=math.exp(upper) if upper is not None else None,
                 below=sum(1 for x in d if x < 0), spread=spread, mdl=mdl,
                 reps_needed=guard_reps_needed(spread, loss, judged) if spread is not None else None)
        if upper is not None and med < math.log(1 - loss) and upper < 0:
            v["verdict"] = "lost"
        elif mdl is None or mdl > GUARD_MAX_MDL_FACTOR * loss:
            v["verdict"] = "coarse"
        else:
            v["verdict"] = "ok"
        out.append(v)
    return out


# The guard's second leg counts user-space instructions per request under
# callgrind (bench/cpu_per_request.sh CALLGRIND=1, run by bench/guard.sh into
# DIR/instructions/): each build CG_COUNTS times on each route, the builds
# alternating.  Counts of the same code agree within a fraction of a percent
# whatever else the machine runs, so this leg sees what throughput on a busy
# machine cannot.  Per route, r = median(this build's counts) ÷ median(the
# older's) and s, the repeat spread, is the largest |ln(a ÷ b)| between two
# counts of one build (over both builds).  A loss of LOSS in throughput is
# 1 ÷ (1 - LOSS) the instructions, so the route lost when
#     ln r > -ln(1 - LOSS) - s:
# a real rise of LOSS reads at least -ln(1 - LOSS) - s and is always
# flagged, and a false alarm needs a real rise of at least LOSS - 2s.  A
# route is too coarse when s > LOSS / 2 (the rule could then flag no change
# at all: it is called lost only when ln r clears -ln(1 - LOSS) + s), or when
# s is unknown (one count per build; the rule is then read with s = 0).
# The leg reads build 0 of DIR/instructions/builds.tsv as the older build
# and the last as this one, and leaves out counts whose wrk run had errors.
INSTRUCTIONS_DIR = "instructions"


def load_instruction_counts(outdir):
    """(names, rows) of DIR/instructions/, or None when the leg was not run:
    names maps a build's index to its name, rows are instructions.tsv's."""
    path = os.path.join(outdir, INSTRUCTIONS_DIR, "instructions.tsv")
    if not os.path.exists(path):
        return None
    names = {}
    bpath = os.path.join(outdir, INSTRUCTIONS_DIR, "builds.tsv")
    if os.path.exists(bpath):
        with open(bpath) as f:
            for line in f:
                if line.strip():
                    i, name = line.rstrip("\n").split("\t", 1)
                    names[i] = name
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        rows = [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f if line.strip()]
    for r in rows:
        names.setdefault(r["build"], r["build"])
    return names, rows


def repeat_spread(counts):
    """The largest |ln(a ÷ b)| between two of one build's counts, or None
    with fewer than two."""
    return math.log(max(counts) / min(counts)) if len(counts) >= 2 else None


def guard_instruction_routes(names, rows, loss=GUARD_LOSS):
    """One verdict per route counted on both builds (see above)."""
    builds = sorted(names, key=int)
    older, this = builds[0], builds[-1]
    flag_at = -math.log(1 - loss)
    out = []
    for route in dict.fromkeys(r["route"] for r in rows):
        counts = {b: [int(r["instructions"]) for r in rows
                      if r["route"] == route and r["build"] == b and r.get("errors", "0") == "0"
                      and int(r["instructions"]) > 0]
                  for b in (older, this)}
        left_out = sum(1 for r in rows if r["route"] == route and r.get("errors", "0") != "0")
        v = {"route": route, "this": counts[this], "older": counts[older], "left_out": left_out}
        if older == this or not counts[this] or not counts[older]:
            v["verdict"] = "unmeasured"
            out.append(v)
            continue
        spreads = [x for x in (repeat_spread(counts[older]), repeat_spread(counts[this])) if x is not None]
        s = max(spreads) if spreads else None
        ratio = statistics.median(counts[this]) / statistics.median(counts[older])
        v.update(ratio=ratio, spread=s)
        coarse = s is None or s > loss / 2
        # with a known spread above LOSS / 2 the rise must clear LOSS plus the
        # spread; otherwise LOSS less the spread (unknown: none)
        v["flag_at"] = math.exp(flag_at + s if coarse and s is not None else flag_at - (s or 0))
        if ratio > v["flag_at"]:
            v["verdict"] = "lost"
        elif coarse:
            v["verdict"] = "coarse"
        else:
            v["verdict"] = "ok"
        out.append(v)
    return out


def guard_instruction_lines(names, rows, loss=GUARD_LOSS):
    """(markdown lines, verdicts) of the instruction leg."""
    verdicts = guard_instruction_routes(names, rows, loss)
    builds = sorted(names, key=int)
    older, this = names[builds[0]], names[builds[-1]]
    table = []
    for v in verdicts:
        shown = lambda c: ", ".join("{:,}".format(x) for x in c) or "–"
        note = " (%d count(s) with errors left out)" % v["left_out"] if v["left_out"] else ""
        if v["verdict"] == "unmeasured":
            table.append((v["route"], shown(v["this"]), shown(v["older"]), "–", "–", "–",
                          "not counted on both builds without errors" + note))
            continue
        table.append((v["route"], shown(v["this"]), shown(v["older"]), "%.4f×" % v["ratio"],
                      "%.2f %%" % (100 * v["spread"]) if v["spread"] is not None else "unknown",
                      "%.4f×" % v["flag_at"],
                      {"lost": "**LOST: %.1f %% more instructions**" % (100 * (v["ratio"] - 1)),
                       "coarse": "too coarse: spread over %.1f %%" % (50 * loss) if v["spread"] is not None
                       else "too coarse: one count per build, spread unknown (CG_COUNTS=1)",
                       "ok": "no loss of %.0f %%" % (100 * loss)}[v["verdict"]] + note))
    lines = ["## Instructions per request (callgrind)", "",
             "User-space instructions per request of the webgres worker, counted under callgrind "
             "(`bench/cpu_per_request.sh`, `DIR/%s/`), this build `%s` against `%s`. *this* and "
             "*older* list each count; *this ÷ older* is the ratio of their medians; *spread* the "
             "largest |ln(a ÷ b)| between two counts of one build; *flags above* the ratio over "
             "which the route lost: 1 ÷ (1 − %.2f) (a %.0f %% loss of throughput in instructions) "
             "less the spread, so that a real rise of %.0f %% is always flagged. A route whose "
             "spread is over %.1f %% (or unknown) is too coarse; it is then flagged only above "
             "1 ÷ (1 − %.2f) times e^spread."
             % (INSTRUCTIONS_DIR, this, older, loss, 100 * loss, 100 * loss, 50 * loss, loss), "",
             md_table(["route", "this", "older", "this ÷ older", "spread", "flags above", "verdict"], table), ""]
    spreads = [v["spread"] for v in verdicts if v.get("spread") is not None]
    unknown = [v for v in verdicts if v["verdict"] != "unmeasured" and v["spread"] is None]
    if spreads and not unknown:
        s = max(spreads)
        if s <= loss / 2:
            lines.append("Power: this leg flags every rise of at least %.0f %% in instructions per request "
                         "(the largest spread seen, %.2f %%, is under %.1f %%); it can only false-alarm "
                         "on a real rise of at least %.1f %%."
                         % (100 * loss, 100 * s, 50 * loss, 100 * (math.exp(-math.log(1 - loss) - 2 * s) - 1)))
        else:
            lines.append("Power: the largest spread seen, %.2f %%, is over %.1f %%: on those routes this "
                         "leg cannot tell a rise of %.0f %% from noise." % (100 * s, 50 * loss, 100 * loss))
    elif verdicts:
        lines.append("Power: unknown: %s counted once per build (CG_COUNTS=1), so their repeat spread "
                     "is not known; run with CG_COUNTS=2 or more."
                     % ("every route was" if len(unknown) == len(verdicts) else "%d route(s) were" % len(unknown)))
    lost = [v for v in verdicts if v["verdict"] == "lost"]
    if lost:
        lines.append("LOST: more than %.0f %% more instructions per request: %s." % (100 * loss, "; ".join(
            "%s (%.3f×)" % (v["route"], v["ratio"]) for v in lost)))
    elif not verdicts:
        lines.append("No route was counted.")
    elif any(v["verdict"] != "ok" for v in verdicts):
        lines.append("No route lost, but %d route(s) were counted too coarsely (or not at all) to see %.0f %%."
                     % (sum(1 for v in verdicts if v["verdict"] != "ok"), 100 * loss))
    else:
        lines.append("No route's instructions per request rose by %.0f %% or more." % (100 * loss))
    return lines, verdicts


def guard_report(outdir, loss=GUARD_LOSS):
    """Prints the guard's table and verdict; returns the exit status."""
    cases = load_jsonl(os.path.join(outdir, "raw", "cases.jsonl"))
    meta = {}
    if os.path.exists(os.path.join(outdir, "raw", "meta.json")):
        with open(os.path.join(outdir, "raw", "meta.json")) as f:
            meta = json.load(f)
    verdicts = guard_cases(cases, loss)
    rows = []
    for v in verdicts:
        if v["verdict"] == "unmeasured":
            rows.append((v["label"], "–", "–", "–", "–", "–", "not measured on both builds without errors"))
            continue
        rows.append((v["label"], "%d (%d lower)" % (v["reps"], v["below"]), "%.3f×" % v["ratio"],
                     "%.3f×" % v["upper"] if v["upper"] is not None else "–",
                     "%.1f %%" % (100 * v["spread"]) if v["spread"] is not None else "–",
                     "%.1f %%" % (100 * v["mdl"]) if v["mdl"] is not None else "–",
                     {"lost": "**LOST %.1f %%**" % (100 * (1 - v["ratio"])),
                      "coarse": "too coarse: REPS=%s would see %.1f %%" % (v["reps_needed"], 100 * GUARD_MAX_MDL_FACTOR * loss)
                      if v["reps_needed"] else "too coarse (one pair)",
                      "ok": "no loss over %.0f %%" % (100 * loss)}[v["verdict"]]))
    lines = ["# Guard: this build `%s` against `%s`" % (meta.get("git", "?"), meta.get("base_build", "?")), "",
             "Each case: the two builds' repetitions alternate; *pairs* counts the repetitions "
             "run side by side (and in how many this build was slower); *this ÷ older* is "
             "exp(median of ln(this_i ÷ older_i)); *bound* the sign test's one-sided upper "
             "bound of that median at %.2f %% error per case (%.0f %% shared among %d cases); "
             "*spread* the standard deviation of the log ratios (an A/A run, `bench/guard.sh "
             "HEAD`, shows the machine's own); *flags from* the smallest loss flagged in %.0f %% "
             "of runs at this spread and count. A case **lost** when the ratio is below %.2f× "
             "and the bound below 1.00×."
             % (100 * guard_alpha(len(verdicts)), 100 * GUARD_ALPHA, len(verdicts),
                100 * GUARD_POWER, 1 - loss), "",
             md_table(["case", "pairs", "this ÷ older", "bound", "spread", "flags from", "verdict"], rows), ""]
    lost = [v for v in verdicts if v["verdict"] == "lost"]
    coarse = [v for v in verdicts if v["verdict"] in ("coarse", "unmeasured")]
    mdls = [v["mdl"] for v in verdicts if v.get("mdl") is not None]
    if mdls:
        lines.append("Power: the smallest loss this run reliably flags is %.1f %% (median over cases; "
                     "worst %.1f %%)." % (100 * statistics.median(mdls), 100 * max(mdls)))
    elif verdicts:
        alpha = guard_alpha(len(verdicts))
        lines.append("Power: none. With %.2f %% error per case the sign test needs at least %d pairs "
                     "(all of them slower) to call any loss." % (100 * alpha, math.ceil(math.log2(1 / alpha))))
    if lost:
        lines.append("LOST more than %.0f %%: %s." % (100 * loss, "; ".join(
            "%s (%.3f×)" % (v["label"], v["ratio"]) for v in lost)))
    elif coarse:
        lines.append("No loss found, but %d case(s) were measured too coarsely to see %.0f %%: "
                     "rerun with more repetitions (REPS)." % (len(coarse), 100 * loss))
    else:
        lines.append("No case lost more than %.0f %%." % (100 * loss))
    lines.append("")
    counted = load_instruction_counts(outdir)
    ilost, isharp = [], False
    if counted is None:
        lines += ["## Instructions per request (callgrind)", "",
                  "Not counted (no `%s/instructions.tsv`: `GUARD_INSTRUCTIONS=0`, or the leg failed)."
                  % INSTRUCTIONS_DIR, ""]
    else:
        ilines, iverdicts = guard_instruction_lines(*counted, loss=loss)
        lines += ilines + [""]
        ilost = [v for v in iverdicts if v["verdict"] == "lost"]
        isharp = bool(iverdicts) and all(v["verdict"] == "ok" for v in iverdicts)
    if lost or ilost:
        status, verdict = 1, "a case lost (%s)." % " and ".join(
            w for w, l in (("throughput", lost), ("instructions per request", ilost)) if l)
    elif isharp:
        status = 0
        verdict = "no case lost; the instruction leg saw every route at %.0f %%%s." % (
            100 * loss, " (the throughput leg was too coarse in %d case(s), which the instruction "
            "leg covers)" % len(coarse) if coarse else "")
    elif coarse:
        status, verdict = 2, "no case lost, but both legs were too coarse to see %.0f %%%s." % (
            100 * loss, "" if counted is not None else " (the instruction leg did not run)")
    else:
        status, verdict = 0, "no case lost; the throughput leg saw every case at %.0f %%%s." % (
            100 * loss, "" if counted is None else " (the instruction leg alone was too coarse)")
    lines.append("**Verdict:** " + verdict)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "guard.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return status


# ---------------------------------------------------------------- chart --

def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def log_axis(vmin, vmax):
    lo = 10 ** math.floor(math.log10(max(vmin, 1e-9)))
    hi = 10 ** math.ceil(math.log10(max(vmax, lo * 10)))
    return lo, hi


def bar_panel(out, x0, y0, width, height, title, groups, series, colours, unit_fmt, ylabel):
    """groups: [(label, {series: value})]; log-scale grouped bars."""
    values = [v for _, d in groups for v in d.values() if v and v > 0]
    out.append('<text x="%d" y="%d" font-size="15" font-weight="bold">%s</text>' % (x0, y0 - 30, esc(title)))
    if not values:
        out.append('<text x="%d" y="%d" font-size="12">no data</text>' % (x0, y0 + 20))
        return
    lo, hi = log_axis(min(values), max(values))
    span = math.log10(hi) - math.log10(lo)

    def ypos(v):
        return y0 + height - (math.log10(max(v, lo)) - math.log10(lo)) / span * height

    d = lo
    while d <= hi * 1.0001:
        y = ypos(d)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (x0, y, x0 + width, y))
        out.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end">%s</text>' % (x0 - 6, y + 4, esc(unit_fmt(d))))
        d *= 10
    out.append('<text x="%d" y="%d" font-size="11" transform="rotate(-90 %d %d)" text-anchor="middle">%s</text>'
               % (x0 - 60, y0 + height // 2, x0 - 60, y0 + height // 2, esc(ylabel)))
    gw = width / max(1, len(groups))
    present = [s for s in series if any(s in dd for _, dd in groups)]
    bw = min(22.0, (gw - 8) / max(1, len(present)))
    for gi, (label, dd) in enumerate(groups):
        here = [s for s in present if dd.get(s) and dd[s] > 0]
        gx = x0 + gi * gw + (gw - bw * len(here)) / 2
        for si, s in enumerate(here):
            v = dd[s]
            y = ypos(v)
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>'
                       % (gx + si * bw, y, bw - 1, y0 + height - y, colours[s], esc(label), esc(s), esc(unit_fmt(v))))
        lx = x0 + gi * gw + gw / 2
        out.append('<text x="%.1f" y="%d" font-size="10" text-anchor="end" transform="rotate(-40 %.1f %d)">%s</text>'
                   % (lx, y0 + height + 14, lx, y0 + height + 14, esc(label)))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>' % (x0, y0 + height, x0 + width, y0 + height))
    lx = x0
    for s in present:
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (lx, y0 - 22, colours[s]))
        out.append('<text x="%d" y="%d" font-size="12">%s</text>' % (lx + 16, y0 - 12, esc(s)))
        lx += 30 + 8 * len(s)


def chart_svg(meta, summary):
    groups_rps, groups_lat = [], []
    for e in summary:
        d = {s: v["rps"]["median"] for s, v in e["servers"].items() if "rps" in v}
        if d:
            groups_rps.append((e["label"], d))
        w = e["servers"].get("webgres", {})
        if "latency_us" in w:
            groups_lat.append((e["label"], {p: w["latency_us"][p] / 1000.0 for p in PCTS}))
    n = max(len(groups_rps), len(groups_lat), 1)
    width = max(900, 110 + n * 70)
    pw, ph = width - 130, 300
    height = 2 * (ph + 230) + 40
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="Helvetica, Arial, sans-serif">' % (width, height, width, height),
           '<rect width="100%" height="100%" fill="white"/>']
    bar_panel(out, 100, 70, pw, ph,
              "Requests per second, median of %d (log scale) — %s" % (meta.get("reps", 1), meta.get("stamp", "")),
              groups_rps, SERVERS, COLOURS, fmt_rps, "req/s")
    lat_colours = {"p50": "#9ecae1", "p90": "#6baed6", "p99": "#3182bd", "p99.9": "#08519c"}
    bar_panel(out, 100, 70 + ph + 230, pw, ph, "webgres latency percentiles, ms (log scale)",
              groups_lat, PCTS, lat_colours, lambda v: ("%g" % float("%.3g" % v)), "ms")
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- main --

def mixed_md(raw, meta):
    """The mixed tier's section (bench/mixed.sh wrote its table), or nothing;
    with the older build's table after it when that was measured too."""
    table = os.path.join(raw, "mixed", "mixed.md")
    if not os.path.exists(table):
        return ""
    out = ("\n## Mixed tier: /db beside clients looping on a 1 s handler\n\n"
           "bench/mixed.sh: make run's settings, /db at 64 connections alone and beside "
           "2, 8 and 32 clients that each loop request -> response on a 1 s route. "
           "Target, medians: /db p99 at most 2x alone, req/s at least 0.8x alone; "
           "slow requests answered, not refused.\n\n" + open(table).read())
    base_table = os.path.join(raw, "mixed-base", "mixed.md")
    if os.path.exists(base_table):
        out += ("\n### The same, on the older build `%s`\n\nIts own cluster and its own run "
                "of bench/mixed.sh, just after this build's.\n\n" % meta.get("base_build", "?")
                + open(base_table).read())
    return out + "\n"


def stream_md(raw):
    """The stream tier's section (bench/stream.sh wrote its table), or nothing."""
    table = os.path.join(raw, "stream", "stream.md")
    if not os.path.exists(table):
        return ""
    return ("\n## Stream tier: a 1M-row table export\n\n"
            "bench/stream.sh: one worker, two executors; curl downloads a route in mode "
            "stream (SELECT * FROM a table of 1M rows of about 200 bytes) as a JSON array, "
            "NDJSON and CSV. Time to first byte, rows/s over the whole download, the "
            "processes' peak private memory (RssAnon, sampled) and their VmHWM (which also "
            "counts the shared buffers they touched).\n\n" + open(table).read())


TLS_CASES = {
    "clear-h1": "cleartext HTTP/1.1, keep-alive",
    "tls-h1": "TLS, HTTP/1.1 (ALPN), keep-alive",
    "tls-h2": "TLS, HTTP/2 (ALPN), one stream per connection at a time",
    "clear-h1-close": "cleartext HTTP/1.1, a new connection per request",
    "tls-h1-close": "TLS HTTP/1.1, a new connection per request (wrk resumes its session)",
    "tls-h1-full": "TLS, a new connection and a full handshake per request (HTTP/1.0)",
}
TLS_TABLE = [("h2load", "/json", ["clear-h1", "tls-h1", "tls-h2"]),
             ("h2load", "/db", ["clear-h1", "tls-h1", "tls-h2"]),
             ("wrk", "/json", ["clear-h1", "clear-h1-close", "tls-h1-close"]),
             ("s_time", "/json", ["tls-h1-full"])]
TLS_HANDSHAKE_TARGET = 0.9      # full handshakes per second, webgres ÷ nginx
TLS_KEEPALIVE_TARGET = 0.85     # TLS ÷ cleartext HTTP/1.1 keep-alive, webgres


def tls_table(rows):
    """The TLS tier's tables from the lines of its tls.jsonl (bench/tls.sh).

    A line without "server" is webgres' (runs before nginx was measured);
    a line without "cpu_s" has no CPU figure.
    """
    rows = [dict(r, server=r.get("server", "webgres")) for r in rows]
    resumption = [r for r in rows if r.get("case") == "resumption"]
    negotiated = [r for r in rows if r.get("case") == "negotiated"]
    runs = [r for r in rows if r.get("case") in TLS_CASES]
    servers = ["webgres"] + (["nginx"] if any(r["server"] == "nginx" for r in runs) else [])

    def sel(server, case, tool, path):
        return [r for r in runs if (r["server"], r["case"], r["tool"], r["path"]) == (server, case, tool, path)]

    def med(server, case, tool, path, f=lambda r: r["rps"]):
        xs = [f(r) for r in sel(server, case, tool, path)]
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    def per_cpu(r):
        return r["rps"] * r["wall_s"] / r["cpu_s"] if r.get("cpu_s") and r.get("wall_s") else None

    def busy(r):
        return r["cpu_s"] / r["wall_s"] if r.get("cpu_s") is not None and r.get("wall_s") else None

    def trouble(server, case, tool, path):
        rs = sel(server, case, tool, path)
        e = sum(max(r["errors"], 0) for r in rs)
        n = sum(max(r["non2xx"], 0) for r in rs)
        failed = sum(1 for r in rs if r["errors"] < 0 or r["non2xx"] < 0 or not r["rps"])
        if not (e or n or failed):
            return ""
        return " ⚠ %d socket errors, %d non-2xx%s" % (e, n, ", %d runs unread" % failed if failed else "")

    def ratio(a, b, *marks):
        if a is None or not b:
            return "—"
        return "%.2f×%s" % (a / b, " ⚠" if any(marks) else "")

    reps = len({r["rep"] for r in runs})
    conns = sorted({r["conns"] for r in runs})
    out = ["%s connections; medians of %d repetition%s; each ratio is within one tool and one server "
           "unless it says webgres ÷ nginx.%s" % (
               "/".join(str(c) for c in conns) or "?", reps, "" if reps == 1 else "s",
               "" if "nginx" in servers else " nginx was not measured in this run."), ""]
    head = "| case | path | tool | webgres req/s | ÷ its cleartext keep-alive |"
    rule = "| --- | --- | --- | --- | --- |"
    if "nginx" in servers:
        head += " nginx req/s | ÷ its cleartext keep-alive | webgres ÷ nginx |"
        rule += " --- | --- | --- |"
    out += [head, rule]
    for tool, path, cases in TLS_TABLE:
        for c in cases:
            w = med("webgres", c, tool, path)
            if w is None:
                continue
            wt = trouble("webgres", c, tool, path)
            line = "| %s | %s | %s | %.0f%s | %s |" % (
                TLS_CASES[c], path, tool, w, wt,
                ratio(w, med("webgres", "clear-h1", tool, path), wt, trouble("webgres", "clear-h1", tool, path)))
            if "nginx" in servers:
                n = med("nginx", c, tool, path)
                nt = trouble("nginx", c, tool, path) if n is not None else ""
                line += " %s%s | %s | %s |" % (
                    "—" if n is None else "%.0f" % n, nt,
                    ratio(n, med("nginx", "clear-h1", tool, path), nt, trouble("nginx", "clear-h1", tool, path)),
                    ratio(w, n, wt, nt))
            out.append(line)
    out.append("")

    if any(r.get("cpu_s") for r in runs):
        out += ["Requests per CPU-second of the server's own processes (webgres: the postmaster and all "
                "its children; nginx: its master and workers; utime + stime over the whole run, warm-up "
                "included), and how many cores the server kept busy: on a shared 2-core machine, where "
                "the load generator takes the rest, the fairer figure.", ""]
        head = "| case | path | tool | webgres cores busy | webgres req/CPU-s |"
        rule = "| --- | --- | --- | --- | --- |"
        if "nginx" in servers:
            head += " nginx cores busy | nginx req/CPU-s | webgres ÷ nginx |"
            rule += " --- | --- | --- |"
        out += [head, rule]
        for tool, path, cases in TLS_TABLE:
            for c in cases:
                w = med("webgres", c, tool, path, per_cpu)
                if w is None:
                    continue
                line = "| %s | %s | %s | %.2f | %.0f |" % (
                    TLS_CASES[c], path, tool, med("webgres", c, tool, path, busy), w)
                if "nginx" in servers:
                    n = med("nginx", c, tool, path, per_cpu)
                    nb = med("nginx", c, tool, path, busy)
                    line += " %s | %s | %s |" % ("—" if nb is None else "%.2f" % nb,
                                                 "—" if n is None else "%.0f" % n, ratio(w, n))
                out.append(line)
        out.append("")

    def new_connections(case, tool, label, target):
        """A line on new connections per second, webgres against nginx."""
        rate = {s: med(s, case, tool, "/json") for s in servers}
        if not rate["webgres"]:
            return
        bad = any(trouble(s, case, tool, "/json") for s in servers)
        line = "%s: webgres %.0f" % (label, rate["webgres"])
        if rate.get("nginx"):
            r = rate["webgres"] / rate["nginx"]
            line += ", nginx %.0f: webgres ÷ nginx **%.2f×**" % (rate["nginx"], r)
            if target:
                line += " (target ≥ %.1f×: %s)" % (
                    TLS_HANDSHAKE_TARGET,
                    "not judged, a run had errors" if bad else
                    "met" if r >= TLS_HANDSHAKE_TARGET else "not met")
            wc, nc = (med(s, case, tool, "/json", per_cpu) for s in ("webgres", "nginx"))
            if wc and nc:
                line += "; per CPU-second %.0f and %.0f: %.2f×" % (wc, nc, wc / nc)
        out.append(line + ".")

    new_connections("tls-h1-full", "s_time",
                    "Full TLS handshakes per second (ECDSA P-256, a fresh session each, "
                    "openssl s_time -new)", True)
    new_connections("tls-h1-close", "wrk",
                    "New TLS connections per second with the session resumed (wrk, Connection: "
                    "close; wrk keeps its session across reconnections)", False)
    ka = {s: (med(s, "tls-h1", "h2load", "/json"), med(s, "clear-h1", "h2load", "/json"),
              med(s, "tls-h2", "h2load", "/json")) for s in servers}
    if ka["webgres"][0] and ka["webgres"][1]:
        r = ka["webgres"][0] / ka["webgres"][1]
        bad = any(trouble("webgres", c, "h2load", "/json") for c in ("tls-h1", "clear-h1"))
        line = ("TLS ÷ cleartext keep-alive (h2load, HTTP/1.1, /json): webgres **%.2f×** (target ≥ %.2f×: %s)" % (
            r, TLS_KEEPALIVE_TARGET,
            "not judged, a run had errors" if bad else "met" if r >= TLS_KEEPALIVE_TARGET else "not met"))
        if "nginx" in servers and ka["nginx"][0] and ka["nginx"][1]:
            line += (", nginx %.2f×: what TLS costs nginx on this machine, where the load generator "
                     "encrypts and decrypts on the same cores" % (ka["nginx"][0] / ka["nginx"][1]))
        h2 = ["%s %.2f×" % (s, ka[s][2] / ka[s][1]) for s in servers if ka[s][1] and ka[s][2]]
        if h2:
            line += "; over HTTP/2: " + ", ".join(h2)
        out.append(line + ".")
    for r in negotiated:
        out.append("Negotiated with %s by %s: %s, %s, %s." % (
            r.get("client", "?"), r["server"], r.get("protocol") or "?", r.get("cipher") or "?",
            r.get("group") or "?"))
    by_h2load = {}
    for r in runs:
        if r.get("negotiated"):
            by_h2load.setdefault(r["server"], set()).add(r["negotiated"])
    for s in servers:
        if s in by_h2load:
            out.append("Negotiated with h2load by %s: %s." % (s, "; ".join(
                x.replace("/", ", ") for x in sorted(by_h2load[s]))))
    for r in resumption:
        out.append("Session resumption across %d %s workers: TLS 1.2 %d of %d connections resumed, "
                   "TLS 1.3 %d of %d." % (r["workers"], r["server"], r["tls12"], r["of"], r["tls13"], r["of"]))
    return "\n".join(out) + "\n"


def tls_md(raw):
    """The TLS tier's section (from bench/tls.sh's tls.jsonl, or its table), or nothing."""
    rows = load_jsonl(os.path.join(raw, "tls", "tls.jsonl"))
    table = os.path.join(raw, "tls", "tls.md")
    if rows:
        body = tls_table(rows)
    elif os.path.exists(table):
        with open(table) as f:
            body = f.read()
    else:
        return ""
    return ("\n## TLS tier: what TLS costs, against nginx\n\n"
            "bench/tls.sh: its own cluster with the TechEmpower database, webgres on a cleartext "
            "and a TLS port (ECDSA P-256 certificate), and nginx-light with the same certificate, "
            "TLS versions, ciphers, groups and session settings, as many worker processes as "
            "webgres has workers, answering /json, measured in the same repetitions. Keep-alive "
            "cases by h2load (HTTP/2: one stream per connection at a time, so every case has the "
            "same requests in flight); new-connection cases by wrk with Connection: close (wrk "
            "resumes its TLS session on each reconnection: abbreviated handshakes) and full "
            "handshakes by openssl s_time -new, several processes at once. Each ratio to cleartext is to cleartext "
            "HTTP/1.1 keep-alive measured by the same tool on the same server.\n\n"
            + body.rstrip("\n") + "\n\n")  # a blank line before the next section


def static_md(raw):
    """The static tier's section (bench/static.sh wrote its tables), or nothing."""
    table = os.path.join(raw, "static", "static.md")
    if not os.path.exists(table):
        return ""
    return ("\n## Static tier: files against nginx, and compression\n\n"
            "bench/static.sh: a static mount of a directory holding a 4 KB and a 1 MB file, "
            "and nginx-light (sendfile on) serving the same directory, in the same run; "
            "then a 100 KB JSON route with webgres.compress on, without and with "
            "Accept-Encoding: gzip.\n\n" + open(table).read())


def ratelimit_md(raw):
    """The rate-limit tier's section (bench/ratelimit.sh wrote its tables), or nothing."""
    table = os.path.join(raw, "ratelimit", "ratelimit.md")
    if not os.path.exists(table):
        return ""
    return ("\n## Rate-limit tier: a limit never hit, and clients over one\n\n"
            "bench/ratelimit.sh: the same routes without a rate limit and with one they "
            "never reach, and a route every request is over (429).\n\n" + open(table).read())


def uploads_md(raw):
    """The uploads tier's section (bench/uploads.sh wrote its table), or nothing."""
    table = os.path.join(raw, "uploads", "uploads.md")
    if not os.path.exists(table):
        return ""
    return ("\n## Uploads tier: bulk ingest and concurrent multipart uploads\n\n"
            "bench/uploads.sh: a CSV through one request (webgres.ingest) against psql's "
            "\\copy, then concurrent multipart uploads stored and checked byte for byte.\n\n"
            + open(table).read().replace("# Uploads\n\n", "", 1))


def websocket_md(raw):
    """The WebSocket tier's section (bench/websocket.sh wrote its report), or nothing."""
    table = os.path.join(raw, "websocket", "report.md")
    if not os.path.exists(table):
        return ""
    return "\n" + open(table).read().replace("# WebSocket tier", "## WebSocket tier", 1).replace(
        "\n## ", "\n### ")


def build(outdir):
    raw = os.path.join(outdir, "raw")
    meta = {}
    if os.path.exists(os.path.join(raw, "meta.json")):
        with open(os.path.join(raw, "meta.json")) as f:
            meta = json.load(f)
    cases = load_jsonl(os.path.join(raw, "cases.jsonl"))
    ops = ops_dict(load_jsonl(os.path.join(raw, "ops.jsonl")))
    summary = aggregate(cases)
    target_rows = targets(summary, ops, meta)
    sse_rows = load_jsonl(os.path.join(raw, "sse.json"))
    results = {
        "sse": sse_rows,
        "meta": meta,
        "cases": summary,
        "operational": ops,
        "targets": [{"target": n, "measured": m, "met": ok} for n, m, ok in target_rows],
    }
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write(report_md(meta, summary, ops, target_rows))
        f.write(mixed_md(raw, meta))
        f.write(stream_md(raw))
        f.write(tls_md(raw))
        f.write(static_md(raw))
        f.write(ratelimit_md(raw))
        f.write(uploads_md(raw))
        f.write(websocket_md(raw))
        f.write(sse_md(sse_rows))
    with open(os.path.join(outdir, "chart.svg"), "w") as f:
        f.write(chart_svg(meta, summary))


def main(argv):
    if len(argv) == 3 and argv[1] == "build":
        build(argv[2])
    elif len(argv) in (3, 4) and argv[1] == "guard":
        return guard_report(argv[2], float(argv[3]) if len(argv) == 4 else GUARD_LOSS)
    elif len(argv) == 3 and argv[1] == "tls-md":
        sys.stdout.write(tls_table(load_jsonl(argv[2])))
    elif len(argv) == 4 and argv[1] == "pgbench-json":
        pgbench_json(argv[2], argv[3])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
