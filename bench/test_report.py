#!/usr/bin/env python3
"""test_report.py: checks that report.py refuses the figures it must refuse.

    python3 bench/test_report.py [-v]

bench/run.sh runs it before measuring anything, so that an hour of bench is
never spent on a report that would quote a wrong figure. It builds reports
from made-up raw results in a temporary directory and reads them back:
latency that cannot be right (pipelined wrk runs, percentiles of 0, pgbench
logging 0 us transactions) is never reported, a ratio against a server that
had errors is marked and not counted, the guard calls a loss only where
the pairs agree and its instruction leg a rise beyond its counts' spread
(and when each leg is too coarse, and the exit status of each combination),
the fault tier's errors, a dirty tree and the command are stated, the TLS tier's table reads its lines against nginx's and
without them (runs before nginx was measured), the profile tier's
per-request account renders (or says it was not measured), and
profile_account.py reads perf's report lines into the shares by library,
step and function that account is made of. Python 3 standard library
only.
"""
import contextlib
import io
import json
import math
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_account  # noqa: E402
import report  # noqa: E402


def wrk_result(rps, p50=500, p90=900, p99=2000, p999=4000, errors=None, status=0, **extra):
    e = {"connect": 0, "read": 0, "write": 0, "timeout": 0, "status": status}
    e.update(errors or {})
    r = {"requests": int(rps * 3), "duration_us": 3000000, "bytes": 0, "errors": e,
         "latency_us": {"min": 10, "mean": p50, "stdev": 1.0, "max": p999 * 2,
                        "p50": p50, "p75": p90, "p90": p90, "p99": p99, "p99.9": p999}}
    r.update(extra)
    return r


def case(endpoint, path, conns, pipeline, server, result):
    return {"tier": "tfb", "endpoint": endpoint, "path": path, "conns": conns, "pipeline": pipeline,
            "server": server, "rep": 1, "seconds": 3, "wall_ms": 3000, "cpu_s": 1.0, "result": result}


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="webgres-report-test.")
        os.mkdir(os.path.join(self.dir, "raw"))
        self.meta = {"stamp": "T", "quick": 1, "reps": 1, "duration_s": 3, "workers": 4,
                     "conns": [256, 512], "qconns": 512, "git": "abc1234",
                     "command": "QUICK='1' bench/run.sh", "share_read_transactions": "off"}
        self.ops = [{"key": "elapsed_s", "value": 219}]
        self.cases = []

    def tearDown(self):
        shutil.rmtree(self.dir)

    def build(self):
        raw = os.path.join(self.dir, "raw")
        with open(os.path.join(raw, "meta.json"), "w") as f:
            json.dump(self.meta, f)
        for name, rows in (("cases.jsonl", self.cases), ("ops.jsonl", self.ops)):
            with open(os.path.join(raw, name), "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
        report.build(self.dir)
        with open(os.path.join(self.dir, "results.json")) as f:
            results = json.load(f)
        with open(os.path.join(self.dir, "report.md")) as f:
            md = f.read()
        return results, md

    def server(self, results, label, server):
        for c in results["cases"]:
            if c["label"] == label:
                return c["servers"][server]
        self.fail("no case %s" % label)

    def target(self, results, name):
        for t in results["targets"]:
            if t["target"].startswith(name):
                return t
        self.fail("no target %s" % name)

    def test_older_build_is_compared_rep_by_rep(self):
        self.meta["base_build"] = "109b006"
        for rep, (new, old) in enumerate(((100000, 80000), (90000, 100000), (110000, 100000)), 1):
            for server, rps in (("webgres", new), ("webgres-base", old), ("h2o", 120000)):
                c = case("plaintext", "/plaintext", 256, 1, server, wrk_result(rps))
                c["rep"] = rep
                self.cases.append(c)
        results, md = self.build()
        base = results["cases"][0]["base"]
        self.assertAlmostEqual(base["ratio"], 1.0)             # medians 100k and 100k
        self.assertAlmostEqual(base["rep_ratio"]["min"], 0.9)  # rep 2: 90k beside 100k
        self.assertAlmostEqual(base["rep_ratio"]["max"], 1.25)  # rep 1: 100k beside 80k
        self.assertIn("## Against the older build", md)
        self.assertIn("h2o 0.83× → 0.83×", md)
        self.assertIn("older build `109b006`", md)

    def test_axum_is_compared_in_every_techempower_case(self):
        for endpoint, path, w, a in (("db", "/db", 60000, 50000), ("fortunes", "/fortunes", 30000, 40000)):
            cw = case(endpoint, path, 64, 1, "webgres", wrk_result(w))
            cw.update(cpu_s=2.0, machine_cpu_s=6.0)
            ca = case(endpoint, path, 64, 1, "axum", wrk_result(a))
            ca.update(cpu_s=3.0, machine_cpu_s=6.0)
            self.cases += [cw, ca]
        # not a TechEmpower case: no row in the axum section
        c = case("select1", "/select1", 64, 1, "webgres", wrk_result(1000))
        c["tier"] = "overhead"
        self.cases.append(c)
        results, md = self.build()
        section = md.split("## Against axum (webgres ÷ axum)")[1].split("\n## ")[0]
        self.assertAlmostEqual(results["cases"][0]["ratios"]["axum"], 1.2)
        # /db: 180,000 requests over 2 CPU-s against 150,000 over 3
        self.assertEqual(self.server(results, "/db c=64", "webgres")["requests_per_cpu_s"], 90000)
        self.assertEqual(self.server(results, "/db c=64", "axum")["requests_per_machine_cpu_s"], 25000)
        self.assertIn("| /db c=64 | 60.0k (60.0k–60.0k) | 50.0k (50.0k–50.0k) | **1.20×** | 90.0k | 50.0k | 1.80× "
                      "| 30.0k | 25.0k | 1.20× |", section)
        self.assertIn("| /fortunes c=64 | 30.0k (30.0k–30.0k) | 40.0k (40.0k–40.0k) | **0.75×** |", section)
        self.assertNotIn("/select1", section)
        self.assertIn("| 50.0k → **1.20×** |", md)     # the ratio table's axum column

    def test_axum_ratio_with_errors_is_marked(self):
        self.cases += [case("db", "/db", 64, 1, "webgres", wrk_result(60000)),
                       case("db", "/db", 64, 1, "axum", wrk_result(50000, status=12))]
        _, md = self.build()
        self.assertIn("1.20× ⚠ (axum had 0 socket errors, 12 non-2xx)", md)

    def guard_cases(self, this, older, endpoint="db", path="/db"):
        for rep, (new, old) in enumerate(zip(this, older), 1):
            for server, rps in (("webgres", new), ("webgres-base", old)):
                c = case(endpoint, path, 256, 1, server, wrk_result(rps))
                c["rep"] = rep
                self.cases.append(c)

    def guard(self):
        self.meta["base_build"] = "109b006"
        self.build()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = report.guard_report(self.dir)
        return status, out.getvalue()

    def test_guard_flags_a_loss_beyond_the_spread(self):
        noise = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.02, 0.98]
        self.guard_cases([90000 * n for n in noise], [100000 * n for n in reversed(noise)])
        self.guard_cases([100000 * n for n in noise], [100000 * n for n in reversed(noise)], "json", "/json")
        status, text = self.guard()
        self.assertEqual(status, 1)
        self.assertIn("LOST more than 5 %: /db c=256 (0.900×)", text)
        self.assertIn("| /db c=256 | 10 (10 lower) | 0.900× |", text)
        self.assertIn("| /json c=256 | 10 (4 lower) | 1.000× |", text)
        self.assertIn("no loss over 5 %", text)
        self.assertIn("Power: the smallest loss this run reliably flags is", text)

    def test_guard_does_not_flag_a_loss_below_the_threshold(self):
        noise = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.02, 0.98]
        self.guard_cases([97000 * n for n in noise], [100000 * n for n in reversed(noise)])
        status, text = self.guard()
        self.assertEqual(status, 0)
        self.assertIn("No case lost more than 5 %.", text)

    def test_guard_does_not_flag_noise(self):
        # three pairs 7 % down, two 10 % up: the median reads a 7 % loss, but
        # the pairs disagree and the bootstrap bound stays above 1
        self.guard_cases([93000, 110000, 92000, 112000, 93000], [100000] * 5)
        status, text = self.guard()
        self.assertNotIn("LOST", text)
        self.assertEqual(status, 2)                    # and it says REPS is too low to tell
        self.assertRegex(text, r"too coarse: REPS=\d+ would see 6.0 %")

    def test_guard_aa_run_flags_nothing(self):
        # the same build twice in 14 cases, 12 pairs each, spreading by 10 %
        # as on a busy machine: judged one by one at 5 % each, one case of
        # these reads as a loss (so would 8 of 60 such runs; with the 5 %
        # shared among the cases, 2 of 60)
        import random
        rng = random.Random(10)
        for i in range(14):
            path = "/queries?queries=%d" % (i + 1)
            self.guard_cases([100000 * math.exp(rng.gauss(0, 0.10)) for _ in range(12)],
                             [100000] * 12, "queries", path)
        status, text = self.guard()
        self.assertNotIn("LOST", text)
        self.assertIn("0.36 % error per case (5 % shared among 14 cases)", text)

    def test_guard_power(self):
        # 10 pairs spreading by 2 %: the median's standard error is
        # 1.2533 * 0.02 / sqrt(10) = 0.79 %; the estimate must clear ln 0.95
        # by 0.84 of it: 1 - 0.95 * exp(-0.0084 * 0.79) = 5.6 %
        self.assertAlmostEqual(report.guard_mdl(0.02, 10), 0.0563, places=3)
        for spread in (0.01, 0.03, 0.08):
            n = report.guard_reps_needed(spread)
            self.assertLessEqual(report.guard_mdl(spread, n), 0.06 + 1e-9)
            fewer = report.guard_mdl(spread, n - 1)     # and one fewer would not do
            self.assertTrue(fewer is None or fewer > 0.06)
        # the sign test alone: 4 pairs can never reach 5 % error, 5 can (1/32)
        self.assertIsNone(report.sign_bound_rank(4, 0.05))
        self.assertEqual(report.sign_bound_rank(5, 0.05), 5)
        self.assertEqual(report.sign_bound_rank(10, 0.025), 9)   # P(>= 9 of 10) = 1.1 %
        self.assertEqual(report.sign_bound_rank(30, 0.05), 20)   # P(>= 20 of 30) = 4.9 %

    def test_guard_leaves_out_pairs_with_errors(self):
        self.guard_cases([90000] * 5, [100000] * 5)
        self.cases[0]["result"]["errors"]["status"] = 3   # rep 1 of this build
        status, text = self.guard()
        self.assertIn("| /db c=256 | 4 (4 lower) |", text)

    # the instruction leg: DIR/instructions/ as bench/cpu_per_request.sh
    # writes it, build 0 the older, build 1 this one
    def instruction_counts(self, routes, errors=None):
        """routes: {route: (this build's counts, the older's counts)}."""
        d = os.path.join(self.dir, "instructions")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "builds.tsv"), "w") as f:
            f.write("0\t109b006\n1\tthis tree (abc1234)\n")
        with open(os.path.join(d, "instructions.tsv"), "w") as f:
            f.write("build\troute\tcount\trequests\tinstructions\terrors\n")
            for route, (this, older) in routes.items():
                for count, (a, b) in enumerate(zip(older, this), 1):
                    # the builds alternate, each in turn first
                    for build, n in ((("0", a), ("1", b)) if count % 2 else (("1", b), ("0", a))):
                        e = (errors or {}).get((route, build, count), 0)
                        f.write("%s\t%s\t%d\t2000\t%d\t%d\n" % (build, route, count, n, e))

    def throughput(self, kind):
        """A throughput leg that finds no loss ("ok"), cannot tell ("coarse")
        or finds one ("lost")."""
        noise = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.02, 0.98]
        if kind == "ok":
            self.guard_cases([100000 * n for n in noise], [100000 * n for n in reversed(noise)])
        elif kind == "coarse":
            self.guard_cases([93000, 110000, 92000, 112000, 93000], [100000] * 5)
        else:
            self.guard_cases([90000 * n for n in noise], [100000 * n for n in reversed(noise)])

    def test_instructions_flag_a_seven_percent_rise(self):
        self.throughput("coarse")
        self.instruction_counts({"/db": ([58320, 58350], [54491, 54577]),
                                 "/json": ([21600, 21610], [21608, 21590])})
        status, text = self.guard()
        self.assertEqual(status, 1)
        self.assertIn("| /db | 58,320, 58,350 | 54,491, 54,577 | 1.0697× | 0.16 % |", text)
        self.assertIn("**LOST: 7.0 % more instructions**", text)
        self.assertIn("LOST: more than 5 % more instructions per request: /db (1.070×).", text)
        self.assertIn("**Verdict:** a case lost (instructions per request).", text)
        self.assertRegex(text, r"\| /json \|.*\| no loss of 5 % \|")
        # the throughput table and its power line are still there
        self.assertIn("| /db c=256 | 5 (3 lower) |", text)
        self.assertIn("measured too coarsely to see 5 %", text)

    def test_instructions_do_not_flag_a_two_percent_rise(self):
        self.throughput("coarse")
        self.instruction_counts({"/db": ([55580, 55600], [54491, 54577])})
        status, text = self.guard()
        self.assertNotIn("LOST", text)
        # the throughput leg could not see 5 %, the instruction leg could
        self.assertEqual(status, 0)
        self.assertIn("no case lost; the instruction leg saw every route at 5 % (the throughput leg "
                      "was too coarse in 1 case(s)", text)
        self.assertIn("flags every rise of at least 5 % in instructions per request", text)

    def test_instructions_aa_run_flags_nothing(self):
        # the same build twice, nine routes, two counts each, spreading by
        # up to 0.3 % (repeat counts here agree closer than that)
        import random
        rng = random.Random(3)
        routes = {}
        for i, route in enumerate(("/plaintext", "/json", "/db", "/fortunes", "/queries?queries=1",
                                   "/queries?queries=20", "/updates?queries=1", "/updates?queries=20",
                                   "/cached-queries?count=100")):
            base = 10000 * (i + 1)
            routes[route] = tuple([round(base * math.exp(rng.uniform(-0.0015, 0.0015))) for _ in range(2)]
                                  for _ in range(2))
        routes["/db"] = ([54491, 54654], [54500, 54550])    # 0.30 % between this build's counts
        self.throughput("ok")
        self.instruction_counts(routes)
        status, text = self.guard()
        self.assertNotIn("LOST", text)
        self.assertEqual(status, 0)
        self.assertEqual(text.count("| no loss of 5 % |"), 9)
        self.assertIn("the largest spread seen, 0.30 %, is under 2.5 %", text)
        self.assertIn("false-alarm on a real rise of at least 4.6 %", text)

    def test_instructions_flag_a_rise_of_loss_read_low_by_the_spread(self):
        # a 5 % loss of throughput is 5.26 % more instructions; read 0.3 %
        # low, at 4.95 %, it is flagged all the same
        self.throughput("ok")
        self.instruction_counts({"/fortunes": ([104950, 105265], [100000, 100000])})
        status, text = self.guard()
        self.assertEqual(status, 1)
        self.assertIn("| /fortunes | 104,950, 105,265 | 100,000, 100,000 | 1.0511× | 0.30 % | 1.0495× |", text)

    def test_instructions_counted_once_are_coarse(self):
        self.throughput("coarse")
        self.instruction_counts({"/db": ([54600], [54491]), "/json": ([21600], [21608])})
        status, text = self.guard()
        self.assertEqual(status, 2)
        self.assertIn("too coarse: one count per build, spread unknown (CG_COUNTS=1)", text)
        self.assertIn("Power: unknown: every route was counted once per build (CG_COUNTS=1)", text)
        self.assertIn("both legs were too coarse to see 5 %", text)
        # with a sharp throughput leg the run is judged by it
        shutil.rmtree(self.dir); self.setUp()
        self.throughput("ok")
        self.instruction_counts({"/db": ([54600], [54491])})
        status, text = self.guard()
        self.assertEqual(status, 0)
        self.assertIn("the throughput leg saw every case at 5 % (the instruction leg alone was too coarse)", text)
        # and a rise far beyond LOSS is flagged even counted once
        shutil.rmtree(self.dir); self.setUp()
        self.throughput("coarse")
        self.instruction_counts({"/db": ([60000], [54491])})
        status, text = self.guard()
        self.assertEqual(status, 1)

    def test_instructions_with_a_wide_spread_are_coarse(self):
        # counts 4 % apart: a 3 % rise cannot be told from noise, 12 % can
        self.throughput("coarse")
        self.instruction_counts({"/db": ([103000, 103100], [100000, 104080]),
                                 "/json": ([112000, 112100], [100000, 104080])})
        status, text = self.guard()
        self.assertEqual(status, 1)
        self.assertRegex(text, r"\| /db \|.*\| 4.00 % \|.*\| too coarse: spread over 2.5 % \|")
        self.assertIn("LOST: more than 5 % more instructions per request: /json", text)
        self.assertIn("Power: the largest spread seen, 4.00 %, is over 2.5 %", text)
        shutil.rmtree(self.dir); self.setUp()
        self.throughput("coarse")
        self.instruction_counts({"/db": ([103000, 103100], [100000, 104080])})
        status, text = self.guard()
        self.assertEqual(status, 2)

    def test_instructions_exit_status(self):
        both_ok = {"/db": ([54600, 54620], [54491, 54577])}
        rise = {"/db": ([58320, 58350], [54491, 54577])}
        for kind, counts, want in (("ok", None, 0), ("coarse", None, 2), ("lost", None, 1),
                                   ("ok", both_ok, 0), ("coarse", both_ok, 0), ("lost", both_ok, 1),
                                   ("ok", rise, 1), ("coarse", rise, 1), ("lost", rise, 1)):
            with self.subTest(throughput=kind, instructions=counts):
                shutil.rmtree(self.dir); self.setUp()
                self.throughput(kind)
                if counts:
                    self.instruction_counts(counts)
                status, text = self.guard()
                self.assertEqual(status, want)
                if counts is None:
                    self.assertIn("Not counted (no `instructions/instructions.tsv`", text)

    def test_instructions_leave_out_counts_with_errors(self):
        self.throughput("coarse")
        # this build's second /db count had errors: one count left, spread unknown
        self.instruction_counts({"/db": ([54600, 70000], [54491, 54577])},
                                errors={("/db", "1", 2): 12})
        status, text = self.guard()
        self.assertNotIn("LOST", text)
        self.assertIn("| /db | 54,600 | 54,491, 54,577 | 1.0012× | 0.16 % |", text)
        self.assertIn("(1 count(s) with errors left out)", text)

    def test_capacity_target_needs_no_socket_errors(self):
        for conns, rps, timeouts in ((256, 100000, 0), (10000, 80000, 12)):
            c = case("plaintext-conns", "/plaintext", conns, 1, "webgres",
                     wrk_result(rps, errors={"timeout": timeouts}))
            c["tier"] = "capacity"
            self.cases.append(c)
        results, md = self.build()
        t = self.target(results, "plaintext: req/s at 10k connections")
        self.assertEqual(t["measured"], "0.80×, 12 socket errors")
        self.assertFalse(t["met"])

    def test_capacity_counts_tcp_segments_per_request(self):
        for conns, segs, delayed in ((256, 60000, 0), (10000, 90000, 12000)):
            c = case("plaintext-conns", "/plaintext", conns, 1, "webgres", wrk_result(10000))
            c["tier"] = "capacity"
            c["tcp"] = {"out_segs": segs, "delayed_acks": delayed, "loss_probes": 0}
            self.cases.append(c)
        results, md = self.build()
        w = self.server(results, "/plaintext c=10000", "webgres")
        self.assertAlmostEqual(w["tcp_per_request"]["segments"], 3.0)   # 90,000 over 30,000 requests
        self.assertIn("| 3.00 (0.40) |", md)
        self.assertIn("| 2.00 (0.00) |", md)

    def test_idle_connection_memory_that_fell_is_not_reported(self):
        c = case("plaintext-conns", "/plaintext", 256, 1, "webgres", wrk_result(10000))
        c["tier"] = "capacity"
        self.cases.append(c)
        self.ops.append({"key": "capacity_idle", "value": {
            "connections": 5000, "rss_delta_kib": -40448, "server_bytes_per_connection": -8284,
            "kernel_buffer_bytes_per_connection_both_ends": 0,
            "kernel_slab_bytes_per_connection_both_ends": 7931}})
        results, md = self.build()
        self.assertNotIn("-8284", md)
        self.assertIn("worker memory per connection **not measured**", md)

    def test_pipelined_latency_is_not_reported(self):
        self.cases += [case("plaintext-pipelined", "/plaintext", 256, 16, "webgres", wrk_result(4e5, p99=0, p999=0)),
                       case("plaintext-pipelined", "/plaintext", 256, 16, "h2o", wrk_result(3.9e5))]
        results, md = self.build()
        for s in ("webgres", "h2o"):
            d = self.server(results, "/plaintext (pipelined 16) c=256", s)
            self.assertNotIn("latency_us", d)
            self.assertIn("pipelined", d["latency_problem"])
        self.assertNotIn("| 0 µs", md.split("## Figures not reported")[0])
        self.assertIn("not measured †", md)

    def test_zero_percentile_is_flagged(self):
        self.cases += [case("json", "/json", 256, 1, "webgres", wrk_result(9e4)),
                       case("json", "/json", 256, 1, "h2o", wrk_result(1e5, p50=0))]
        results, md = self.build()
        self.assertIn("latency_us", self.server(results, "/json c=256", "webgres"))
        d = self.server(results, "/json c=256", "h2o")
        self.assertNotIn("latency_us", d)
        self.assertIn("p50", d["latency_problem"])
        self.assertIn("| /json c=256 | h2o | wrk gave p50 = 0 µs |", md)

    def test_pgbench_zero_latencies_are_flagged(self):
        self.cases += [case("db", "/db", 256, 1, "webgres", wrk_result(9e4)),
                       case("db", "/db", 256, 1, "pgbench",
                            wrk_result(6e4, p50=30, latency_samples=1000, latency_zero=400)),
                       case("db", "/db", 256, 1, "pgbench-sql",
                            wrk_result(5e4, p50=600, latency_samples=1000, latency_zero=0))]
        results, _ = self.build()
        self.assertIn("40%", self.server(results, "/db c=256", "pgbench")["latency_problem"])
        self.assertIn("latency_us", self.server(results, "/db c=256", "pgbench-sql"))

    def test_ratio_against_failing_reference_is_not_counted(self):
        self.cases += [case("db", "/db", 256, 1, "webgres", wrk_result(9e4)),
                       case("db", "/db", 256, 1, "node-pg", wrk_result(1e4, errors={"read": 7})),
                       case("db", "/db", 512, 1, "webgres", wrk_result(9e4)),
                       case("db", "/db", 512, 1, "node-pg", wrk_result(4e4, status=3))]
        results, md = self.build()
        t = self.target(results, "/db ≥ 3× node-pg")
        self.assertIsNone(t["met"], "a target judged only on marked ratios must read n/a")
        self.assertIn("not counted: node-pg had 7 socket errors", t["measured"])
        self.assertIn("node-pg had 0 socket errors, 3 non-2xx", t["measured"])
        self.assertIn("⚠ (node-pg had 7 socket errors, 0 non-2xx)", md)
        self.assertNotIn("**9.00×**", md)

    def test_clean_ratios_still_decide(self):
        self.cases += [case("db", "/db", 256, 1, "webgres", wrk_result(9e4)),
                       case("db", "/db", 256, 1, "node-pg", wrk_result(1e4)),
                       case("db", "/db", 512, 1, "webgres", wrk_result(9e4)),
                       case("db", "/db", 512, 1, "node-pg", wrk_result(4.5e4, errors={"timeout": 1}))]
        results, _ = self.build()
        self.assertTrue(self.target(results, "/db ≥ 3× node-pg")["met"])

    def test_p99_target_is_judged_at_256_connections(self):
        self.cases += [case("db", "/db", 256, 1, "webgres", wrk_result(9e4, p50=1000, p90=2000, p99=2500)),
                       case("db", "/db", 512, 1, "webgres", wrk_result(9e4, p50=1000, p90=2000, p99=9000))]
        results, _ = self.build()
        t = self.target(results, "/db p99 ≤ 3× p50 at 256 connections")
        self.assertTrue(t["met"])
        self.assertIn("2.5×", t["measured"])

    def test_fault_load_errors_are_printed_and_explained(self):
        self.meta["soak"] = 1
        self.ops += [
            {"key": "soak", "value": dict(wrk_result(5e4), sent={"/db": 10}, statuses={"200": 10})},
            {"key": "fault_load", "value": wrk_result(2e4, errors={"read": 358, "write": 344086})},
            {"key": "fault_restart-fast", "value": {"resumed_ms": 700}}]
        _, md = self.build()
        self.assertIn("read 358, write 344086", md)
        self.assertIn("write errors count reconnection attempts", md)

    def tls_rows(self, nginx=True, server_field=True, cpu=True, full_handshakes=True):
        """Made-up lines of bench/tls.sh's tls.jsonl: two repetitions."""
        rows = []
        figures = {("clear-h1", "h2load", "/json"): (100000, 120000),
                   ("tls-h1", "h2load", "/json"): (80000, 84000),
                   ("tls-h2", "h2load", "/json"): (70000, 78000),
                   ("clear-h1", "h2load", "/db"): (50000, None),
                   ("tls-h1", "h2load", "/db"): (40000, None),
                   ("tls-h2", "h2load", "/db"): (38000, None),
                   ("clear-h1", "wrk", "/json"): (110000, 130000),
                   ("clear-h1-close", "wrk", "/json"): (30000, 28000),
                   ("tls-h1-close", "wrk", "/json"): (1500, 2000),
                   ("tls-h1-full", "s_time", "/json"): (850, 1000)}
        if not full_handshakes:
            del figures[("tls-h1-full", "s_time", "/json")]
        for rep, scale in ((1, 0.9), (2, 1.1)):
            for (c, tool, path), (w, n) in figures.items():
                for server, rps in (("webgres", w), ("nginx", n)):
                    if rps is None or (server == "nginx" and not nginx):
                        continue
                    r = {"case": c, "tool": tool, "path": path, "conns": 64, "rep": rep,
                         "rps": rps * scale, "errors": 0, "non2xx": 0}
                    if server_field:
                        r["server"] = server
                    if cpu:
                        # webgres keeps 1 core busy, nginx 0.8, over 2 s
                        r.update(cpu_s=2.0 if server == "webgres" else 1.6, wall_s=2.0)
                    rows.append(r)
        rows.append({"case": "resumption", "tls12": 200, "tls13": 199, "of": 200, "workers": 4})
        if nginx:
            for server in ("webgres", "nginx"):
                rows.append({"case": "negotiated", "server": server, "client": "openssl s_client",
                             "protocol": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384",
                             "group": "X25519, 253 bits", "alpn": ""})
        return rows

    def build_tls(self, rows):
        os.mkdir(os.path.join(self.dir, "raw", "tls"))
        with open(os.path.join(self.dir, "raw", "tls", "tls.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        _, md = self.build()
        return md.split("## TLS tier")[1].split("\n## ")[0]

    def test_tls_against_nginx(self):
        section = self.build_tls(self.tls_rows())
        # medians of 0.9x and 1.1x are the figures; ratios to each server's own cleartext
        self.assertIn("| TLS, HTTP/1.1 (ALPN), keep-alive | /json | h2load | 80000 | 0.80× | 84000 | 0.70× | 0.95× |",
                      section)
        self.assertIn("| cleartext HTTP/1.1, keep-alive | /db | h2load | 50000 | 1.00× | — | — | — |", section)
        self.assertIn("| TLS HTTP/1.1, a new connection per request (wrk resumes its session) | /json | wrk "
                      "| 1500 | 0.01× | 2000 | 0.02× | 0.75× |", section)
        # the handshake target is judged on full handshakes (s_time), not on wrk's resumed ones
        self.assertIn("(ECDSA P-256, a fresh session each, openssl s_time -new): webgres 850, nginx 1000: "
                      "webgres ÷ nginx **0.85×** (target ≥ 0.9×: not met)", section)
        # per CPU-second: 850 req/s on 1 core against 1000 on 0.8
        self.assertIn("per CPU-second 850 and 1250: 0.68×", section)
        self.assertIn("with the session resumed (wrk, Connection: close; wrk keeps its session across "
                      "reconnections): webgres 1500, nginx 2000: webgres ÷ nginx **0.75×**; "
                      "per CPU-second 1500 and 2500: 0.60×.", section)
        self.assertIn("| TLS HTTP/1.1, a new connection per request (wrk resumes its session) | /json | wrk "
                      "| 1.00 | 1500 | 0.80 | 2500 | 0.60× |", section)
        self.assertIn("webgres **0.80×** (target ≥ 0.85×: not met), nginx 0.70×", section)
        self.assertIn("over HTTP/2: webgres 0.70×, nginx 0.65×", section)
        self.assertIn("Negotiated with openssl s_client by nginx: TLSv1.3, TLS_AES_256_GCM_SHA384, X25519", section)
        self.assertIn("Session resumption across 4 webgres workers: TLS 1.2 200 of 200", section)

    def test_tls_targets_met_and_errors_marked(self):
        rows = self.tls_rows()
        for r in rows:
            if r.get("case") == "tls-h1-full" and r.get("server") == "webgres":
                r["rps"] *= 1.12                 # 952 beside 1000
            if r.get("case") == "tls-h1" and r.get("server") == "webgres" and r["path"] == "/json":
                r["rps"] *= 1.1                  # 88000 beside 100000
        section = self.build_tls(rows)
        self.assertIn("webgres ÷ nginx **0.95×** (target ≥ 0.9×: met)", section)
        self.assertIn("webgres **0.88×** (target ≥ 0.85×: met)", section)
        for r in rows:
            if r.get("case") == "tls-h1-full" and r.get("server") == "nginx" and r["rep"] == 1:
                r["errors"] = 3
        shutil.rmtree(os.path.join(self.dir, "raw", "tls"))
        section = self.build_tls(rows)
        self.assertIn("| 1000 ⚠ 3 socket errors, 0 non-2xx | — | 0.95× ⚠ |", section)
        self.assertIn("(target ≥ 0.9×: not judged, a run had errors)", section)

    def test_tls_without_nginx_lines_still_renders(self):
        # a tls.jsonl written before nginx was measured: no "server", no CPU
        section = self.build_tls(self.tls_rows(nginx=False, server_field=False, cpu=False,
                                               full_handshakes=False))
        self.assertNotIn("Full TLS handshakes", section)
        self.assertIn("nginx was not measured in this run", section)
        self.assertIn("| case | path | tool | webgres req/s | ÷ its cleartext keep-alive |\n", section)
        self.assertIn("| TLS, HTTP/1.1 (ALPN), keep-alive | /json | h2load | 80000 | 0.80× |", section)
        self.assertIn("with the session resumed (wrk, Connection: close; wrk keeps its session across "
                      "reconnections): webgres 1500.", section)
        self.assertNotIn("per CPU-second", section)
        self.assertNotIn("nginx req/s", section)

    def test_tls_table_of_an_older_run(self):
        # before tls.jsonl: the report quotes the tls.md bench/tls.sh wrote
        os.makedirs(os.path.join(self.dir, "raw", "tls"))
        with open(os.path.join(self.dir, "raw", "tls", "tls.md"), "w") as f:
            f.write("| case | path |\n| --- | --- |\n| old | /json |\n")
        _, md = self.build()
        self.assertIn("| old | /json |", md.split("## TLS tier")[1])
    def profile_note(self, us, requests, libraries, steps, top, **extra):
        total = sum(libraries.values())
        per = lambda v: round(v / total * us, 3)
        return {"cpu_us": us * requests, "requests": requests, "samples": 1000,
                "us_per_request": us, "pid": 4242, "conns": 64, "seconds": 3,
                "wrk_requests": requests * 4,
                "libraries": [{"name": n, "share": v / total * 100, "us": per(v)} for n, v in libraries.items()],
                "steps": [{"name": n, "share": v / total * 100, "us": per(v)} for n, v in steps.items()],
                "top": [{"symbol": sym, "dso": dso, "share": v / total * 100, "us": per(v)}
                        for sym, dso, v in top], **extra}

    def test_profile_per_request_is_rendered(self):
        self.ops += [
            {"key": "profile_request:/json", "value": self.profile_note(
                25.0, 20000, {"kernel": 15, "postgres": 5, "libh2o": 2, "webgres.so": 2, "libc": 1},
                {"sending (respond_send: filters, h2o_send)": 10},
                [("tcp_sendmsg", "[kernel.kallsyms]", 5), ("AllocSetAlloc", "postgres", 1)],
                us_per_request_unprofiled=24.0, sample_coverage=0.95)},
            {"key": "profile_request:/db", "value": self.profile_note(
                60.0, 9000, {"kernel": 20, "postgres": 30, "libh2o": 3, "webgres.so": 4, "libc": 3},
                {"executor run (ExecutorRun)": 12},
                [("ExecInterpExpr", "postgres", 3)])},
            {"key": "profile_request:/fortunes", "value": "no requests counted for worker 4242 in webgres.workers"},
            {"key": "profile", "value": "perf record -e cpu-clock -F 499 --call-graph dwarf,8192 on one webgres worker"}]
        _, md = self.build()
        section = md.split("## Where the time goes, per request")[1].split("\n## ")[0]
        self.assertIn("|  | `/json` | `/db` |", section)
        self.assertIn("| **worker CPU per request** | **25.0 µs** | **60.0 µs** |", section)
        self.assertIn("| worker CPU per request without perf | 24.0 µs | – |", section)
        self.assertIn("| requests the worker served while profiled | 20k | 9k |", section)
        self.assertIn("| perf samples (of the CPU time's at the sampling rate) | 1000 (95 %) | 1000 |", section)
        self.assertIn("| kernel | 15.0 (60 %) | 20.0 (33 %) |", section)
        self.assertIn("| postgres | 5.00 (20 %) | 30.0 (50 %) |", section)
        self.assertIn("| executor run (ExecutorRun) | – | 12.0 (20 %) |", section)
        self.assertIn("| 1 | `tcp_sendmsg` ([kernel.kallsyms]) 5.00 (20 %) | `ExecInterpExpr` (postgres) 3.00 (5 %) |", section)
        self.assertIn("| 2 | `AllocSetAlloc` (postgres) 1.00 (4 %) |  |", section)
        self.assertIn("`/fortunes`: not measured: no requests counted", section)
        self.assertIn("pid 4242", section)
        self.assertNotIn("## Profile of the hot path", md)

    def test_profile_not_run_says_so(self):
        _, md = self.build()
        section = md.split("## Where the time goes, per request")[1].split("\n## ")[0]
        self.assertIn("Not measured in this run.", section)
        self.assertIn("PROFILE=1 runs it", section)

    def test_old_profile_text_still_renders(self):
        self.ops += [{"key": "profile", "value": "perf record -e cpu-clock -g on the webgres workers"},
                     {"key": "profile:/db", "value": "    40.00%  postgres\n    30.00%  [kernel.kallsyms]\n"}]
        _, md = self.build()
        self.assertIn("Not measured in this run.", md.split("## Where the time goes, per request")[1])
        old = md.split("## Profile of the hot path")[1]
        self.assertIn("perf record -e cpu-clock -g on the webgres workers", old)
        self.assertIn("while serving `/db`:", old)
        self.assertIn("40.00%  postgres", old)

    def test_provenance_is_stated(self):
        self.meta["git"] = "abc1234-dirty"
        self.meta["share_read_transactions"] = "on"
        _, md = self.build()
        self.assertIn("Command: `QUICK='1' bench/run.sh`", md)
        self.assertIn("The run took 3 min 39 s.", md)
        self.assertIn("uncommitted changes", md)
        self.assertIn("not TechEmpower-legal", md)


# perf report's lines as perf 6 prints them (header, then one line a
# symbol; IPC columns at the end), for profile_account.py.
PERF_FLAT = """# Samples: 1K of event 'cpu-clock:pppH'
#
# Overhead       Samples  Shared Object            Symbol                                         IPC   [IPC Coverage]
# ........  ............  .......................  .............................................  ....................
#
    40.00%           400  [kernel.kallsyms]        [k] _raw_spin_unlock_irqrestore                -      -
    25.00%           250  postgres                 [.] ExecInitNode                               -      -
    15.00%           150  webgres.so               [.] html_escape_append                         -      -
    10.00%           100  libh2o-evloop.so.0.13.5  [.] h2o_buffer_reserve                         -      -
     6.00%            60  libc.so.6                [.] __memmove_avx512_unaligned_erms            -      -
     3.00%            30  plpgsql.so               [.] exec_stmts                                 -      -
     1.00%            10  libm.so.6                [.] 0x0000000000012345                         -      -
"""

PERF_CHILDREN = """# Children      Self  Symbol                                         IPC   [IPC Coverage]
# ........  ........  .............................................  ....................
#
    90.00%     0.00%  [.] on_req                                     -      -
    60.00%     0.00%  [.] pipeline_run                               -      -
    30.00%     0.00%  [.] standard_ExecutorStart                     -      -
    35.00%     0.00%  [.] ExecutorStart                              -      -
    12.00%     0.00%  [k] do_syscall_64                              -      -
"""


class ProfileAccountTest(unittest.TestCase):
    """profile_account.py against perf report's own line formats."""

    def setUp(self):
        self.calls = []

        def fake_report(data, *args):
            self.calls.append(args)
            return PERF_CHILDREN if "--children" in args else PERF_FLAT
        self.saved = profile_account.report
        profile_account.report = fake_report

    def tearDown(self):
        profile_account.report = self.saved

    def test_rows_read_both_formats(self):
        flat = profile_account.rows(PERF_FLAT)
        self.assertEqual(len(flat), 7)
        self.assertEqual(flat[0], (40.0, None, "[kernel.kallsyms]", "_raw_spin_unlock_irqrestore", 400))
        self.assertEqual(flat[3][2:4], ("libh2o-evloop.so.0.13.5", "h2o_buffer_reserve"))
        children = profile_account.rows(PERF_CHILDREN)
        self.assertEqual(children[0], (90.0, 0.0, "", "on_req", 0))
        self.assertEqual(children[-1][3], "do_syscall_64")

    def test_account_by_library_step_and_function(self):
        samples, bydso, steps, top = profile_account.account("perf.data")
        self.assertEqual(samples, 1000)
        self.assertEqual(bydso, {"kernel": 40.0, "postgres": 25.0, "webgres.so": 15.0,
                                 "libh2o": 10.0, "libc": 6.0, "plpgsql.so": 3.0, "other": 1.0})
        step = dict(steps)
        self.assertEqual(step["webgres request (on_req: phases, pipeline, respond)"], 90.0)
        # A step is its largest entry point, not their sum.
        self.assertEqual(step["executor start (ExecutorStart)"], 35.0)
        self.assertEqual(step["executor end (ExecutorEnd)"], 0.0)
        self.assertEqual(top[0], ("_raw_spin_unlock_irqrestore", "[kernel.kallsyms]", 40.0))
        self.assertIn(("-n", "--no-children", "--sort", "dso,symbol"), self.calls)

    def test_json_gives_microseconds_per_request(self):
        out = io.StringIO()
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(out):
            md = os.path.join(tmp, "account.md")
            profile_account.json_main("perf.data", 200, 5000.0, md)
            with open(md) as f:
                markdown = f.read()
        got = json.loads(out.getvalue())
        self.assertEqual(got["us_per_request"], 25.0)
        libs = {lib["name"]: lib for lib in got["libraries"]}
        self.assertEqual(libs["kernel"]["us"], 10.0)
        self.assertEqual(libs["webgres.so"]["share"], 15.0)
        self.assertNotIn("executor end (ExecutorEnd)", [s["name"] for s in got["steps"]])
        self.assertEqual(got["top"][1], {"symbol": "ExecInitNode", "dso": "postgres",
                                         "share": 25.0, "us": 6.25})
        self.assertIn("| kernel | 40.0 % | 10.00 |", markdown)
        self.assertIn("1000 samples.", markdown)


if __name__ == "__main__":
    unittest.main()
