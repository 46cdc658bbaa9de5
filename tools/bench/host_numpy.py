#!/usr/bin/python3
"""NumPy's time for the expression tools/bench/host_fused.cpp runs fused (docs/perf-log.md):
y = x * a + z * b over 2^26 float32, one operation at a time, best of several runs; once as
written (NumPy allocates the temporaries) and once into preallocated arrays.
    python3 tools/bench/host_numpy.py [log2_n=26] [runs=10]"""
import sys
import time

import numpy as np

log2_n = int(sys.argv[1]) if len(sys.argv) > 1 else 26
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
n = 1 << log2_n
k = np.arange(n)
x = ((k % 1000) * 0.001).astype(np.float32)
z = ((k % 777) * 0.002).astype(np.float32)
a, b = np.float32(2.0), np.float32(3.0)
t1, t2, y = np.empty_like(x), np.empty_like(x), np.empty_like(x)


def best(f):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def preallocated():
    np.multiply(x, a, out=t1)
    np.multiply(z, b, out=t2)
    np.add(t1, t2, out=y)


written = best(lambda: x * a + z * b)
into = best(preallocated)
print(f"numpy {np.__version__} n=2^{log2_n}")
print(f"numpy_as_written_ms={written * 1e3:.2f} numpy_preallocated_ms={into * 1e3:.2f}")
