#!/usr/bin/env python3
"""Times CuPy and PyTorch on kjit's benchmark cases (tools/bench/cases.py) and the device-to-device
copy ceiling, writing one JSON object per line (format: tools/bench/README.md).

    peers.py [--impl cupy,torch] [--cases PATTERNS] [--quick] [--out FILE] [--append]
    peers.py --list

Device time: CUDA events around a loop of calls after warm-up, the loop sized to about 25 ms
(--quick: 8 ms), the median of 7 repeats (--quick: 3). Host time: wall time of many calls without
synchronising, divided by their number, after warm-up, with a synchronisation before the clock is
read; median of 5 repeats (--quick: 3). Every array is far larger than the 50 MiB L2 except in
the host-time cases (1000 elements), where only the host path is measured.

A peer that cannot be imported, a case that fails, a check that fails: each is a record saying
so, and the run goes on. Results are written and flushed one record at a time.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import gc
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import cases as C  # noqa: E402

IMPLS = ("cupy", "torch")
A_SCALAR = 1.5        # y = a*x + b: exactly representable in every float type used
B_SCALAR = -0.25


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def fmt_exc(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    text = " ".join(text.split())
    return text[:400]


class CaseTimeout(BaseException):
    """Raised by SIGALRM when one case runs past --case-timeout (not an Exception, so that the
    per-variant handlers let it through to the case runner)."""


# --------------------------------------------------------------------------------------------
# Timing

class Timing:
    def __init__(self, samples, calls):
        self.samples = list(samples)
        self.calls = calls
        self.median = statistics.median(self.samples)
        self.min = min(self.samples)
        self.max = max(self.samples)


class Settings:
    def __init__(self, quick: bool, tiny: bool):
        self.quick = quick
        self.tiny = tiny
        self.target_ms = 8.0 if quick else 25.0       # device time of one timed loop
        self.repeats = 3 if quick else 7
        self.warmup = 2
        self.host_calls = 2000 if quick else 10000
        self.host_repeats = 3 if quick else 5
        self.host_warmup = 200 if quick else 1000
        self.fresh_processes = 3 if quick else 5      # ew_first_disk
        self.new_kernels = 4 if quick else 8          # ew_first_new
        if tiny:                                      # testing the script: keep it fast
            self.target_ms = 1.0
            self.repeats = 2
            self.host_calls = 50
            self.host_repeats = 2
            self.host_warmup = 5
            self.fresh_processes = 2
            self.new_kernels = 2


def time_device(b, fn, st: Settings, *, warmup=None, repeats=None, calls=None) -> Timing:
    """Milliseconds per call of fn, by events around a loop of calls; median of repeats."""
    for _ in range(st.warmup if warmup is None else warmup):
        fn()
    b.sync()
    if calls is None:
        one = b.time_loop(fn, 1)
        calls = max(1, min(1000, int(math.ceil(st.target_ms / max(one, 1e-3)))))
    samples = [b.time_loop(fn, calls) / calls for _ in range(st.repeats if repeats is None else repeats)]
    return Timing(samples, calls)


def time_host(b, fn, st: Settings) -> Timing:
    """Microseconds of host time per call: many calls without synchronising, then one sync."""
    for _ in range(st.host_warmup):
        fn()
    b.sync()
    samples = []
    for _ in range(st.host_repeats):
        t0 = time.perf_counter()
        for _ in range(st.host_calls):
            fn()
        b.sync()
        samples.append((time.perf_counter() - t0) / st.host_calls * 1e6)
    return Timing(samples, st.host_calls)


def time_host_units(b, fn, st: Settings, units, runs=None) -> Timing:
    """Microseconds of host time per unit of fn, which makes `units` of them (a graph replay of
    that many kernels, or that many calls made eagerly): as time_host, `runs` runs then one sync,
    all timed; by default as many runs as give st.host_calls units (and a warm-up of
    st.host_warmup units)."""
    if runs is None:
        runs = max(1, st.host_calls // units)
        warm = max(1, st.host_warmup // units)
    else:
        warm = st.host_warmup
    for _ in range(warm):
        fn()
    b.sync()
    samples = []
    for _ in range(st.host_repeats):
        t0 = time.perf_counter()
        for _ in range(runs):
            fn()
        b.sync()
        samples.append((time.perf_counter() - t0) / (runs * units) * 1e6)
    return Timing(samples, runs)


def time_submit_units(b, fn, st: Settings, units, batch=100) -> Timing:
    """The host's share alone, in µs per unit: batches of `batch` runs, each followed by a sync,
    only the runs timed (a batch is fewer launches than the queue holds, so a GPU slower than the
    host does not set the pace); as many batches as give st.host_calls runs."""
    batches = max(1, st.host_calls // batch)
    fn()
    b.sync()
    samples = []
    for _ in range(st.host_repeats):
        seconds = 0.0
        for _ in range(batches):
            t0 = time.perf_counter()
            for _ in range(batch):
                fn()
            seconds += time.perf_counter() - t0
            b.sync()
        samples.append(seconds / (batches * batch * units) * 1e6)
    return Timing(samples, batches * batch)


# --------------------------------------------------------------------------------------------
# Backends: the few things that differ between CuPy and PyTorch besides the cases themselves

def _bf16_bits_to_f64(np, bits):
    u = np.asarray(bits).astype(np.uint16).astype(np.uint32) << 16
    return u.view(np.float32).astype(np.float64)


class CupyBackend:
    name = "cupy"

    def __init__(self):
        import numpy as np
        import cupy as cp
        self.np = np
        self.m = cp
        cp.cuda.Device(0).use()
        props = cp.cuda.runtime.getDeviceProperties(0)
        name = props.get("name", b"?")
        self.device = name.decode() if isinstance(name, bytes) else str(name)
        self.lib = f"cupy {cp.__version__}"
        try:
            self.lib += f", CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}"
        except Exception:
            pass
        acc = os.environ.get("CUPY_ACCELERATORS")
        self.lib += f", CUPY_ACCELERATORS={acc if acc is not None else '(default)'}"

    def sync(self):
        self.m.cuda.runtime.deviceSynchronize()

    def time_loop(self, fn, calls) -> float:
        cp = self.m
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end)

    def free(self):
        gc.collect()
        try:
            self.sync()
        except Exception:
            pass
        self.m.get_default_memory_pool().free_all_blocks()
        self.m.get_default_pinned_memory_pool().free_all_blocks()

    def dtype(self, name):
        if name == "bfloat16":
            try:
                import ml_dtypes
            except ImportError as e:
                raise RuntimeError(f"CuPy has bfloat16 only through ml_dtypes, which is not "
                                   f"importable ({e})") from None
            return self.np.dtype(ml_dtypes.bfloat16)
        return self.np.dtype(name)

    def randn(self, shape, dtype):
        cp, np = self.m, self.np
        if dtype in ("float32", "float64"):
            return cp.random.standard_normal(shape, dtype=np.dtype(dtype))
        x = cp.random.standard_normal(shape, dtype=np.float32)
        return x.astype(self.dtype(dtype))

    def from_host(self, a):
        return self.m.asarray(a)

    def empty(self, shape, dtype):
        return self.m.empty(shape, dtype=self.dtype(dtype))

    def _host64(self, a):
        np = self.np
        if a.dtype.name == "bfloat16":
            return _bf16_bits_to_f64(np, self.m.asnumpy(a.view(np.uint16)))
        return self.m.asnumpy(a).astype(np.float64)

    def gather(self, a, idx):
        """a.ravel()[idx] as float64 on the host; a must be contiguous."""
        np = self.np
        idx = np.asarray(idx, dtype=np.int64)
        flat = a.reshape(-1)
        if a.dtype.name == "bfloat16":
            flat = flat.view(np.uint16)
            return _bf16_bits_to_f64(np, self.m.asnumpy(flat[self.m.asarray(idx)]))
        return self.m.asnumpy(flat[self.m.asarray(idx)]).astype(np.float64)

    def rows(self, a, rows):
        np = self.np
        rows = np.asarray(rows, dtype=np.int64)
        if a.dtype.name == "bfloat16":
            return _bf16_bits_to_f64(np, self.m.asnumpy(a.view(np.uint16)[self.m.asarray(rows)]))
        return self.m.asnumpy(a[self.m.asarray(rows)]).astype(np.float64)

    def cols(self, a, cols):
        np = self.np
        cols = np.asarray(cols, dtype=np.int64)
        if a.dtype.name == "bfloat16":
            return _bf16_bits_to_f64(np, self.m.asnumpy(a.view(np.uint16)[:, self.m.asarray(cols)]))
        return self.m.asnumpy(a[:, self.m.asarray(cols)]).astype(np.float64)

    def scalar(self, a) -> float:
        return float(self.m.asnumpy(a))


class TorchBackend:
    name = "torch"

    def __init__(self):
        import numpy as np
        import torch
        self.np = np
        self.m = torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        self.dev = torch.device("cuda", 0)
        torch.cuda.set_device(0)
        self.device = torch.cuda.get_device_name(0)
        self.lib = f"torch {torch.__version__}, CUDA {getattr(torch.version, 'cuda', '?')}"

    def sync(self):
        self.m.cuda.synchronize()

    def time_loop(self, fn, calls) -> float:
        torch = self.m
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def free(self):
        gc.collect()
        try:
            self.sync()
        except Exception:
            pass
        self.m.cuda.empty_cache()

    def dtype(self, name):
        return {"float16": self.m.float16, "bfloat16": self.m.bfloat16, "float32": self.m.float32,
                "float64": self.m.float64, "int32": self.m.int32, "int64": self.m.int64}[name]

    def randn(self, shape, dtype):
        return self.m.randn(*shape, device=self.dev, dtype=self.dtype(dtype))

    def from_host(self, a):
        return self.m.from_numpy(self.np.ascontiguousarray(a)).to(self.dev)

    def empty(self, shape, dtype):
        return self.m.empty(shape, dtype=self.dtype(dtype), device=self.dev)

    def _host64(self, t):
        np = self.np
        if t.dtype == self.m.bfloat16:
            return _bf16_bits_to_f64(np, t.view(self.m.int16).cpu().numpy().view(np.uint16))
        return t.cpu().numpy().astype(np.float64)

    def gather(self, t, idx):
        flat = t.reshape(-1)
        return self._host64(flat[self.m.from_numpy(self.np.asarray(idx, dtype=self.np.int64)).to(self.dev)])

    def rows(self, t, rows):
        return self._host64(t[self.m.from_numpy(self.np.asarray(rows, dtype=self.np.int64)).to(self.dev)])

    def cols(self, t, cols):
        return self._host64(t[:, self.m.from_numpy(self.np.asarray(cols, dtype=self.np.int64)).to(self.dev)])

    def scalar(self, t) -> float:
        return float(t.item())


BACKENDS = {"cupy": CupyBackend, "torch": TorchBackend}


# --------------------------------------------------------------------------------------------
# Results: one record per variant; a variant's failure is its record's error, not the run's end

class Variant:
    def __init__(self, ctx, name, primary, note):
        self.ctx = ctx
        self.rec = {"variant": name, "primary": bool(primary)}
        self.notes = [note] if note else []

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is not None:
            self.rec["error"] = fmt_exc(ev) if not issubclass(et, CaseTimeout) else \
                f"timed out after {self.ctx.case_timeout} s (--case-timeout)"
            if self.ctx.verbose and issubclass(et, Exception):
                traceback.print_exception(et, ev, tb, file=sys.stderr)
        if self.notes:
            self.rec["note"] = "; ".join(self.notes)
        self.ctx.results.append(self.rec)
        return et is not None and issubclass(et, Exception)   # swallow errors, not timeouts

    def note(self, text):
        if text:
            self.notes.append(text)

    def set(self, **fields):
        self.rec.update(fields)

    def _timing(self, t: Timing, scale=1.0):
        self.rec["spread"] = [round(t.min * scale, 6), round(t.max * scale, 6)]
        self.rec["calls"] = t.calls
        self.rec["repeats"] = len(t.samples)

    def bw(self, fn, nbytes=None, **kw):
        """Device-timed bandwidth: gbps from the bytes counted (the case's by default)."""
        nbytes = self.ctx.bytes if nbytes is None else nbytes
        t = time_device(self.ctx.b, fn, self.ctx.st, **kw)
        self.rec["ms"] = t.median
        self.rec["gbps"] = nbytes / t.median / 1e6 if t.median > 0 else None
        self._timing(t)
        return t

    def device_ms(self, fn, **kw):
        t = time_device(self.ctx.b, fn, self.ctx.st, **kw)
        self.rec["ms"] = t.median
        if self.ctx.bytes:
            self.rec["gbps"] = self.ctx.bytes / t.median / 1e6 if t.median > 0 else None
        self._timing(t)
        return t

    def tflops(self, fn, flops, **kw):
        t = time_device(self.ctx.b, fn, self.ctx.st, **kw)
        self.rec["ms"] = t.median
        self.rec["tflops"] = flops / t.median / 1e9 if t.median > 0 else None
        self._timing(t)
        return t

    def host(self, fn):
        t = time_host(self.ctx.b, fn, self.ctx.st)
        self.rec["us_per_call"] = t.median
        self._timing(t)
        return t

    def host_per(self, fn, units, runs=None):
        """Host µs per unit of fn, which makes `units` of them (time_host_units)."""
        t = time_host_units(self.ctx.b, fn, self.ctx.st, units, runs)
        self.rec["us_per_call"] = t.median
        self._timing(t)
        return t

    def submit_per(self, fn, units):
        """The host's share of fn alone, µs per unit (time_submit_units)."""
        t = time_submit_units(self.ctx.b, fn, self.ctx.st, units)
        self.rec["us_per_call"] = t.median
        self._timing(t)
        return t

    def device_per(self, fn, units):
        """GPU µs per unit of fn (events around a loop of runs, time_device), in us_per_call (the
        case's metric field; the note says it is device time), ms per run in ms."""
        t = time_device(self.ctx.b, fn, self.ctx.st)
        self.rec["ms"] = t.median
        self.rec["us_per_call"] = t.median * 1e3 / units
        self._timing(t, 1e3 / units)
        return t

    def check(self, produce, rtol):
        """produce() -> (got, ref) numpy arrays; records ‖got − ref‖ / ‖ref‖ against rtol. A check
        that cannot run is recorded as such; it never stops the timing."""
        np = self.ctx.b.np
        try:
            got, ref = produce()
            got = np.asarray(got, dtype=np.float64).ravel()
            ref = np.asarray(ref, dtype=np.float64).ravel()
            if got.shape != ref.shape:
                self.rec["check"] = f"FAILED: shape {got.shape} vs reference {ref.shape}"
                return
            if not np.all(np.isfinite(got)):
                self.rec["check"] = "FAILED: non-finite values"
                return
            den = float(np.linalg.norm(ref))
            err = float(np.linalg.norm(got - ref)) / (den if den > 0 else 1.0)
            self.rec["check"] = (f"ok (rel err {err:.1e})" if err <= rtol
                                 else f"FAILED: rel err {err:.2e} > {rtol:g}")
        except Exception as e:  # noqa: BLE001
            self.rec["check"] = f"not run: {fmt_exc(e)}"


class Ctx:
    def __init__(self, b, st: Settings, case: C.Case, case_timeout, verbose):
        self.b = b
        self.m = b.m
        self.np = b.np
        self.st = st
        self.case = case
        self.shape = case.tiny if st.tiny else case.shape
        self.n = case.n(self.shape)
        self.bytes = case.bytes(self.shape)
        self.flops = case.flops(self.shape)
        self.results = []
        self.case_timeout = case_timeout
        self.verbose = verbose

    def variant(self, name, primary=False, note=""):
        return Variant(self, name, primary, note)

    def sample_idx(self, n, k=4096, seed=1):
        np = self.np
        rng = np.random.default_rng(seed)
        return np.unique(rng.integers(0, n, size=min(k, n), dtype=np.int64))


RTOL = {"float64": 1e-12, "float32": 1e-6, "float16": 3e-3, "bfloat16": 2e-2}
MM_RTOL = {"float64": 1e-12, "float32": 1e-5, "tf32": 5e-3, "float16": 2e-2, "bfloat16": 3e-2}


# --------------------------------------------------------------------------------------------
# The cases. PEERS[(case id, impl)] = function(ctx); each adds its variants to ctx.results.

PEERS = {}


def peer(impl, *case_ids):
    def deco(fn):
        for cid in case_ids:
            assert cid in C.BY_ID, cid
            PEERS[(cid, impl)] = fn
        return fn
    return deco


# ---- ceiling

@peer("cupy", "copy")
def cupy_copy(ctx):
    cp = ctx.m
    x = ctx.b.randn(ctx.shape, "float32")
    y = cp.empty_like(x)
    idx = ctx.sample_idx(ctx.n)
    nbytes = x.nbytes
    kind = getattr(cp.cuda.runtime, "memcpyDeviceToDevice", 3)
    with ctx.variant("cudaMemcpyAsync D2D (cupy.cuda.runtime.memcpyAsync)", True) as v:
        v.set(impl="ceiling")

        def memcpy():
            cp.cuda.runtime.memcpyAsync(y.data.ptr, x.data.ptr, nbytes, kind,
                                        cp.cuda.get_current_stream().ptr)
        memcpy()
        v.check(lambda: (ctx.b.gather(y, idx), ctx.b.gather(x, idx)), 0.0)
        v.bw(memcpy)
    y2 = cp.empty_like(x)
    with ctx.variant("ElementwiseKernel copy 'y = x'", True,
                     "CuPy's own kernels' ceiling, not the copy ceiling") as v:
        k = cp.ElementwiseKernel("T x", "T y", "y = x", "kjit_peer_copy")
        k(x, y2)
        v.check(lambda: (ctx.b.gather(y2, idx), ctx.b.gather(x, idx)), 0.0)
        v.bw(lambda: k(x, y2))


@peer("torch", "copy")
def torch_copy(ctx):
    x = ctx.b.randn(ctx.shape, "float32")
    y = ctx.m.empty_like(x)
    idx = ctx.sample_idx(ctx.n)
    with ctx.variant("torch Tensor.copy_ (cudaMemcpyAsync D2D)", True) as v:
        v.set(impl="ceiling")
        y.copy_(x)
        v.check(lambda: (ctx.b.gather(y, idx), ctx.b.gather(x, idx)), 0.0)
        v.bw(lambda: y.copy_(x))


# ---- elementwise

def _cupy_axpb(cp):
    return cp.ElementwiseKernel("T x, T a, T b", "T y", "y = a * x + b", "kjit_peer_axpb")


@peer("cupy", "ew_axpb_f32", "ew_axpb_f16", "ew_axpb_bf16")
def cupy_axpb(ctx):
    cp, b, dt = ctx.m, ctx.b, ctx.case.dtype
    x = b.randn(ctx.shape, dt)
    y = cp.empty_like(x)
    a, c = A_SCALAR, B_SCALAR
    idx = ctx.sample_idx(ctx.n)
    k = _cupy_axpb(cp)
    with ctx.variant("ElementwiseKernel 'y = a * x + b', a b Python scalars", True) as v:
        k(x, a, c, y)
        v.check(lambda: (b.gather(y, idx), a * b.gather(x, idx) + c), RTOL[dt])
        v.bw(lambda: k(x, a, c, y))
    with ctx.variant("ufuncs a * x + b (2 kernels + temporary)", False,
                     "moves twice the bytes counted") as v:
        out = a * x + c
        v.check(lambda: (b.gather(out, idx), a * b.gather(x, idx) + c), RTOL[dt])
        v.bw(lambda: a * x + c)


@peer("torch", "ew_axpb_f32", "ew_axpb_f16", "ew_axpb_bf16")
def torch_axpb(ctx):
    torch, b, dt = ctx.m, ctx.b, ctx.case.dtype
    x = b.randn(ctx.shape, dt)
    y = torch.empty_like(x)
    a, c = A_SCALAR, B_SCALAR
    idx = ctx.sample_idx(ctx.n)
    with ctx.variant("torch.mul(x, a, out=y)", True,
                     "the issue's 'mul': y = a*x, same bytes as a*x + b") as v:
        torch.mul(x, a, out=y)
        v.check(lambda: (b.gather(y, idx), a * b.gather(x, idx)), RTOL[dt])
        v.bw(lambda: torch.mul(x, a, out=y))
    with ctx.variant("torch.addcmul(b, x, a, out=y), a b 0-d tensors (1 kernel)") as v:
        at = torch.tensor(a, device=b.dev, dtype=x.dtype)
        bt = torch.tensor(c, device=b.dev, dtype=x.dtype)
        torch.addcmul(bt, x, at, out=y)
        v.check(lambda: (b.gather(y, idx), a * b.gather(x, idx) + c), RTOL[dt])
        v.bw(lambda: torch.addcmul(bt, x, at, out=y))
    with ctx.variant("x * a + b (2 kernels + temporary)", False,
                     "moves twice the bytes counted") as v:
        out = x * a + c
        v.check(lambda: (b.gather(out, idx), a * b.gather(x, idx) + c), RTOL[dt])
        v.bw(lambda: x * a + c)


@peer("cupy", "ew_abc_f32")
def cupy_abc(ctx):
    cp, b = ctx.m, ctx.b
    x1, x2, x3 = (b.randn(ctx.shape, "float32") for _ in range(3))
    y = cp.empty_like(x1)
    idx = ctx.sample_idx(ctx.n)
    ref = lambda: b.gather(x1, idx) * b.gather(x2, idx) + b.gather(x3, idx)  # noqa: E731
    with ctx.variant("ElementwiseKernel 'y = a * b + c'", True) as v:
        k = cp.ElementwiseKernel("T a, T b, T c", "T y", "y = a * b + c", "kjit_peer_abc")
        k(x1, x2, x3, y)
        v.check(lambda: (b.gather(y, idx), ref()), RTOL["float32"])
        v.bw(lambda: k(x1, x2, x3, y))
    with ctx.variant("ufuncs a * b + c (2 kernels + temporary)", False,
                     "moves 1.5x the bytes counted") as v:
        v.bw(lambda: x1 * x2 + x3)


@peer("torch", "ew_abc_f32")
def torch_abc(ctx):
    torch, b = ctx.m, ctx.b
    x1, x2, x3 = (b.randn(ctx.shape, "float32") for _ in range(3))
    y = torch.empty_like(x1)
    idx = ctx.sample_idx(ctx.n)
    with ctx.variant("torch.addcmul(c, a, b, out=y)", True) as v:
        torch.addcmul(x3, x1, x2, out=y)
        v.check(lambda: (b.gather(y, idx),
                         b.gather(x1, idx) * b.gather(x2, idx) + b.gather(x3, idx)),
                RTOL["float32"])
        v.bw(lambda: torch.addcmul(x3, x1, x2, out=y))
    with ctx.variant("a * b + c (2 kernels + temporary)", False,
                     "moves 1.5x the bytes counted") as v:
        v.bw(lambda: x1 * x2 + x3)


def _row_refs(ctx, x, row, y, idx, transposed):
    """(got, ref) for y = x + row or y = x.T + row, sampled at flat indices idx of y."""
    np = ctx.np
    rows, cols = ctx.shape
    i, j = np.divmod(idx, cols)
    src = (j * cols + i) if transposed else idx         # x.T[i, j] = x[j, i] (square x)
    row_h = ctx.b.gather(row, np.arange(cols))
    return ctx.b.gather(y, idx), ctx.b.gather(x, src) + row_h[j]


@peer("cupy", "ew_rowadd_f32", "ew_trowadd_f32")
def cupy_rowadd(ctx):
    cp, b = ctx.m, ctx.b
    tr = ctx.case.id == "ew_trowadd_f32"
    x = b.randn(ctx.shape, "float32")
    row = b.randn((ctx.shape[1],), "float32")
    y = cp.empty(ctx.shape, dtype=x.dtype)
    idx = ctx.sample_idx(ctx.n)
    xin = x.T if tr else x
    with ctx.variant(f"cupy.add({'x.T' if tr else 'x'}, row, out=y)", True) as v:
        cp.add(xin, row, out=y)
        v.check(lambda: _row_refs(ctx, x, row, y, idx, tr), RTOL["float32"])
        v.bw(lambda: cp.add(xin, row, out=y))
    with ctx.variant("ElementwiseKernel 'y = x + r' (broadcast)") as v:
        k = cp.ElementwiseKernel("T x, T r", "T y", "y = x + r", "kjit_peer_rowadd")
        k(xin, row, y)
        v.check(lambda: _row_refs(ctx, x, row, y, idx, tr), RTOL["float32"])
        v.bw(lambda: k(xin, row, y))


@peer("torch", "ew_rowadd_f32", "ew_trowadd_f32")
def torch_rowadd(ctx):
    torch, b = ctx.m, ctx.b
    tr = ctx.case.id == "ew_trowadd_f32"
    x = b.randn(ctx.shape, "float32")
    row = b.randn((ctx.shape[1],), "float32")
    y = torch.empty(ctx.shape, dtype=x.dtype, device=b.dev)
    idx = ctx.sample_idx(ctx.n)
    xin = x.t() if tr else x
    with ctx.variant(f"torch.add({'x.t()' if tr else 'x'}, row, out=y)", True) as v:
        torch.add(xin, row, out=y)
        v.check(lambda: _row_refs(ctx, x, row, y, idx, tr), RTOL["float32"])
        v.bw(lambda: torch.add(xin, row, out=y))


@peer("cupy", "ew_inplace_f64")
def cupy_inplace(ctx):
    cp, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float64")
    idx = ctx.sample_idx(ctx.n)
    with ctx.variant("cupy.add(x, 5, out=x) (x += 5)", True) as v:
        before = b.gather(x, idx)
        cp.add(x, 5, out=x)
        v.check(lambda: (b.gather(x, idx), before + 5), RTOL["float64"])
        v.bw(lambda: cp.add(x, 5, out=x))


@peer("torch", "ew_inplace_f64")
def torch_inplace(ctx):
    b = ctx.b
    x = b.randn(ctx.shape, "float64")
    idx = ctx.sample_idx(ctx.n)
    with ctx.variant("x.add_(5)", True) as v:
        before = b.gather(x, idx)
        x.add_(5)
        v.check(lambda: (b.gather(x, idx), before + 5), RTOL["float64"])
        v.bw(lambda: x.add_(5))


# ---- Array expressions (issue 34): the peers' plain expressions, and their fusers as variants.

def _expr_fused(m, x, c):
    return m.sqrt(2.0 * x + 1.0) * c


def _expr_var(m, x):
    return m.sum((x - 0.25) * (x - 0.25))


def _expr_where(m, x):
    return m.where(x > 0, x, 0.1 * x)


def _expr_axpb(m, x, c):
    return (2.0 * x + 1.0) * c


def _expr_inputs(ctx):
    """x (|randn|, so that sqrt(2x + 1) is real) and c, of the case's shape and dtype."""
    b, m = ctx.b, ctx.m
    x = m.abs(b.randn(ctx.shape, ctx.case.dtype))
    c = b.randn(ctx.shape, ctx.case.dtype)
    return x, c


def _fuser(ctx, fn):
    """cupy.fuse or torch.compile of fn (a function of arrays); None where the module has none
    (the tests' fakes)."""
    fuse = getattr(ctx.m, "fuse" if ctx.b.name == "cupy" else "compile", None)
    if fuse is None:
        return None
    if ctx.b.name == "cupy":
        # cupy.fuse names its kernel after the function: a lambda's "<lambda>" does not compile.
        return fuse(kernel_name="kjit_peer" + fn.__name__)(lambda *a: fn(ctx.m, *a))
    return fuse(lambda *a: fn(ctx.m, *a))


@peer("cupy", "expr_fused_f32", "expr_var_f32", "expr_where_f16")
@peer("torch", "expr_fused_f32", "expr_var_f32", "expr_where_f16")
def expr_bandwidth(ctx):
    b = ctx.b
    x, c = _expr_inputs(ctx)
    if ctx.case.id == "expr_where_f16":
        x = b.randn(ctx.shape, ctx.case.dtype)
    idx = ctx.sample_idx(ctx.n)
    fn, args = {"expr_fused_f32": (_expr_fused, (x, c)), "expr_var_f32": (_expr_var, (x,)),
                "expr_where_f16": (_expr_where, (x,))}[ctx.case.id]
    with ctx.variant("the plain expression (a kernel per operator)", True) as v:
        out = fn(ctx.m, *args)
        if ctx.case.id == "expr_fused_f32":
            xs, cs = b.gather(x, idx), b.gather(c, idx)
            v.check(lambda: (b.gather(out, idx), ctx.np.sqrt(2.0 * xs + 1.0) * cs), RTOL["float32"] * 4)
        v.bw(lambda: fn(ctx.m, *args))
    fused = _fuser(ctx, fn)
    if fused is None:
        return
    with ctx.variant("cupy.fuse" if ctx.b.name == "cupy" else "torch.compile") as v:
        fused(*args)
        v.bw(lambda: fused(*args))


@peer("cupy", "expr_host_1k")
@peer("torch", "expr_host_1k")
def expr_host(ctx):
    m = ctx.m
    x, c = _expr_inputs(ctx)
    with ctx.variant("the plain expression (three kernels)", True) as v:
        v.host(lambda: _expr_axpb(m, x, c))
    fused = _fuser(ctx, _expr_axpb)
    if fused is None:
        return
    with ctx.variant("cupy.fuse" if ctx.b.name == "cupy" else "torch.compile") as v:
        fused(x, c)
        v.host(lambda: fused(x, c))


@peer("cupy", "ew_host_1k")
def cupy_host_ew(ctx):
    cp, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    y = cp.empty_like(x)
    a, c = A_SCALAR, B_SCALAR
    k = _cupy_axpb(cp)
    with ctx.variant("ElementwiseKernel k(x, a, b) (output from the pool)", True) as v:
        out = k(x, a, c)
        v.check(lambda: (b.gather(out, range(ctx.n)), a * b.gather(x, range(ctx.n)) + c),
                RTOL["float32"])
        v.host(lambda: k(x, a, c))
    with ctx.variant("ElementwiseKernel k(x, a, b, y)") as v:
        v.host(lambda: k(x, a, c, y))


@peer("torch", "ew_host_1k")
def torch_host_ew(ctx):
    torch, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    y = torch.empty_like(x)
    a, c = A_SCALAR, B_SCALAR
    with ctx.variant("torch.mul(x, a)", True, "the issue's 'mul' (one op)") as v:
        out = torch.mul(x, a)
        v.check(lambda: (b.gather(out, range(ctx.n)), a * b.gather(x, range(ctx.n))),
                RTOL["float32"])
        v.host(lambda: torch.mul(x, a))
    with ctx.variant("torch.mul(x, a, out=y)") as v:
        v.host(lambda: torch.mul(x, a, out=y))
    with ctx.variant("x * a + b (2 ops)") as v:
        v.host(lambda: x * a + c)
    with ctx.variant("torch.addcmul(b, x, a), 0-d a b (1 op)") as v:
        at = torch.tensor(a, device=b.dev, dtype=x.dtype)
        bt = torch.tensor(c, device=b.dev, dtype=x.dtype)
        v.host(lambda: torch.addcmul(bt, x, at))


# ---- first calls (CuPy only): fresh processes through this script's --worker mode

def _run_worker(mode, cache_dir, count, timeout=180):
    env = dict(os.environ)
    env["CUPY_CACHE_DIR"] = cache_dir
    env["CUPY_CACHE_IN_MEMORY"] = "0"
    env.pop("CUPY_CACHE_SAVE_CUDA_SOURCE", None)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode, "--count", str(count)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"worker {mode} exited {p.returncode}: {' | '.join(tail)}")
    out = json.loads(lines[-1])
    if out.get("error"):
        raise RuntimeError(f"worker {mode}: {out['error']}")
    return out


def worker_main(mode, count):
    """Runs in a fresh process: times the first calls of ElementwiseKernels (CuPy)."""
    out = {"mode": mode}
    try:
        t0 = time.perf_counter()
        import numpy as np
        import cupy as cp
        t1 = time.perf_counter()
        cp.cuda.Device(0).use()
        xh = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
        x = cp.asarray(xh)                      # a host-to-device copy: no kernel compiled
        y = cp.empty_like(x)
        cp.cuda.runtime.deviceSynchronize()
        t2 = time.perf_counter()
        out["import_ms"] = (t1 - t0) * 1e3
        out["init_ms"] = (t2 - t1) * 1e3
        ins, outs, op = "T x, T a, T b", "T y", "y = a * x + b"
        times = []
        names = (["kjit_peer_disk_axpb"] if mode in ("populate", "disk")
                 else [f"kjit_peer_new_{os.getpid()}_{i}" for i in range(count)])
        for name in names:
            s = time.perf_counter()
            k = cp.ElementwiseKernel(ins, outs, op, name)
            k(x, A_SCALAR, B_SCALAR, y)
            cp.cuda.runtime.deviceSynchronize()
            times.append((time.perf_counter() - s) * 1e3)
        got = cp.asnumpy(y).astype(np.float64)
        ref = A_SCALAR * xh.astype(np.float64) + B_SCALAR
        out["check_err"] = float(np.max(np.abs(got - ref)))
        out["ms"] = times
    except Exception as e:  # noqa: BLE001
        out["error"] = fmt_exc(e)
    print(json.dumps(out), flush=True)
    return 0


@peer("cupy", "ew_first_new")
def cupy_first_new(ctx):
    st = ctx.st
    d = tempfile.mkdtemp(prefix="kjit-peer-cupy-cache-")
    first = None
    try:
        with ctx.variant("new ElementwiseKernel + first call, empty CUPY_CACHE_DIR", True,
                         "median over new kernels after the process's first; import and device "
                         "start excluded") as v:
            w = _run_worker("new", d, st.new_kernels + 1)
            later = w["ms"][1:]
            v.set(ms=statistics.median(later), spread=[min(later), max(later)],
                  repeats=len(later), calls=1)
            v.set(check="ok" if w.get("check_err", 1) < 1e-5 else f"FAILED: max abs err {w.get('check_err')}")
            first = w["ms"][0]
            v.note(f"import {w['import_ms']:.0f} ms, device start {w['init_ms']:.0f} ms")
        if first is not None:
            with ctx.variant("the process's first new kernel (NVRTC start-up included)") as v:
                v.set(ms=first, calls=1, repeats=1)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@peer("cupy", "ew_first_disk")
def cupy_first_disk(ctx):
    st = ctx.st
    d = tempfile.mkdtemp(prefix="kjit-peer-cupy-cache-")
    try:
        with ctx.variant("ElementwiseKernel + first call in a fresh process, kernel in "
                         "CUPY_CACHE_DIR", True) as v:
            _run_worker("populate", d, 1)
            files = sum(len(fs) for _, _, fs in os.walk(d))
            if files == 0:
                raise RuntimeError(f"CuPy wrote nothing into CUPY_CACHE_DIR={d}")
            runs = [_run_worker("disk", d, 1) for _ in range(st.fresh_processes)]
            ms = [r["ms"][0] for r in runs]
            v.set(ms=statistics.median(ms), spread=[min(ms), max(ms)], repeats=len(ms), calls=1)
            errs = [r.get("check_err", 1) for r in runs]
            v.set(check="ok" if max(errs) < 1e-5 else f"FAILED: max abs err {max(errs)}")
            imp = statistics.median(r["import_ms"] for r in runs)
            ini = statistics.median(r["init_ms"] for r in runs)
            v.note(f"{len(ms)} fresh processes, min-max {min(ms):.3f}-{max(ms):.3f} ms; "
                   f"excluded: import {imp:.0f} ms, device start {ini:.0f} ms; {files} cache files")
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- reductions

def _cupy_sumsq(cp):
    return cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "kjit_peer_sumsq")


@peer("cupy", "red_sum_f32")
def cupy_sum(ctx):
    cp, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    with ctx.variant("cupy.sum(x)", True) as v:
        v.check(lambda: (b.scalar(cp.sum(x)), b.scalar(cp.sum(x, dtype=cp.float64))), 1e-4)
        v.bw(lambda: cp.sum(x))


@peer("torch", "red_sum_f32")
def torch_sum(ctx):
    torch, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    with ctx.variant("torch.sum(x)", True) as v:
        v.check(lambda: (b.scalar(torch.sum(x)), b.scalar(x.sum(dtype=torch.float64))), 1e-4)
        v.bw(lambda: torch.sum(x))


@peer("cupy", "red_sumsq_f32")
def cupy_sumsq(ctx):
    cp, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    k = _cupy_sumsq(cp)
    ref = lambda: b.scalar(cp.sum(cp.square(x.astype(cp.float64))))  # noqa: E731
    with ctx.variant("ReductionKernel 'x * x', 'a + b'", True) as v:
        v.check(lambda: (b.scalar(k(x)), ref()), 1e-4)
        v.bw(lambda: k(x))


@peer("torch", "red_sumsq_f32")
def torch_sumsq(ctx):
    torch, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    ref = lambda: b.scalar((x.double() ** 2).sum())  # noqa: E731
    with ctx.variant("torch.linalg.vector_norm(x).square()", True,
                     "the issue's 'vector_norm'") as v:
        v.check(lambda: (b.scalar(torch.linalg.vector_norm(x).square()), ref()), 1e-4)
        v.bw(lambda: torch.linalg.vector_norm(x).square())
    with ctx.variant("(x * x).sum() (unfused)", False,
                     "the issue's 'unfused'; moves 3x the bytes counted") as v:
        v.check(lambda: (b.scalar((x * x).sum()), ref()), 1e-4)
        v.bw(lambda: (x * x).sum())


@peer("cupy", "red_sum_ax1_f32", "red_sum_ax0_f32")
def cupy_sum_axis(ctx):
    cp, b = ctx.m, ctx.b
    ax = 1 if ctx.case.id == "red_sum_ax1_f32" else 0
    x = b.randn(ctx.shape, "float32")
    with ctx.variant(f"x.sum(axis={ax})", True) as v:
        idx = ctx.sample_idx(ctx.shape[1 - ax], 512)
        v.check(lambda: (b.gather(x.sum(axis=ax), idx),
                         b.gather(x.sum(axis=ax, dtype=cp.float64), idx)), 1e-5)
        v.bw(lambda: x.sum(axis=ax))


@peer("torch", "red_sum_ax1_f32", "red_sum_ax0_f32")
def torch_sum_axis(ctx):
    torch, b = ctx.m, ctx.b
    ax = 1 if ctx.case.id == "red_sum_ax1_f32" else 0
    x = b.randn(ctx.shape, "float32")
    with ctx.variant(f"x.sum(dim={ax})", True) as v:
        idx = ctx.sample_idx(ctx.shape[1 - ax], 512)
        v.check(lambda: (b.gather(x.sum(dim=ax), idx),
                         b.gather(x.sum(dim=ax, dtype=torch.float64), idx)), 1e-5)
        v.bw(lambda: x.sum(dim=ax))


@peer("cupy", "red_argmax_f32")
def cupy_argmax(ctx):
    cp, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    with ctx.variant("cupy.argmax(x)", True) as v:
        v.check(lambda: (b.gather(x, [int(b.scalar(cp.argmax(x)))]), [b.scalar(x.max())]), 0.0)
        v.bw(lambda: cp.argmax(x))


@peer("torch", "red_argmax_f32")
def torch_argmax(ctx):
    torch, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    with ctx.variant("torch.argmax(x)", True) as v:
        v.check(lambda: (b.gather(x, [int(b.scalar(torch.argmax(x)))]), [b.scalar(x.max())]), 0.0)
        v.bw(lambda: torch.argmax(x))


@peer("cupy", "red_var_f32")
def cupy_var(ctx):
    cp, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    with ctx.variant("cupy.var(x)", True) as v:
        v.check(lambda: ([b.scalar(cp.var(x))], [b.scalar(cp.var(x.astype(cp.float64)))]), 1e-5)
        v.bw(lambda: cp.var(x))


@peer("torch", "red_var_f32")
def torch_var(ctx):
    torch, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    with ctx.variant("torch.var(x, correction=0)", True) as v:
        v.check(lambda: ([b.scalar(torch.var(x, correction=0))], [b.scalar(torch.var(x.double(), correction=0))]), 1e-5)
        v.bw(lambda: torch.var(x, correction=0))


@peer("cupy", "red_argmax_value_f32")
def cupy_argmax_value(ctx):
    cp, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")

    def both():
        i = cp.argmax(x)
        return x[i], i
    with ctx.variant("i = cupy.argmax(x); x[i]", True) as v:
        v.check(lambda: ([b.scalar(both()[0])], [b.scalar(x.max())]), 0.0)
        v.bw(both)


@peer("torch", "red_argmax_value_f32")
def torch_argmax_value(ctx):
    torch, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    with ctx.variant("torch.max(x, 0)", True) as v:
        v.check(lambda: ([b.scalar(torch.max(x, 0).values)], [b.scalar(x.max())]), 0.0)
        v.bw(lambda: torch.max(x, 0))


@peer("cupy", "red_histogram_i32", "red_bincount_i32")
def cupy_histogram(ctx):
    cp, b, np = ctx.m, ctx.b, ctx.np
    x = cp.random.randint(0, 256, size=ctx.shape, dtype=np.int32)
    with ctx.variant("cupy.bincount(x, minlength=256)", True) as v:
        v.check(lambda: (cp.bincount(x, minlength=256).get(), np.bincount(x.get(), minlength=256)), 0.0)
        v.bw(lambda: cp.bincount(x, minlength=256))


@peer("torch", "red_histogram_i32", "red_bincount_i32")
def torch_histogram(ctx):
    torch, b = ctx.m, ctx.b
    x = torch.randint(0, 256, ctx.shape, device=b.dev, dtype=torch.int32)
    with ctx.variant("torch.bincount(x, minlength=256)", True) as v:
        v.check(lambda: (torch.bincount(x, minlength=256).cpu().numpy(),
                         ctx.np.bincount(x.cpu().numpy(), minlength=256)), 0.0)
        v.bw(lambda: torch.bincount(x, minlength=256))


@peer("cupy", "red_cumsum_f32")
def cupy_cumsum(ctx):
    cp, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    y = cp.empty_like(x)
    with ctx.variant("cupy.cumsum(x, out=y)", True) as v:
        v.check(lambda: (cp.cumsum(x, out=y)[::4099].get(), cp.cumsum(x.astype(cp.float64))[::4099].get()), 1e-3)
        v.bw(lambda: cp.cumsum(x, out=y))


@peer("torch", "red_cumsum_f32")
def torch_cumsum(ctx):
    torch, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    y = torch.empty_like(x)
    with ctx.variant("torch.cumsum(x, 0, out=y)", True) as v:
        v.check(lambda: (torch.cumsum(x, 0, out=y)[::4099].cpu().numpy(),
                         torch.cumsum(x.double(), 0)[::4099].cpu().numpy()), 1e-3)
        v.bw(lambda: torch.cumsum(x, 0, out=y))


def _groupby_data(ctx):
    """Host data of the group-by case: sorted keys in [0, G), readings, offsets, references."""
    np = ctx.np
    n = ctx.n
    groups = C.GROUPS if not ctx.st.tiny else 8
    rng = np.random.default_rng(0)
    keys = np.sort(rng.integers(0, groups, size=n, dtype=np.int64))
    x = rng.standard_normal(n)
    off = np.searchsorted(keys, np.arange(groups + 1)).astype(np.int64)
    if np.any(off[1:] == off[:-1]):
        raise RuntimeError("an empty group: the data generator needs more readings per group")
    starts = off[:-1]
    ref = (np.minimum.reduceat(x, starts), np.maximum.reduceat(x, starts),
           np.add.reduceat(x, starts) / np.diff(off))
    return groups, keys, x, off, ref


def _groupby_unsorted_data(ctx):
    """The group-by data with keys and readings permuted together: the groups in no order."""
    groups, keys, x, off, ref = _groupby_data(ctx)
    perm = ctx.np.random.default_rng(1).permutation(keys.size)
    return groups, keys[perm], x[perm], off, ref


def _groupby_check(b, outs, ref):
    got = [b._host64(o) for o in outs]
    return (b.np.concatenate(got), b.np.concatenate(ref[3 - len(outs):]))


@peer("cupy", "red_groupby_f64")
def cupy_groupby(ctx):
    cp, b = ctx.m, ctx.b
    G, keys_h, x_h, off, ref = _groupby_data(ctx)
    keys, x = b.from_host(keys_h), b.from_host(x_h)
    mn, mx, me = (cp.empty(G, dtype=cp.float64) for _ in range(3))
    offs = [int(o) for o in off]
    slow = dict(warmup=0, repeats=1 if ctx.st.quick else 3, calls=1)   # ~1 s a call

    def mask_loop():
        for g in range(G):
            sel = x[keys == g]
            mn[g] = sel.min()
            mx[g] = sel.max()
            me[g] = sel.mean()

    def slice_loop():
        for g in range(G):
            seg = x[offs[g]:offs[g + 1]]
            mn[g] = seg.min()
            mx[g] = seg.max()
            me[g] = seg.mean()

    with ctx.variant("Python loop over groups, boolean masks x[keys == g]", True,
                     "the issue's 'per-group loop'") as v:
        mask_loop()
        v.check(lambda: _groupby_check(b, (mn, mx, me), ref), 1e-12)
        v.device_ms(mask_loop, **slow)
    with ctx.variant("Python loop over slices of the sorted data (offsets on the host)") as v:
        slice_loop()
        v.check(lambda: _groupby_check(b, (mn, mx, me), ref), 1e-12)
        v.device_ms(slice_loop, **slow)
    with ctx.variant("bincount(keys, weights=x) / bincount(keys): mean only", False,
                     "the issue's 'mean alone by bincount'") as v:
        def bincount_mean():
            return cp.bincount(keys, weights=x, minlength=G) / cp.bincount(keys, minlength=G)
        v.check(lambda: _groupby_check(b, (bincount_mean(),), ref), 1e-12)
        v.device_ms(bincount_mean)
    with ctx.variant("cupyx.scatter_min / scatter_max / scatter_add (atomics)") as v:
        _cupy_scatter3(ctx, v, keys, x, off, ref)


def _cupy_scatter3(ctx, v, keys, x, off, ref):
    """Min, max and mean per group by cupyx's atomic scatters (the keys' order does not matter)."""
    cp, b = ctx.m, ctx.b
    import cupyx
    G = off.size - 1
    mn, mx, me, s = (cp.empty(G, dtype=cp.float64) for _ in range(4))
    counts = b.from_host((off[1:] - off[:-1]).astype("float64"))

    def scatter3():
        mn.fill(cp.inf)
        cupyx.scatter_min(mn, keys, x)
        mx.fill(-cp.inf)
        cupyx.scatter_max(mx, keys, x)
        s.fill(0)
        cupyx.scatter_add(s, keys, x)
        cp.divide(s, counts, out=me)
    scatter3()
    v.check(lambda: _groupby_check(b, (mn, mx, me), ref), 1e-9)
    v.device_ms(scatter3)


@peer("cupy", "red_groupby_unsorted_f64")
def cupy_groupby_unsorted(ctx):
    b = ctx.b
    _, keys_h, x_h, off, ref = _groupby_unsorted_data(ctx)
    keys, x = b.from_host(keys_h), b.from_host(x_h)
    with ctx.variant("cupyx.scatter_min / scatter_max / scatter_add (atomics)", True) as v:
        _cupy_scatter3(ctx, v, keys, x, off, ref)


@peer("torch", "red_groupby_f64", "red_groupby_unsorted_f64")
def torch_groupby(ctx):
    torch, b = ctx.m, ctx.b
    unsorted = ctx.case.id == "red_groupby_unsorted_f64"
    G, keys_h, x_h, off, ref = (_groupby_unsorted_data if unsorted else _groupby_data)(ctx)
    keys, x, offs = b.from_host(keys_h), b.from_host(x_h), b.from_host(off)
    mn, mx, me = (torch.empty(G, dtype=torch.float64, device=b.dev) for _ in range(3))
    with ctx.variant("scatter_reduce_ ×3 (amin, amax, mean; include_self=False)", True,
                     "the issue's 'scatter_reduce ×3'") as v:
        def scatter3():
            mn.scatter_reduce_(0, keys, x, "amin", include_self=False)
            mx.scatter_reduce_(0, keys, x, "amax", include_self=False)
            me.scatter_reduce_(0, keys, x, "mean", include_self=False)
        scatter3()
        v.check(lambda: _groupby_check(b, (mn, mx, me), ref), 1e-9)
        v.device_ms(scatter3)
    if unsorted:
        return
    with ctx.variant("torch.segment_reduce ×3 (offsets)") as v:
        seg = getattr(torch, "segment_reduce", None)
        if seg is None:
            raise RuntimeError("this torch has no torch.segment_reduce")

        def segment3():
            return (seg(x, "min", offsets=offs, unsafe=True), seg(x, "max", offsets=offs, unsafe=True),
                    seg(x, "mean", offsets=offs, unsafe=True))
        v.check(lambda: _groupby_check(b, segment3(), ref), 1e-9)
        v.device_ms(segment3)


@peer("cupy", "red_host_1k")
def cupy_host_red(ctx):
    cp, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    k = _cupy_sumsq(cp)
    with ctx.variant("ReductionKernel sum of squares, k(x)", True) as v:
        v.check(lambda: (b.scalar(k(x)), float((b.gather(x, range(ctx.n)) ** 2).sum())), 1e-5)
        v.host(lambda: k(x))


@peer("torch", "red_host_1k")
def torch_host_red(ctx):
    torch, b = ctx.m, ctx.b
    x = b.randn(ctx.shape, "float32")
    with ctx.variant("torch.linalg.vector_norm(x)", True,
                     "not in the issue: torch has no user reductions; the nearest one op") as v:
        v.host(lambda: torch.linalg.vector_norm(x))


# ---- matrix products

def _mm_kind(case_id):
    return case_id.split("_")[1]          # f32 tf32 f64 bf16 f16


class _CupyTF32:
    """Selects TF32 for CuPy's float32 matmul (what CUPY_TF32=1 selects at first use), restores
    the previous compute type on exit."""

    def __init__(self, cp, np):
        import cupy._core._routines_linalg as rl
        self.rl, self.np = rl, np
        self.tf32 = getattr(rl, "COMPUTE_TYPE_TF32", 7)

    def __enter__(self):
        self.prev = self.rl.get_compute_type(self.np.float32)
        self.rl.set_compute_type(self.np.float32, self.tf32)
        if self.rl.get_compute_type(self.np.float32) != self.tf32:
            raise RuntimeError("cupy did not take COMPUTE_TYPE_TF32")
        return self

    def __exit__(self, *exc):
        self.rl.set_compute_type(self.np.float32, self.prev)
        return False


class _TorchTF32:
    """TF32 for torch's float32 matmul through the new API (torch >= 2.9: mixing it with the
    legacy allow_tf32 flag raises), or allow_tf32 where the new one is missing."""

    def __init__(self, torch):
        self.mm = torch.backends.cuda.matmul

    def __enter__(self):
        if hasattr(self.mm, "fp32_precision"):
            self.attr, self.prev = "fp32_precision", self.mm.fp32_precision
            self.mm.fp32_precision = "tf32"
        else:
            self.attr, self.prev = "allow_tf32", self.mm.allow_tf32
            self.mm.allow_tf32 = True
        return self

    def __exit__(self, *exc):
        try:
            setattr(self.mm, self.attr, self.prev)
        except Exception:  # noqa: BLE001 (never leave TF32 on for the float32 cases)
            setattr(self.mm, self.attr, "ieee" if self.attr == "fp32_precision" else False)
        return False


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _mm_check(ctx, a, bm, c):
    b = ctx.b
    n = ctx.shape[0]
    rs = ctx.sample_idx(n, 8, seed=2)
    cs = ctx.sample_idx(n, 8, seed=3)
    ref = b.rows(a, rs) @ b.cols(bm, cs)
    got = b.rows(c, rs)[:, cs]
    return got, ref


def _mm_common(ctx, matmul, make_mode, name):
    b = ctx.b
    kind = _mm_kind(ctx.case.id)
    dt = ctx.case.dtype
    with ctx.variant(name, True, "TF32" if kind == "tf32" else "") as v:
        a = b.randn(ctx.shape, dt)
        bm = b.randn(ctx.shape, dt)
        c = matmul.empty(a)
        with make_mode(kind):
            matmul(a, bm, c)
            v.check(lambda: _mm_check(ctx, a, bm, c), MM_RTOL["tf32" if kind == "tf32" else dt])
            v.tflops(lambda: matmul(a, bm, c), ctx.flops,
                     warmup=2, repeats=3 if ctx.st.quick else 5)


@peer("cupy", *[c.id for c in C.CASES if c.group == "mm" and c.metric == C.TFLOPS])
def cupy_mm(ctx):
    cp, np = ctx.m, ctx.np

    class MM:
        def __call__(self, a, bm, c):
            return cp.matmul(a, bm, out=c)

        def empty(self, a):
            return cp.empty_like(a)

    _mm_common(ctx, MM(), lambda k: _CupyTF32(cp, np) if k == "tf32" else _Nothing(),
               "cupy.matmul(a, b, out=c)")


@peer("torch", *[c.id for c in C.CASES if c.group == "mm" and c.metric == C.TFLOPS])
def torch_mm(ctx):
    torch = ctx.m

    class MM:
        def __call__(self, a, bm, c):
            return torch.matmul(a, bm, out=c)

        def empty(self, a):
            return torch.empty_like(a)

    _mm_common(ctx, MM(), lambda k: _TorchTF32(torch) if k == "tf32" else _Nothing(),
               "torch.matmul(a, b, out=c)")


@peer("cupy", "mm_host_64")
def cupy_mm_host(ctx):
    cp, b = ctx.m, ctx.b
    a, bm = b.randn(ctx.shape, "float32"), b.randn(ctx.shape, "float32")
    c = cp.empty_like(a)
    with ctx.variant("cupy.matmul(a, b)", True) as v:
        v.check(lambda: _mm_check(ctx, a, bm, cp.matmul(a, bm)), MM_RTOL["float32"])
        v.host(lambda: cp.matmul(a, bm))
    with ctx.variant("cupy.matmul(a, b, out=c)") as v:
        v.host(lambda: cp.matmul(a, bm, out=c))


@peer("torch", "mm_host_64")
def torch_mm_host(ctx):
    torch, b = ctx.m, ctx.b
    a, bm = b.randn(ctx.shape, "float32"), b.randn(ctx.shape, "float32")
    c = torch.empty_like(a)
    with ctx.variant("torch.matmul(a, b)", True) as v:
        v.check(lambda: _mm_check(ctx, a, bm, torch.matmul(a, bm)), MM_RTOL["float32"])
        v.host(lambda: torch.matmul(a, bm))
    with ctx.variant("torch.matmul(a, b, out=c)") as v:
        v.host(lambda: torch.matmul(a, bm, out=c))


# ---- CUDA graphs (issue 33): the sequences of kjit's graph cases (tools/cli/bench_graph.cpp)
# captured once and replayed. Every number is per call of the sequence (a replay's time over its
# calls), since neither peer tells how many nodes its graph holds.

class _GraphData:
    """The arrays of graph_ew10 (x and ten outputs y of 1000 float32) and, for graph_chain20,
    five 0-d sums and the 64×64 a, b and five products. `norm_sums`: the peer's reduction writes
    √Σy² (torch's vector_norm) instead of Σy²."""

    def __init__(self, ctx, norm_sums=False):
        b = ctx.b
        self.ctx = ctx
        self.chain = ctx.case.id == "graph_chain20"
        self.units = C.GRAPH_CHAIN_CALLS if self.chain else C.GRAPH_EW_CALLS
        self.norm_sums = norm_sums
        self.x = b.randn(ctx.shape, "float32")
        self.y = [b.empty(ctx.shape, "float32") for _ in range(C.GRAPH_EW_CALLS)]
        self.sums, self.products, self.a, self.bm = [], [], None, None
        if self.chain:
            self.a, self.bm = b.randn((64, 64), "float32"), b.randn((64, 64), "float32")
            self.sums = [b.empty((), "float32") for _ in range(5)]
            self.products = [b.empty((64, 64), "float32") for _ in range(5)]

    def outputs(self):
        return self.y + self.sums + self.products

    def poison(self, fill):
        """NaN in every output (fill(array, value) is the peer's fill), so that the check after
        a replay shows that the replay wrote them."""
        for out in self.outputs():
            fill(out, float("nan"))

    def check(self):
        """(got, ref) for Variant.check: each output group over its reference's norm, so that
        the large sums do not hide the elementwise outputs."""
        ctx, b, np = self.ctx, self.ctx.b, self.ctx.np
        every = np.arange(ctx.n)
        prev = b.gather(self.x, every)
        got, ref, ys = [], [], []
        for y in self.y:
            prev = A_SCALAR * prev + B_SCALAR
            ys.append(prev)
            got.append(b.gather(y, every))
            ref.append(prev)
        if self.chain:
            want = np.array([float((ys[2 * j + 1] ** 2).sum()) for j in range(5)])
            have = np.array([b.scalar(s) for s in self.sums])
            got.append(have ** 2 if self.norm_sums else have)
            ref.append(want)
            rows = np.arange(64)
            product = b.rows(self.a, rows) @ b.rows(self.bm, rows)
            for c in self.products:
                got.append(b.rows(c, rows))
                ref.append(product)
        scale = [max(float(np.linalg.norm(r)), 1e-30) for r in ref]
        return (np.concatenate([np.ravel(g) / k for g, k in zip(got, scale)]),
                np.concatenate([np.ravel(r) / k for r, k in zip(ref, scale)]))


def _graph_variants(ctx, d, calls, capture, where, fill, names):
    """The records of graph_ew10 or graph_chain20 for one peer: the host's share of a replay
    (main), the calls eager, replays back to back all timed, the GPU time of a replay; all per call.
    calls(): the sequence, eagerly; capture(calls) -> replay function; where(): the context of
    the stream the calls and replays go to; names: (main variant, eager variant)."""
    units, st = d.units, ctx.st
    per = "kernel" if units == C.GRAPH_EW_CALLS else "call"
    ctx.b.sync()                  # the inputs, made on the default stream, which CuPy's
    with where():                 # non-blocking capture stream does not wait for
        calls()                   # eager first: kernels compiled, cuBLAS's workspace made
    ctx.b.sync()
    replay = capture(calls)
    with ctx.variant(names[0], True, f"host µs per {per}: a replay's host time ÷ {units}; "
                     f"batches of 100 replays, a sync after each, only the replays timed") as v:
        d.poison(fill)
        ctx.b.sync()
        with where():
            replay()
        ctx.b.sync()
        v.check(d.check, 1e-5)
        with where():
            v.submit_per(replay, units)
    with ctx.variant(names[1], False, f"the same {units} calls eager, host µs per call") as v:
        with where():
            v.host_per(calls, units)
    with ctx.variant("replays back to back, all timed", False,
                     f"{st.host_calls} replays then one sync, all timed: the GPU's pace when it is "
                     f"slower than the host; µs per {per}") as v:
        with where():
            v.host_per(replay, units, runs=st.host_calls)
    with ctx.variant("GPU time of a replay, per call", False,
                     f"GPU time: events around back-to-back replays, µs per {per} (÷ {units}), "
                     f"in us_per_call; ms: per replay") as v:
        with where():
            v.device_per(replay, units)


@peer("cupy", "graph_ew10", "graph_chain20")
def cupy_graph(ctx):
    cp = ctx.m
    d = _GraphData(ctx)
    k = _cupy_axpb(cp)
    sumsq = _cupy_sumsq(cp)
    a, c = A_SCALAR, B_SCALAR
    stream = cp.cuda.Stream(non_blocking=True)    # a default stream cannot be captured

    def calls():
        if not d.chain:
            for i in range(C.GRAPH_EW_CALLS):
                k(d.x if i == 0 else d.y[i - 1], a, c, d.y[i])
            return
        for j in range(5):
            k(d.x if j == 0 else d.y[2 * j - 1], a, c, d.y[2 * j])
            k(d.y[2 * j], a, c, d.y[2 * j + 1])
            sumsq(d.y[2 * j + 1], out=d.sums[j])
            cp.matmul(d.a, d.bm, out=d.products[j])

    def capture(fn):
        with stream:
            stream.begin_capture()
            try:
                fn()
            finally:
                graph = stream.end_capture()
        return lambda: graph.launch(stream)

    main = ("Stream.begin_capture/end_capture of " +
            ("10 ElementwiseKernel k(x, a, b, y) calls" if not d.chain else
             "the chain (ElementwiseKernel, ReductionKernel k(y, out=s), matmul(out=c))") +
            ", Graph.launch(stream)")
    _graph_variants(ctx, d, calls, capture, lambda: stream, lambda t, v: t.fill(v),
                    (main, "the same calls eager (on the same stream)"))


@peer("torch", "graph_ew10", "graph_chain20")
def torch_graph(ctx):
    torch = ctx.m
    d = _GraphData(ctx, norm_sums=True)
    at = torch.tensor(A_SCALAR, device=ctx.b.dev, dtype=torch.float32)
    bt = torch.tensor(B_SCALAR, device=ctx.b.dev, dtype=torch.float32)

    def calls():
        if not d.chain:
            for i in range(C.GRAPH_EW_CALLS):
                torch.addcmul(bt, d.x if i == 0 else d.y[i - 1], at, out=d.y[i])
            return
        for j in range(5):
            torch.addcmul(bt, d.x if j == 0 else d.y[2 * j - 1], at, out=d.y[2 * j])
            torch.addcmul(bt, d.y[2 * j], at, out=d.y[2 * j + 1])
            torch.linalg.vector_norm(d.y[2 * j + 1], out=d.sums[j])
            torch.matmul(d.a, d.bm, out=d.products[j])

    def capture(fn):
        # PyTorch's documented order: warm up on a side stream, then capture.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        return graph.replay

    main = ("torch.cuda.graph capture of " +
            ("10 torch.addcmul(b, x, a, out=y), 0-d a b" if not d.chain else
             "the chain (addcmul, linalg.vector_norm(y, out=s), matmul(out=c))") +
            ", g.replay()")
    _graph_variants(ctx, d, calls, capture, _Nothing, lambda t, v: t.fill_(v),
                    (main, "the same calls eager"))


# --------------------------------------------------------------------------------------------
# Runner

def select_cases(patterns):
    """Comma-separated ids, globs (ew_*) or group names (ceiling, ew, red, mm, graph)."""
    if not patterns:
        return list(C.ORDER), []
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    chosen = []
    for cid in C.ORDER:
        case = C.BY_ID[cid]
        if any(p == case.group or fnmatch.fnmatchcase(cid, p) for p in pats):
            chosen.append(cid)
    unknown = [p for p in pats if not any(p == C.BY_ID[c].group or fnmatch.fnmatchcase(c, p)
                                          for c in C.ORDER)]
    return chosen, unknown


class Writer:
    def __init__(self, path, append):
        self.f = open(path, "a" if append else "w") if path and path != "-" else sys.stdout
        self.count = 0

    def write(self, rec):
        self.f.write(json.dumps(rec, allow_nan=False, default=str) + "\n")
        self.f.flush()
        self.count += 1

    def close(self):
        if self.f is not sys.stdout:
            self.f.close()


def _clean(v):
    """JSON has no NaN or infinity: such a number becomes null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def base_record(impl, case: C.Case, shape, device, lib):
    return {"impl": impl, "case": case.id, "gbps": None, "tflops": None, "us_per_call": None,
            "ms": None, "bytes": case.bytes(shape), "flops": case.flops(shape) or None,
            "n": case.n(shape), "shape": list(shape), "dtype": case.dtype, "note": "",
            "date": now_iso(), "device": device, "lib": lib}


def progress(rec):
    val = ""
    for key, unit in (("gbps", "GB/s"), ("tflops", "TFLOP/s"), ("us_per_call", "us"), ("ms", "ms")):
        if rec.get(key) is not None:
            val = f"{rec[key]:.4g} {unit}"
            break
    extra = f"  ERROR {rec['error']}" if rec.get("error") else ""
    chk = rec.get("check", "")
    if chk and not chk.startswith("ok"):
        extra += f"  check {chk}"
    star = "*" if rec.get("primary", True) else " "
    say(f"  {rec['impl']:7s} {rec['case']:16s}{star} {val:>16s}  {rec.get('variant', '')}{extra}")


def say(text):
    """Progress on stderr; a closed or broken stderr must not end the run."""
    if sys.stderr is None:                 # started with fd 2 closed
        return
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def run(args) -> int:
    st = Settings(args.quick, args.tiny)
    case_ids, unknown = select_cases(args.cases)
    if unknown:
        print(f"peers.py: no case matches {', '.join(unknown)} (--list shows them)", file=sys.stderr)
        return 2
    if not args.no_ceiling and "copy" not in case_ids:
        case_ids = ["copy"] + case_ids             # the ceiling is measured in the same run
    impls = [i.strip() for i in args.impl.split(",") if i.strip()]
    bad = [i for i in impls if i not in IMPLS]
    if bad:
        print(f"peers.py: unknown --impl {', '.join(bad)} (known: {', '.join(IMPLS)})",
              file=sys.stderr)
        return 2
    out = Writer(args.out, args.append)
    if hasattr(signal, "SIGALRM"):
        def on_alarm(signum, frame):
            raise CaseTimeout()
        signal.signal(signal.SIGALRM, on_alarm)
    t_start = time.perf_counter()
    for impl in impls:
        try:
            backend = BACKENDS[impl]()
            init_error = None
        except BaseException as e:  # noqa: BLE001 (an import can fail in many ways)
            if isinstance(e, KeyboardInterrupt):
                raise
            backend, init_error = None, f"{impl} not available: {fmt_exc(e)}"
        say(f"== {impl}: {backend.lib + ' on ' + backend.device if backend else init_error}")
        for cid in case_ids:
            case = C.BY_ID[cid]
            fn = PEERS.get((cid, impl))
            if fn is None:
                continue                            # this peer has no such case (table: —)
            shape = case.tiny if st.tiny else case.shape
            base = base_record(impl, case, shape, backend.device if backend else "",
                               backend.lib if backend else "")
            if backend is None:
                rec = dict(base, error=init_error, variant="", primary=True)
                out.write(rec)
                progress(rec)
                continue
            ctx = Ctx(backend, st, case, args.case_timeout, args.verbose)
            t0 = time.perf_counter()
            failure = None
            try:
                if hasattr(signal, "SIGALRM") and args.case_timeout > 0:
                    signal.alarm(int(args.case_timeout))
                fn(ctx)
            except CaseTimeout:
                failure = f"timed out after {args.case_timeout} s (--case-timeout)"
            except Exception as e:  # noqa: BLE001 (setup outside any variant failed)
                failure = fmt_exc(e)
                if args.verbose:
                    traceback.print_exc()
            finally:
                if hasattr(signal, "SIGALRM"):
                    signal.alarm(0)
            if failure and not (ctx.results and ctx.results[-1].get("error") == failure):
                # failed outside any variant (setup), or a timeout already on the last variant
                primary = not any(r.get("primary") for r in ctx.results)
                ctx.results.append({"variant": "" if primary else "(rest of the case)",
                                    "primary": primary, "error": failure})
            for r in ctx.results:
                rec = dict(base)
                rec.update(r)
                rec["date"] = now_iso()
                if st.tiny:
                    rec["note"] = ("tiny sizes (--tiny: testing the script, not a measurement); "
                                   + rec.get("note", "")).rstrip("; ")
                rec = {k: _clean(v) for k, v in rec.items()}
                out.write(rec)
                progress(rec)
            try:
                backend.free()
            except Exception as e:  # noqa: BLE001
                say(f"  (freeing memory after {cid} failed: {fmt_exc(e)})")
            if args.verbose:
                say(f"  [{cid} took {time.perf_counter() - t0:.1f} s]")
    say(f"== {out.count} records in {time.perf_counter() - t_start:.0f} s")
    out.close()
    return 0


def list_cases():
    for cid in C.ORDER:
        c = C.BY_ID[cid]
        impls = ",".join(i for i in IMPLS if (cid, i) in PEERS) or "-"
        print(f"{cid:16s} {c.group:8s} {impls:11s} {c.title}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", default=",".join(IMPLS), help="peers to run (default: cupy,torch)")
    p.add_argument("--cases", default="", help="comma-separated case ids, globs (ew_*) or "
                   "groups (ceiling, ew, red, mm, graph); default all; 'copy' is always added")
    p.add_argument("--no-ceiling", action="store_true", help="do not add the 'copy' case")
    p.add_argument("--quick", action="store_true", help="fewer repeats, shorter loops")
    p.add_argument("--tiny", action="store_true",
                   help="tiny sizes: for testing this script, not for measuring")
    p.add_argument("--out", default="-", help="JSON-lines output file (default stdout)")
    p.add_argument("--append", action="store_true", help="append to --out")
    p.add_argument("--case-timeout", type=int, default=120,
                   help="seconds one case (one peer) may take (default 120; 0: no limit)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks and case times")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker_main(args.worker, args.count)
    if args.list:
        list_cases()
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
