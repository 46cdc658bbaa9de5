#!/usr/bin/env python3
"""A stand-in for `kjit bench` (tools/cli/bench_command.cpp) in tools/bench/tests: the same
command line (`bench --list`, `bench --json FILE [--cases a,b] [extra...]`) and the same records
(every case of cases.py, kjit's own variant cases, the raw cuBLAS records beside the matrix
products), with made-up numbers. Standard library only. Steered by environment variables:

- FAKE_KJIT_SLEEP=prefix:seconds   sleep before the first case whose name starts with prefix
- FAKE_KJIT_FAIL=case,case         these cases give an error record (exit status 1, as kjit)
- FAKE_KJIT_CALLS=FILE             append each command line to FILE

The tests make BUILD_DIR/kjit a script that runs this file.
"""

import datetime
import json
import os
import sys
import time

BENCH = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, BENCH)
import cases as C  # noqa: E402

# kjit bench's own case names: cases.py's ids plus three variant cases of ew_host_1k
NAMES = []
for _c in C.CASES:
    NAMES.append(_c.id)
    if _c.id == "ew_host_1k":
        NAMES += ["ew_host_1k_batches", "ew_host_1k_alloc", "ew_host_1k_bare"]


def records(name):
    base = {"gbps": None, "tflops": None, "us_per_call": None, "ms": None, "bytes": 0, "n": 0,
            "dtype": "float32", "note": "fake kjit bench",
            "date": datetime.date.today().isoformat(), "device": "Fake GPU (kjit_bench.py)"}
    if name in ("ew_host_1k_batches", "ew_host_1k_alloc", "ew_host_1k_bare"):
        return [dict(base, impl="kjit", case="ew_host_1k", us_per_call=3.0, primary=False,
                     variant=name)]
    case = C.BY_ID[name]
    r = dict(base, impl="kjit", case=name, bytes=case.bytes(), n=case.n(), dtype=case.dtype)
    if name == "copy":
        return [dict(r, impl="ceiling", gbps=4240.0, ms=case.bytes() / 4240e6)]
    if case.metric == C.GBPS:
        return [dict(r, gbps=4150.0, ms=case.bytes() / 4150e6)]
    if case.metric == C.US:
        if name == "graph_update":
            return [dict(r, us_per_call=12.0),
                    dict(r, us_per_call=60.0, primary=False, variant="update(stream, calls)")]
        if name.startswith("graph_"):      # a replay per call, and its variants
            return [dict(r, us_per_call=0.2),
                    dict(r, us_per_call=3.5, primary=False, variant="the same calls eager"),
                    dict(r, us_per_call=0.9, primary=False, variant="replays back to back, all timed"),
                    dict(r, us_per_call=0.9, ms=0.018, primary=False,
                         variant="GPU time of a replay, per call")]
        if name == "mm_host_64":
            return [dict(r, us_per_call=10.0), dict(r, impl="cublas", us_per_call=7.9),
                    dict(r, impl="cublas_rebind", us_per_call=7.9),
                    dict(r, impl="cublas_sgemm", us_per_call=7.3)]
        return [dict(r, us_per_call=3.2)]
    if case.metric == C.MS:
        return [dict(r, ms={"ew_first_new": 225.0, "ew_first_disk": 0.82}.get(name, 0.19))]
    return [dict(r, tflops=50.0), dict(r, impl="cublas", tflops=50.5)]    # TFLOPS


def main(argv):
    if os.environ.get("FAKE_KJIT_CALLS"):
        with open(os.environ["FAKE_KJIT_CALLS"], "a") as f:
            f.write(" ".join(argv) + "\n")
    if not argv or argv[0] != "bench":
        print(f"fake kjit: only 'bench', not {argv[:1]}", file=sys.stderr)
        return 1
    args = argv[1:]
    if "--list" in args:
        print("\n".join(NAMES))
        return 0
    json_path, only = None, None
    k = 0
    while k < len(args):
        if args[k] == "--json":
            json_path, k = args[k + 1], k + 2
        elif args[k] == "--cases":
            only, k = args[k + 1].split(","), k + 2
        else:
            print(f"fake kjit: extra argument {args[k]}", file=sys.stderr)
            k += 1
    sleep = os.environ.get("FAKE_KJIT_SLEEP", "")
    fail = set(filter(None, os.environ.get("FAKE_KJIT_FAIL", "").split(",")))
    status = 0
    slept = False
    for name in NAMES:
        if only is not None and name not in only:
            continue
        if sleep and not slept and name.startswith(sleep.split(":")[0]):
            slept = True
            time.sleep(float(sleep.split(":")[1]))
        recs = records(name)
        if name in fail:
            recs = [dict(recs[0], gbps=None, tflops=None, us_per_call=None, ms=None,
                         error="CudaError: fake failure")]
            status = 1
        for r in recs:
            line = json.dumps(r)
            print(line, flush=True)
            if json_path:
                with open(json_path, "a") as f:
                    f.write(line + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
