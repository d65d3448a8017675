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
"""
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
    """(children %, self %, dso, symbol) or (self %, dso, symbol) lines."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or "%" not in line:
            continue
        m = re.match(r"\s*([\d.]+)%\s+(?:([\d.]+)%\s+)?(?:(\S+)\s+)?\[(.)\]\s+(.*)$", line)
        if m:
            a, b, dso, _, sym = m.groups()
            sym = re.sub(r"\s+-\s+-\s*$", "", sym).strip()
            out.append((float(a), float(b) if b else None, dso or "", sym))
    return out


def main():
    data = sys.argv[1]
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    us = float(os.environ.get("CPU_US_PER_REQUEST", "0"))
    scale = (lambda p: f" | {p * us / 100:.2f}") if us else (lambda p: "")
    unit = " | µs/request" if us else ""

    flat = rows(report(data, "--no-children", "--sort", "dso,symbol"))
    bydso = {}
    for pct, _, dso, sym in flat:
        kind = ("kernel" if dso.startswith("[kernel") else
                "libh2o" if "libh2o" in dso else
                "webgres.so" if "webgres" in dso else
                "postgres" if dso == "postgres" else
                "plpgsql.so" if "plpgsql" in dso else
                "pg_stat_statements.so" if "pg_stat_statements" in dso else
                "libc" if dso.startswith("libc") else "other")
        bydso[kind] = bydso.get(kind, 0.0) + pct
    print(f"| self time in | share{unit} |\n|---|---|" + ("---|" if us else ""))
    for kind, pct in sorted(bydso.items(), key=lambda kv: -kv[1]):
        print(f"| {kind} | {pct:.1f} %{scale(pct)} |")

    children = rows(report(data, "--children", "--sort", "symbol"))
    incl = {}
    for a, _, _, sym in children:
        incl[sym] = max(incl.get(sym, 0.0), a)
    print(f"\n| step (inclusive) | share{unit} |\n|---|---|" + ("---|" if us else ""))
    for name, funcs in STEPS:
        pct = max((incl.get(f, 0.0) for f in funcs), default=0.0)
        if pct > 0:
            print(f"| {name} | {pct:.1f} %{scale(pct)} |")

    print(f"\n| function (self) | library | share{unit} |\n|---|---|---|" + ("---|" if us else ""))
    for pct, _, dso, sym in flat[:25]:
        print(f"| `{sym}` | {dso} | {pct:.1f} %{scale(pct)} |")
    if requests:
        print(f"\n{requests} requests while recorded.")


if __name__ == "__main__":
    main()
