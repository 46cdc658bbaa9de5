"""Tests of the benchmark scripts without a GPU: peers.py against numpy fakes of cupy and torch
(tests/fakes), table.py on synthetic records, run-bench.sh end to end with a stand-in kjit_bench.

    python3 -m unittest discover -s tools/bench/tests -v      (needs numpy for the peers tests)
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

TESTS = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(TESTS)
ROOT = os.path.dirname(os.path.dirname(BENCH))
FAKES = os.path.join(TESTS, "fakes")
PEERS = os.path.join(BENCH, "peers.py")
TABLE = os.path.join(BENCH, "table.py")
RUN_BENCH = os.path.join(ROOT, "tools", "run-bench.sh")
sys.path.insert(0, BENCH)

import cases as C  # noqa: E402
import peers  # noqa: E402  (imports no GPU module at load time)
import table  # noqa: E402

HAVE_NUMPY = importlib.util.find_spec("numpy") is not None
needs_numpy = unittest.skipUnless(HAVE_NUMPY, "numpy is not installed for this python")

REQUIRED = {"impl": str, "case": str, "bytes": int, "n": int, "dtype": str, "note": str,
            "date": str, "device": str}
NUMERIC = ("gbps", "tflops", "us_per_call", "ms")


def fake_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = FAKES + os.pathsep + env.get("PYTHONPATH", "")
    for k in ("FAKE_BROKEN", "FAKE_WRONG", "FAKE_SLOW", "FAKE_TORCH_IMPORT_ERROR",
              "FAKE_CUPY_IMPORT_ERROR"):
        env.pop(k, None)
    env.update(extra)
    return env


def run_peers(args, env=None, timeout=300):
    """Runs peers.py --tiny with the fakes; returns (returncode, records, stderr)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "p.jsonl")
        p = subprocess.run([sys.executable, PEERS, "--tiny", "--out", out] + args,
                           env=env or fake_env(), capture_output=True, text=True,
                           timeout=timeout)
        recs = []
        if os.path.exists(out):
            with open(out) as f:
                recs = [json.loads(line) for line in f if line.strip()]
        return p.returncode, recs, p.stderr


class CaseCatalogue(unittest.TestCase):
    def test_ids_unique_and_described(self):
        ids = [c.id for c in C.CASES]
        self.assertEqual(len(ids), len(set(ids)))
        for c in C.CASES:
            self.assertIn(c.metric, C.UNITS, c.id)
            self.assertEqual(len(c.shape), len(c.tiny), c.id)
            self.assertTrue(c.doc, c.id)
            if c.metric == C.GBPS:
                self.assertGreater(c.bytes(), 0, c.id)
            if c.metric == C.TFLOPS:
                self.assertEqual(c.flops(), 2 * c.shape[0] ** 3, c.id)
            if c.id != "copy":
                self.assertIsNotNone(c.goal, c.id)
            for impl in c.issue:
                self.assertIn(impl, ("cupy", "torch", "cublas", "ceiling"), c.id)

    def test_bytes_counted(self):
        self.assertEqual(C.BY_ID["ew_axpb_f32"].bytes(), 8 << 28)           # read x, write y
        self.assertEqual(C.BY_ID["ew_abc_f32"].bytes(), 16 << 28)           # 3 reads + 1 write
        self.assertEqual(C.BY_ID["ew_axpb_bf16"].bytes(), 4 << 28)
        self.assertEqual(C.BY_ID["ew_inplace_f64"].bytes(), 16 * 300_000_000)
        self.assertEqual(C.BY_ID["ew_rowadd_f32"].bytes(), 4 * (2 * 16384 ** 2 + 16384))
        self.assertEqual(C.BY_ID["copy"].bytes(), 8 << 28)
        self.assertEqual(C.BY_ID["red_sum_ax0_f32"].bytes(), 4 * (16384 ** 2 + 16384))

    def test_every_case_has_a_peer(self):
        for c in C.CASES:
            has_peer = any((c.id, i) in peers.PEERS for i in peers.IMPLS)
            self.assertEqual(has_peer, not c.kjit_only, c.id)
        self.assertTrue(C.BY_ID["ew_first_readonly"].kjit_only)
        self.assertNotIn(("ew_first_new", "torch"), peers.PEERS)     # the issue has no number

    def test_select_cases(self):
        ids, bad = peers.select_cases("ew_*")
        self.assertEqual(bad, [])
        self.assertTrue(ids and all(i.startswith("ew_") for i in ids))
        ids, bad = peers.select_cases("red,copy")
        self.assertIn("copy", ids)
        self.assertTrue(all(i == "copy" or i.startswith("red_") for i in ids))
        ids, bad = peers.select_cases("mm_f32_8192, nope")
        self.assertEqual((ids, bad), (["mm_f32_8192"], ["nope"]))
        ids, bad = peers.select_cases("")
        self.assertEqual(ids, C.ORDER)


class PeersList(unittest.TestCase):
    def test_list_needs_no_gpu_module(self):
        p = subprocess.run([sys.executable, PEERS, "--list"], capture_output=True, text=True,
                           env=fake_env(FAKE_CUPY_IMPORT_ERROR="1", FAKE_TORCH_IMPORT_ERROR="1"))
        self.assertEqual(p.returncode, 0, p.stderr)
        for cid in C.ORDER:
            self.assertIn(cid, p.stdout)

    def test_unknown_case_or_impl(self):
        p = subprocess.run([sys.executable, PEERS, "--cases", "nope"], capture_output=True,
                           text=True, env=fake_env())
        self.assertEqual(p.returncode, 2)
        self.assertIn("nope", p.stderr)
        p = subprocess.run([sys.executable, PEERS, "--impl", "jax"], capture_output=True,
                           text=True, env=fake_env())
        self.assertEqual(p.returncode, 2)


@needs_numpy
class PeersRun(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.rc, cls.recs, cls.err = run_peers([])

    def test_exit_and_records(self):
        self.assertEqual(self.rc, 0, self.err[-2000:])
        self.assertGreater(len(self.recs), 60)

    def test_record_format(self):
        for r in self.recs:
            for k, t in REQUIRED.items():
                self.assertIsInstance(r.get(k), t, f"{k} in {r}")
            for k in NUMERIC:
                self.assertIn(k, r)
                self.assertTrue(r[k] is None or isinstance(r[k], (int, float)), r)
            self.assertIn(r["impl"], ("cupy", "torch", "ceiling"))
            self.assertIn(r["case"], C.BY_ID)
            self.assertIsInstance(r.get("primary"), bool)
            self.assertIn("tiny sizes", r["note"])
            if not r.get("error"):
                metric = C.BY_ID[r["case"]].metric
                self.assertIsNotNone(r.get(metric), f"no {metric}: {r}")
                self.assertGreater(r[metric], 0)
            if r.get("spread"):
                self.assertEqual(len(r["spread"]), 2)
                self.assertLessEqual(r["spread"][0], r["spread"][1])

    def test_every_peer_case_has_a_main_record(self):
        have = {(r["case"], r["impl"]) for r in self.recs if r["primary"]}
        for (cid, impl) in peers.PEERS:
            if cid == "copy":
                continue
            self.assertIn((cid, impl), have)
        self.assertIn(("copy", "ceiling"), have)

    def test_checks_pass_and_only_bfloat16_cupy_fails(self):
        for r in self.recs:
            chk = r.get("check")
            if chk is not None:
                self.assertTrue(chk.startswith("ok"), r)
            if r.get("error"):
                # the fakes have no ml_dtypes: CuPy's bfloat16 cases must say so, nothing else fails
                self.assertEqual(r["impl"], "cupy", r)
                self.assertIn("bf16", r["case"], r)
                self.assertIn("ml_dtypes", r["error"])

    def test_gbps_from_bytes_and_ms(self):
        for r in self.recs:
            if r.get("gbps") and r.get("ms"):
                self.assertAlmostEqual(r["gbps"], r["bytes"] / r["ms"] / 1e6, delta=r["gbps"] * 1e-9)

    def test_first_call_cases(self):
        new = [r for r in self.recs if r["case"] == "ew_first_new"]
        disk = [r for r in self.recs if r["case"] == "ew_first_disk"]
        self.assertEqual(len(new), 2)
        self.assertEqual(len(disk), 1)
        self.assertIn("fresh processes", disk[0]["note"])
        self.assertEqual(disk[0]["check"], "ok")


@needs_numpy
class PeersFailures(unittest.TestCase):
    def test_missing_peer(self):
        rc, recs, err = run_peers(["--impl", "torch", "--cases", "ew_axpb_f32,red_sum_f32"],
                                  fake_env(FAKE_TORCH_IMPORT_ERROR="1"))
        self.assertEqual(rc, 0, err)
        self.assertEqual({r["case"] for r in recs}, {"copy", "ew_axpb_f32", "red_sum_f32"})
        for r in recs:
            self.assertTrue(r["error"].startswith("torch not available"), r)
            self.assertIsNone(r["gbps"])

    def test_one_variant_fails(self):
        rc, recs, err = run_peers(["--impl", "cupy", "--cases", "red_groupby_f64", "--no-ceiling"],
                                  fake_env(FAKE_BROKEN="bincount"))
        self.assertEqual(rc, 0, err)
        by = {r["variant"]: r for r in recs}
        self.assertEqual(len(by), 4)
        bad = [r for r in recs if r.get("error")]
        self.assertEqual(len(bad), 1)
        self.assertIn("bincount", bad[0]["variant"])
        self.assertTrue(all(r["ms"] for r in recs if not r.get("error")))

    def test_wrong_result_is_reported(self):
        rc, recs, err = run_peers(["--impl", "cupy", "--cases", "ew_axpb_f32", "--no-ceiling"],
                                  fake_env(FAKE_WRONG="ElementwiseKernel"))
        self.assertEqual(rc, 0, err)
        main = [r for r in recs if r["primary"]][0]
        self.assertTrue(main["check"].startswith("FAILED"), main)
        self.assertIsNotNone(main["gbps"])            # still timed

    def test_setup_failure_everywhere(self):
        rc, recs, err = run_peers(["--impl", "cupy", "--cases", "ew,red_sum_f32"],
                                  fake_env(FAKE_BROKEN="random.standard_normal"))
        self.assertEqual(rc, 0, err)
        mains = [r for r in recs if r["primary"]]
        self.assertTrue(all(r.get("error") for r in mains if r["case"] not in
                            ("ew_first_new", "ew_first_disk")))
        self.assertIn("red_sum_f32", {r["case"] for r in recs})

    def test_case_timeout_then_next_case(self):
        rc, recs, err = run_peers(["--impl", "cupy", "--cases", "red_argmax_f32,red_host_1k",
                                   "--no-ceiling", "--case-timeout", "1"],
                                  fake_env(FAKE_SLOW="argmax:3"))
        self.assertEqual(rc, 0, err)
        am = [r for r in recs if r["case"] == "red_argmax_f32"]
        self.assertEqual(len(am), 1)
        self.assertIn("timed out", am[0]["error"])
        self.assertTrue([r for r in recs if r["case"] == "red_host_1k" and r["us_per_call"]])

    def test_worker_failure_is_a_record(self):
        rc, recs, err = run_peers(["--impl", "cupy", "--cases", "ew_first_disk", "--no-ceiling"],
                                  fake_env(FAKE_BROKEN="ElementwiseKernel"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(recs), 1)
        self.assertIn("worker", recs[0]["error"])

    def test_broken_stderr_does_not_stop_the_run(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "p.jsonl")
            p = subprocess.Popen([sys.executable, PEERS, "--tiny", "--impl", "cupy", "--cases",
                                  "ew_*", "--out", out], env=fake_env(),
                                 stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
            p.stderr.readline()
            p.stderr.close()                          # like `2>&1 | head -1`
            self.assertEqual(p.wait(timeout=120), 0)
            with open(out) as f:
                cases = {json.loads(line)["case"] for line in f}
            self.assertIn("ew_first_disk", cases)

    def test_stdout_output(self):
        p = subprocess.run([sys.executable, PEERS, "--tiny", "--impl", "torch", "--cases",
                            "red_sum_f32"], env=fake_env(), capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        recs = [json.loads(line) for line in p.stdout.splitlines()]
        self.assertEqual({r["case"] for r in recs}, {"copy", "red_sum_f32"})

    def test_tf32_is_restored(self):
        # TF32 for the tf32 case only: the float32 case after it gets the exact path back
        rc, recs, err = run_peers(["--impl", "torch,cupy", "--cases", "mm_*_8192", "--no-ceiling"])
        self.assertEqual(rc, 0, err)
        names = {(r["impl"], r["case"]) for r in recs if not r.get("error")}
        self.assertIn(("torch", "mm_tf32_8192"), names)
        self.assertIn(("cupy", "mm_tf32_8192"), names)
        self.assertTrue(all(r["tflops"] for r in recs if not r.get("error")))


@needs_numpy
class PeersGraphs(unittest.TestCase):
    """graph_ew10 and graph_chain20 (issue 33): the fakes record the calls of a capture and run
    them at each replay, so the checks after a replay show what the replay wrote."""

    @classmethod
    def setUpClass(cls):
        cls.rc, cls.recs, cls.err = run_peers(["--cases", "graph", "--no-ceiling"])

    def test_records(self):
        self.assertEqual(self.rc, 0, self.err[-2000:])
        for cid, units in (("graph_ew10", 10), ("graph_chain20", 20)):
            for impl in ("cupy", "torch"):
                recs = [r for r in self.recs if r["case"] == cid and r["impl"] == impl]
                self.assertEqual(len(recs), 4, (cid, impl))
                main = [r for r in recs if r["primary"]]
                self.assertEqual(len(main), 1, (cid, impl))
                self.assertTrue(main[0]["check"].startswith("ok"), main[0])
                self.assertIn(f"÷ {units}", main[0]["note"])
                for r in recs:
                    self.assertNotIn("error", r)
                    self.assertGreater(r["us_per_call"], 0)
                gpu = [r for r in recs if r["variant"].startswith("GPU time")]
                self.assertEqual(len(gpu), 1)
                self.assertAlmostEqual(gpu[0]["us_per_call"], gpu[0]["ms"] * 1e3 / units)
        self.assertNotIn("graph_update", {r["case"] for r in self.recs})      # kjit only

    def test_a_wrong_replay_is_reported(self):
        for impl, wrong in (("cupy", "matmul"), ("torch", "torch.matmul"),
                            ("cupy", "ReductionKernel"), ("torch", "torch.linalg.vector_norm")):
            rc, recs, err = run_peers(["--impl", impl, "--cases", "graph_chain20", "--no-ceiling"],
                                      fake_env(FAKE_WRONG=wrong))
            self.assertEqual(rc, 0, err)
            main = [r for r in recs if r["primary"]][0]
            self.assertTrue(main["check"].startswith("FAILED"), (wrong, main))
            self.assertIsNotNone(main["us_per_call"])     # still timed

    def test_a_failed_capture_is_a_record(self):
        rc, recs, err = run_peers(["--impl", "cupy", "--cases", "graph_ew10", "--no-ceiling"],
                                  fake_env(FAKE_BROKEN="ElementwiseKernel"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(recs), 1)
        self.assertIn("fake failure", recs[0]["error"])


def rec(impl, case, **kw):
    r = {"impl": impl, "case": case, "gbps": None, "tflops": None, "us_per_call": None,
         "ms": None, "bytes": 0, "n": 1, "dtype": "float32", "note": "", "date": "2026-12-01",
         "device": "H200"}
    r.update(kw)
    return r


def make_data(records, problems=()):
    d = table.Data()
    for r in records:
        r.setdefault("_src", "t")
        d.records.append(r)
    d.problems.extend(problems)
    d.index()
    return d


class TableLogic(unittest.TestCase):
    def test_ceiling_is_the_highest(self):
        d = make_data([rec("ceiling", "copy", gbps=4300.0, variant="cupy"),
                       rec("ceiling", "copy", gbps=4200.0, variant="torch"),
                       rec("ceiling", "copy", gbps=9000.0, error="x")])
        self.assertEqual(d.ceiling()["gbps"], 4300.0)
        md = table.render(d)
        self.assertIn("| `copy` | copy ceiling* | cupy |", md)
        self.assertIn("| `copy` | copy ceiling | torch |", md)
        self.assertNotIn("several main records", md)

    def test_goals(self):
        recs = [rec("kjit", "ew_axpb_f32", gbps=4200.0),
                rec("kjit", "ew_abc_f32", gbps=4300.0),
                rec("kjit", "ew_host_1k", us_per_call=3.9),
                rec("kjit", "ew_first_disk", ms=0.5),
                rec("kjit", "mm_f32_8192", tflops=50.0), rec("cublas", "mm_f32_8192", tflops=51.0),
                rec("kjit", "mm_tf32_8192", tflops=400.0),
                rec("cublas", "mm_tf32_8192", tflops=455.0),
                rec("kjit", "red_sum_f32", error="boom"),
                rec("kjit", "mm_f64_8192", tflops=50.0)]
        d = make_data(recs)
        st = lambda cid, ceil=4300.0: table.goal_status(C.BY_ID[cid], d, ceil)  # noqa: E731
        self.assertEqual(st("ew_axpb_f32")[0], "met")                 # 97.7% >= 97%
        self.assertEqual(st("ew_axpb_f32", 4400.0)[0], "missed")      # 95.5%
        self.assertIn("1.5 points", st("ew_axpb_f32", 4400.0)[1])
        self.assertEqual(st("ew_axpb_f32", None)[0], None)
        self.assertEqual(st("ew_abc_f32")[0], "missed")                # 4300 < 4400
        self.assertEqual(st("ew_host_1k")[0], "met")
        self.assertEqual(st("ew_first_disk")[0], "missed")
        self.assertIn("100%", st("ew_first_disk")[1])
        self.assertEqual(st("mm_f32_8192")[0], "met")                  # 0.980
        self.assertEqual(st("mm_tf32_8192")[0], "missed")
        self.assertEqual(st("mm_f64_8192"), (None, "no cuBLAS result to compare"))
        self.assertEqual(st("red_sum_f32"), (None, "kjit failed"))
        self.assertEqual(st("red_argmax_f32"), (None, "no kjit result"))
        self.assertEqual(table.goal_status(None, d, 1.0), (None, ""))

    def test_missed_host_time_shows_the_launch_floor(self):
        floor = rec("kjit", "ew_host_1k", us_per_call=4.31, primary=False,
                    variant="the launch floor: cuLaunchKernel of the same function and arguments, then one sync")
        d = make_data([rec("kjit", "ew_host_1k", us_per_call=4.6, note="median of 5"), floor])
        md = table.render(d, brief=True)
        self.assertIn("- `ew_host_1k`: median of 5; the launch floor in this run (cuLaunchKernel alone): 4.31 µs", md)
        # A failed floor says nothing.
        d = make_data([rec("kjit", "ew_host_1k", us_per_call=4.6, note="median of 5"), dict(floor, error="x")])
        self.assertNotIn("launch floor in this run", table.render(d, brief=True))

    def test_speed_ratio(self):
        self.assertAlmostEqual(table.speed_ratio(C.GBPS, 4000, 2000), 2.0)
        self.assertAlmostEqual(table.speed_ratio(C.US, 4.0, 8.0), 2.0)      # times: inverted
        self.assertAlmostEqual(table.speed_ratio(C.MS, 40.0, 20.0), 0.5)
        self.assertIsNone(table.speed_ratio(C.GBPS, None, 1.0))
        self.assertIsNone(table.speed_ratio(C.GBPS, 0, 1.0))

    def test_primary_and_variants(self):
        d = make_data([rec("torch", "ew_axpb_f32", gbps=4224.0, variant="mul", primary=True),
                       rec("torch", "ew_axpb_f32", gbps=2100.0, variant="two ops", primary=False)])
        self.assertEqual(d.get("torch", "ew_axpb_f32")["variant"], "mul")
        md = table.render(d)
        self.assertIn("two ops", md)
        self.assertIn("| `ew_axpb_f32` | PyTorch* | mul |", md)

    def test_render_full_and_brief(self):
        recs = [rec("ceiling", "copy", gbps=4260.0, variant="memcpy"),
                rec("kjit", "ew_axpb_f32", gbps=4200.0, note="vector loads | 4 per thread"),
                rec("cupy", "ew_axpb_f32", gbps=3380.0),
                rec("torch", "ew_axpb_f32", gbps=4224.0, check="FAILED: rel err 1 > 1e-6"),
                rec("kjit", "ew_trowadd_f32", gbps=1000.0, note="no tiled path yet"),
                rec("cupy", "red_sum_f32", error="CUDA out of memory"),
                rec("kjit", "something_new", gbps=10.0)]
        d = make_data(recs, ["x.jsonl:3: not a record"])
        md = table.render(d)
        self.assertIn("**4260 GB/s**", md)
        self.assertIn("4200 (99%)", md)
        self.assertIn("1.24×", md)                       # kjit / cupy
        self.assertIn("**MISSED** by 36.5 points", md)
        self.assertIn("- `ew_trowadd_f32`: no tiled path yet", md)
        self.assertIn("vector loads \\| 4 per thread", md)   # pipes escaped
        self.assertIn("error [", md)
        self.assertIn("CUDA out of memory", md)
        self.assertIn("⚠[", md)
        self.assertIn("Other cases", md)
        self.assertIn("`something_new`", md)
        self.assertIn("input: x.jsonl:3", md)
        self.assertIn("Goals: 1 met, 1 missed", md)
        brief = table.render(d, brief=True)
        self.assertNotIn("All variants", brief)
        self.assertNotIn("Peers here and in the issues", brief)
        self.assertIn("CUDA out of memory", brief)
        # every table row has as many cells as its header
        for block in md.split("\n\n"):
            lines = [ln for ln in block.splitlines() if ln.startswith("|")]
            if lines:
                n = lines[0].replace("\\|", "").count("|")
                for ln in lines:
                    self.assertEqual(ln.replace("\\|", "").count("|"), n, ln)

    def test_graph_group(self):
        """The graph cases (issue 33) come under their own group heading, per call in µs, with
        kjit ÷ each peer (the issue's 'at most half of each peer's replay' is ÷ ≥ 2)."""
        d = make_data([rec("kjit", "graph_ew10", us_per_call=0.8),
                       rec("cupy", "graph_ew10", us_per_call=2.0),
                       rec("torch", "graph_ew10", us_per_call=1.2),
                       rec("kjit", "graph_ew10", us_per_call=3.0, variant="the same calls eager",
                           primary=False),
                       rec("kjit", "graph_update", us_per_call=25.0, note="23 arrays")])
        md = table.render(d)
        self.assertIn("| **Graphs (issue 33)** |", md)
        row = next(ln for ln in md.splitlines() if ln.startswith("| `graph_ew10`"))
        self.assertIn("| 0.800 | 2.00 | 1.20 | 2.50× | 1.50× | ≤ 1 µs | met 0.800 µs |", row)
        self.assertIn("**MISSED** by 25%: 25.0 µs", md)
        self.assertIn("- `graph_update`: 23 arrays", md)
        self.assertIn("the same calls eager", md)

    def test_load_files(self):
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "k.jsonl")
            with open(good, "w") as f:
                f.write(json.dumps(rec("kjit", "ew_host_1k", us_per_call=3.0)) + "\n")
                f.write("not json\n\n")
                f.write(json.dumps({"no": "impl"}) + "\n")
                f.write(json.dumps(rec("kjit", "ew_host_1k", us_per_call=2.5)) + "\n")
            out = os.path.join(d, "t.md")
            p = subprocess.run([sys.executable, TABLE, good, os.path.join(d, "missing.jsonl"),
                                "-o", out], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                md = f.read()
            self.assertIn("missing.jsonl: no such file", md)
            self.assertIn("k.jsonl:2: not a record", md)
            self.assertIn("k.jsonl:4: not a record", md)
            self.assertIn("several main records for kjit ew_host_1k", md)
            self.assertIn("| 2.50 |", md)                    # the last one wins
            p = subprocess.run([sys.executable, TABLE, os.path.join(d, "missing.jsonl")],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 1)


FAKE_KJIT = os.path.join(FAKES, "kjit_bench.py")
SIDE_BY_SIDE = os.path.join(ROOT, "tools", "side-by-side.sh")


def main_table(md):
    """The rows of the first table of a markdown report (header first)."""
    lines = md.splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith("| case |"))
    rows = []
    for ln in lines[start:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip().strip("|").split(" | ")])
    return rows


@needs_numpy
@unittest.skipUnless(shutil.which("bash") and shutil.which("timeout"), "needs bash and timeout")
class RunBench(unittest.TestCase):
    def make_build(self, d, body=None):
        """BUILD_DIR with a `kjit` program: the fake kjit bench (fakes/kjit_bench.py), or a
        bash script with this body."""
        build = os.path.join(d, "build")
        os.makedirs(build)
        prog = os.path.join(build, "kjit")
        with open(prog, "w") as f:
            if body is None:
                f.write(f'#!/usr/bin/env bash\nexec "{sys.executable}" "{FAKE_KJIT}" "$@"\n')
            else:
                f.write("#!/usr/bin/env bash\n" + body)
        os.chmod(prog, 0o755)
        return build

    def run_bench(self, build, out, script=RUN_BENCH, **env):
        e = fake_env(PYTHON=sys.executable, PEERS_ARGS="--tiny", **env)
        for k in ("BENCH_CASES", "KJIT_BENCH_ARGS", "BENCH_QUICK", "BENCH_BUDGET"):
            if k not in env:
                e.pop(k, None)
        return subprocess.run(["bash", script, build, out], env=e, capture_output=True,
                              text=True, timeout=600)

    def read(self, *path):
        with open(os.path.join(*path), encoding="utf-8") as f:
            return f.read()

    def test_end_to_end(self):
        with tempfile.TemporaryDirectory() as d:
            line = json.dumps(rec("kjit", "ew_host_1k", us_per_call=3.2, note="warm path"))
            build = self.make_build(d, f'[ "$2" = --list ] && {{ echo copy; echo ew_host_1k; exit 0; }}\n'
                                       f'[ "$1 $2" = "bench --json" ] || exit 3\n'
                                       f'echo \'{line}\' > "$3"\necho "args: $*"\n')
            out = os.path.join(d, "out")
            p = self.run_bench(build, out, KJIT_BENCH_ARGS="--extra", BENCH_CASES="ew_host_1k")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            for f in ("machine.txt", "kjit.jsonl", "peers.jsonl", "table.md", "side-by-side.md",
                      "kjit-bench.log", "peers-cupy.log", "peers-torch.log"):
                self.assertTrue(os.path.exists(os.path.join(out, f)), f)
            self.assertIn("args: bench --json " + os.path.join(out, "kjit.jsonl") +
                          " --cases copy,ew_host_1k --extra", self.read(out, "kjit-bench.log"))
            self.assertIn("met 3.20 µs", p.stdout)
            tail = p.stdout[p.stdout.index("the main table"):]      # the table comes last
            self.assertIn("| `ew_host_1k`", tail)
            self.assertIn("Goals: 1 met", tail)
            self.assertIn("All variants", self.read(out, "table.md"))
            self.assertNotIn("All variants", self.read(out, "side-by-side.md"))

    def test_no_kjit_and_failing_kjit(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out")
            p = self.run_bench("-", out, BENCH_CASES="red_host_1k", BENCH_IMPLS="cupy")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("kjit: no program at", p.stdout)
            self.assertIn("no kjit result", p.stdout)
            build = self.make_build(d, '[ "$2" = --list ] && { echo copy; echo red_host_1k; exit 0; }\n'
                                       'echo half > "$3"; echo crashed >&2; exit 139\n')
            p = self.run_bench(build, out, BENCH_CASES="red_host_1k", BENCH_IMPLS="torch")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("exit 139", p.stdout)
            self.assertIn("crashed", p.stdout)
            self.assertIn("not a record", p.stdout)

    def test_kjit_without_list_runs_everything_once(self):
        with tempfile.TemporaryDirectory() as d:
            line = json.dumps(rec("kjit", "red_host_1k", us_per_call=4.0))
            build = self.make_build(d, '[ "$2" = --list ] && exit 2\n'
                                       f'echo \'{line}\' > "$3"; echo "args: $*"\n')
            out = os.path.join(d, "out")
            p = self.run_bench(build, out, BENCH_CASES="red_host_1k", BENCH_IMPLS="torch")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("kjit bench --list failed; kjit runs every case in one process", p.stdout)
            self.assertRegex(self.read(out, "machine.txt"), r"step kjit-all: \d+ s \(limit 300 s, exit 0\)")
            self.assertIn("args: bench --json " + os.path.join(out, "kjit.jsonl") + "\n",
                          self.read(out, "kjit-bench.log"))
            self.assertIn("met 4.00 µs", p.stdout)

    def test_side_by_side_every_case(self):
        """The one command: kjit in five processes (copy + elementwise, reductions, matrix
        products, graphs, expressions), both peers, one table with every case of cases.py, ready to paste."""
        with tempfile.TemporaryDirectory() as d:
            build = self.make_build(d)
            out = os.path.join(d, "out")
            calls = os.path.join(d, "calls.txt")
            p = self.run_bench(build, out, script=SIDE_BY_SIDE, FAKE_KJIT_CALLS=calls,
                               BENCH_CASES="red_sum_f32", KJIT_BENCH_ARGS="--cases copy")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            runs = [ln.split() for ln in self.read(calls).splitlines() if "--json" in ln]
            self.assertEqual([r[r.index("--cases") + 1].split(",")[:2] for r in runs],
                             [["copy", "ew_axpb_f32"], ["red_sum_f32", "red_sumsq_f32"],
                              ["mm_f32_8192", "mm_tf32_8192"],
                              ["graph_ew10", "graph_chain20"],
                              ["expr_fused_f32", "expr_var_f32"]])   # BENCH_CASES etc. ignored
            machine = self.read(out, "machine.txt")
            for step in ("kjit-ew", "kjit-red", "kjit-mm", "kjit-graph", "kjit-expr", "peers-cupy",
                         "peers-torch"):
                self.assertRegex(machine, rf"step {step}: \d+ s \(limit \d+ s, exit 0\)")
            md = self.read(out, "side-by-side.md")
            self.assertTrue(md.startswith("### kjit, CuPy and PyTorch side by side, 20"), md[:80])
            self.assertIn("Command: `tools/side-by-side.sh " + build, md)
            self.assertNotIn("\n# ", md)
            self.assertNotIn("\n## ", md)
            self.assertTrue(p.stdout.rstrip().endswith(md.rstrip()))
            rows = main_table(md)
            self.assertEqual(rows[0], ["case", "metric", "kjit", "CuPy", "PyTorch", "cuBLAS",
                                       "kjit ÷ CuPy", "kjit ÷ PyTorch", "goal", "status"])
            body = {r[0].split("<br>")[0].strip("`"): r for r in rows[2:] if r[0].startswith("`")}
            self.assertEqual(sorted(body), sorted(C.ORDER))              # every case, once
            for cid, r in body.items():
                case = C.BY_ID[cid]
                if cid == "copy":                  # kjit's copy is a ceiling record
                    continue
                self.assertNotIn(r[2], ("—", ""), cid)                   # kjit measured it
                self.assertRegex(r[9], "^(met|\\*\\*MISSED\\*\\*)", cid)
                if (cid, "torch") in peers.PEERS:
                    self.assertRegex(r[7], r"^\d+\.\d\d×$", cid)
                if (cid, "cupy") in peers.PEERS and not r[3].startswith("error"):
                    self.assertRegex(r[6], r"^\d+\.\d\d×$", cid)   # (fake bfloat16 fails)
                if case.metric == C.GBPS:
                    self.assertRegex(r[2], r"^\d+ \(\d+%\)$", cid)   # percent of the ceiling
            self.assertIn("Also measured, in the full report's variants: `cublas_rebind`, "
                          "`cublas_sgemm`.", md)
            self.assertIn("Copy ceiling (device-to-device, read + write, the highest measured "
                          "in this run): **4240 GB/s**", md)
            full = self.read(out, "table.md")
            self.assertIn("cublas_sgemm", full)

    def test_side_by_side_needs_a_kjit(self):
        with tempfile.TemporaryDirectory() as d:
            p = self.run_bench(os.path.join(d, "nothing"), os.path.join(d, "out"),
                               script=SIDE_BY_SIDE)
            self.assertEqual(p.returncode, 1)
            self.assertIn("builds nothing", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "out")))

    def test_budget_stops_a_slow_step_and_keeps_the_rest(self):
        """A kjit group that would run past its share is stopped; the later steps keep their
        floors, the table still comes, and the whole stays inside BENCH_BUDGET."""
        with tempfile.TemporaryDirectory() as d:
            build = self.make_build(d)
            out = os.path.join(d, "out")
            t0 = time.monotonic()
            p = self.run_bench(build, out, script=SIDE_BY_SIDE, FAKE_KJIT_SLEEP="red:300",
                               FAKE_KJIT_FAIL="ew_abc_f32", BENCH_BUDGET="115",
                               KJIT_FLOOR="12", PEERS_FLOOR="20")
            took = time.monotonic() - t0
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertLess(took, 115)
            machine = self.read(out, "machine.txt")
            self.assertRegex(machine, r"step kjit-ew: \d+ s \(limit \d+ s, exit 1\)")
            self.assertRegex(machine, r"step kjit-red: \d+ s \(limit \d+ s, exit 124\)")
            self.assertRegex(machine, r"step kjit-mm: \d+ s \(limit \d+ s, exit 0\)")
            self.assertRegex(machine, r"step kjit-graph: \d+ s \(limit \d+ s, exit 0\)")
            self.assertRegex(machine, r"step peers-torch: \d+ s \(limit \d+ s, exit 0\)")
            self.assertIn("stopped at its limit", p.stdout)
            rows = {r[0].split("<br>")[0].strip("`"): r for r in main_table(self.read(out, "side-by-side.md"))}
            self.assertEqual(rows["red_sum_f32"][2], "—")                # kjit stopped there
            self.assertNotEqual(rows["red_sum_f32"][3], "—")             # the peers were not
            self.assertRegex(rows["ew_abc_f32"][2], r"^error \[\d+\]$")
            self.assertEqual(rows["mm_f32_8192"][9], "met 0.990× cuBLAS")

    def test_budget_skips_steps_with_no_time_left(self):
        with tempfile.TemporaryDirectory() as d:
            build = self.make_build(d)
            out = os.path.join(d, "out")
            p = self.run_bench(build, out, BENCH_BUDGET="60", BENCH_CASES="ew_host_1k",
                               PEERS_FLOOR="25")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertRegex(p.stdout, r"skipped: only -\d s of BENCH_BUDGET=60 left for it")
            machine = self.read(out, "machine.txt")
            self.assertRegex(machine, r"step kjit-ew: skipped")
            self.assertRegex(machine, r"step peers-cupy: \d+ s \(limit (19|20) s, exit 0\)")
            self.assertIn("| `ew_host_1k`", self.read(out, "side-by-side.md"))


if __name__ == "__main__":
    unittest.main()
