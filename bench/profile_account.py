#!/usr/bin/env python3
"""Where a webgres worker's time goes, from a perf profile with call graphs.

    perf record --call-graph dwarf -F 499 -p WORKER_PID -o perf.data -- sleep 5
    bench/profile_account.py perf.data [REQUESTS]

Prints a markdown account: the share of samples in the kernel, in libh2o,
in webgres.so, in Postgres and elsewhere (self time, by library), then the
inclusive share of the steps of a request (each a set of entry points whose
callees are counted with them; a step's share is that of its largest entry
point, since one step's entry points call each other), and the top functions
by self time.  With REQUESTS (the requests the worker served while
recorded) and the worker's CPU microseconds per request (CPU_US_PER_REQUEST
in the environment), each share is also given in microseconds per request.

    bench/profile_account.py --json perf.data REQUESTS CPU_US [MARKDOWN]

prints the same account as one JSON object instead, for bench/run.sh's
profile tier: the worker's CPU microseconds (CPU_US) over the REQUESTS it
served while recorded, the samples, and for each library, step and top
function its share and its microseconds per request (and writes the
markdown account, in microseconds per request, to MARKDOWN).
"""
import json
import os
import re
import subprocess
import sys

# The steps of a request: a name, then the functions whose inclusive time
# is the step's (the largest of them is taken).
STEPS = [
    ("libh2o: read, parse, write (whole request included)", ["on_read", "handle_incoming_request"]),
    ("webgres request (on_req: phases, pipeline, respond)", ["on_req"]),
    ("pipeline_run (route, transaction, handler)", ["pipeline_run"]),
    ("transaction start (StartTransactionCommand, snapshot)", ["StartTransactionCommand", "GetTransactionSnapshot"]),
    ("transaction commit (CommitTransactionCommand)", ["CommitTransactionCommand"]),
    ("SPI_connect + SPI_finish", ["SPI_connect", "SPI_finish"]),
    ("handler (handler_run: plan, execute, shape)", ["handler_run"]),
    ("plan cache check (GetCachedPlan)", ["GetCachedPlan", "SPI_plan_get_cached_plan"]),
    ("executor start (ExecutorStart)", ["standard_ExecutorStart", "ExecutorStart"]),
    ("executor run (ExecutorRun)", ["standard_ExecutorRun", "ExecutorRun"]),
    ("executor end (ExecutorEnd)", ["standard_ExecutorEnd", "ExecutorEnd"]),
    ("PL/pgSQL (plpgsql_call_handler)", ["plpgsql_call_handler"]),
    ("one-row evaluation without the executor (simple_eval_run)", ["simple_eval_run"]),
    ("response from the row (response_from_row)", ["response_from_row"]),
    ("sending (respond_send: filters, h2o_send)", ["respond_send"]),
    ("pg_stat_statements (pgss_store)", ["pgss_store"]),
    ("pgstat_report_activity", ["pgstat_report_activity"]),
    ("memory context reset after the request", ["MemoryContextReset"]),
    ("vfprintf (any caller)", ["__vfprintf_internal", "vfprintf", "_IO_vfprintf", "__vsprintf_internal"]),
]


def report(data, *args):
    return subprocess.run(["perf", "report", "-i", data, "--stdio", "-g", "none",
                           "--percent-limit", "0", *args],
                          capture_output=True, text=True, check=True).stdout


def rows(text):
    """(children %, self %, dso, symbol, samples) from lines of perf report:
    children %, then self % (with --children), then the sample count (with
    -n), then the dso (when sorted by it), then [.] or [k] and the symbol."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or "%" not in line:
            continue
        m = re.match(r"\s*([\d.]+)%\s+(?:([\d.]+)%\s+)?(?:(\d+)\s+)?(?:(\S+)\s+)?\[(.)\]\s+(.*)$", line)
        if m:
            a, b, n, dso, _, sym = m.groups()
            sym = re.sub(r"\s+-\s+-\s*$", "", sym).strip()
            out.append((float(a), float(b) if b else None, dso or "", sym, int(n) if n else 0))
    return out


def library(dso):
    """The library a dso is counted under."""
    return ("kernel" if dso.startswith("[kernel") else
            "libh2o" if "libh2o" in dso else
            "webgres.so" if "webgres" in dso else
            "postgres" if dso == "postgres" else
            "plpgsql.so" if "plpgsql" in dso else
            "pg_stat_statements.so" if "pg_stat_statements" in dso else
            "libc" if dso.startswith("libc") else "other")


def account(data):
    """(samples, {library: %}, [(step, %)], [(symbol, dso, %)]) of a perf.data."""
    flat = rows(report(data, "-n", "--no-children", "--sort", "dso,symbol"))
    samples = sum(r[4] for r in flat)
    bydso = {}
    for pct, _, dso, _, _ in flat:
        bydso[library(dso)] = bydso.get(library(dso), 0.0) + pct
    incl = {}
    for a, _, _, sym, _ in rows(report(data, "--children", "--sort", "symbol")):
        incl[sym] = max(incl.get(sym, 0.0), a)
    steps = [(name, max((incl.get(f, 0.0) for f in funcs), default=0.0)) for name, funcs in STEPS]
    top = [(sym, dso, pct) for pct, _, dso, sym, _ in flat]
    return samples, bydso, steps, top


def markdown(samples, bydso, steps, top, us=0.0, requests=0):
    """The account as markdown tables; with us (the worker's CPU microseconds
    per request), each share in microseconds per request too."""
    scale = (lambda p: f" | {p * us / 100:.2f}") if us else (lambda p: "")
    unit = " | µs/request" if us else ""
    out = [f"| self time in | share{unit} |\n|---|---|" + ("---|" if us else "")]
    for kind, pct in sorted(bydso.items(), key=lambda kv: -kv[1]):
        out.append(f"| {kind} | {pct:.1f} %{scale(pct)} |")
    out.append(f"\n| step (inclusive) | share{unit} |\n|---|---|" + ("---|" if us else ""))
    for name, pct in steps:
        if pct > 0:
            out.append(f"| {name} | {pct:.1f} %{scale(pct)} |")
    out.append(f"\n| function (self) | library | share{unit} |\n|---|---|---|" + ("---|" if us else ""))
    for sym, dso, pct in top[:25]:
        out.append(f"| `{sym}` | {dso} | {pct:.1f} %{scale(pct)} |")
    out.append(f"\n{samples} samples.")
    if requests:
        out.append(f"{requests} requests while recorded.")
    return "\n".join(out) + "\n"


def json_main(data, requests, cpu_us, md_path=None):
    samples, bydso, steps, top = account(data)
    us = cpu_us / requests if requests else None
    per = (lambda p: round(p * us / 100, 3)) if us else (lambda p: None)
    if md_path:
        with open(md_path, "w") as f:
            f.write(markdown(samples, bydso, steps, top, us or 0.0, requests))
    print(json.dumps({
        "cpu_us": round(cpu_us), "requests": requests, "samples": samples,
        "us_per_request": round(us, 3) if us else None,
        "libraries": [{"name": k, "share": round(p, 2), "us": per(p)}
                      for k, p in sorted(bydso.items(), key=lambda kv: -kv[1])],
        "steps": [{"name": n, "share": round(p, 2), "us": per(p)} for n, p in steps if p > 0],
        "top": [{"symbol": s, "dso": d, "share": round(p, 2), "us": per(p)} for s, d, p in top[:15]],
    }))


def main():
    if sys.argv[1] == "--json":
        json_main(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]),
                  sys.argv[5] if len(sys.argv) > 5 else None)
        return
    data = sys.argv[1]
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    us = float(os.environ.get("CPU_US_PER_REQUEST", "0"))
    sys.stdout.write(markdown(*account(data), us, requests))


if __name__ == "__main__":
    main()
