#!/usr/bin/python3
"""NumPy's time for the reduction tools/bench/host_reduce.cpp runs (docs/perf-log.md):
x.sum() of 2^26 float32 (NumPy's pairwise float32 sum), best of several runs; then the same
values as a square matrix summed over axis 1 and axis 0.
    python3 tools/bench/host_numpy_reduce.py [log2_n=26] [runs=10]"""
import sys
import time

import numpy as np

log2_n = int(sys.argv[1]) if len(sys.argv) > 1 else 26
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
n = 1 << log2_n
x = ((np.arange(n) % 1000) * 0.001).astype(np.float32)


def best(f):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


s = x.sum()
t = best(x.sum)
print(f"numpy {np.__version__} n=2^{log2_n} sum={s:.9g} exact={x.astype(np.float64).sum():.9g}")
print(f"numpy_sum_ms={t * 1e3:.2f} numpy_read_GBps={4 * n / t / 1e9:.2f}")
side = 1 << (log2_n // 2)
m = x[:side * side].reshape(side, side)
for axis in (1, 0):
    print(f"numpy_sum_axis{axis}_{side}x{side}_ms={best(lambda: m.sum(axis=axis)) * 1e3:.2f}")
