"""The benchmark cases of issues 5, 6, 7 and 33: ids, sizes, the bytes or operations each one
counts, the goal, and the numbers the issues quote for CuPy 14.2 and PyTorch 2.11 on the H200.

One source of truth for tools/bench/peers.py (which times CuPy and PyTorch on them), for
tools/bench/table.py (which merges results into a table) and, by its ids, for kjit_bench (the C++
program, which writes the same record format: tools/bench/README.md). Standard library only.

Bandwidth counts each input read once and each output written once (scalars not counted);
matrix products count 2*n^3 floating-point operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

# Metrics: the record field that carries a case's main number.
GBPS = "gbps"            # device time, bytes counted / median time per call
TFLOPS = "tflops"        # device time, 2*n^3 / median time per call
US = "us_per_call"       # host wall time per call (many calls, no sync, final sync)
MS = "ms"                # milliseconds per call (first calls, group-by)

HIGHER_IS_BETTER = {GBPS: True, TFLOPS: True, US: False, MS: False}
UNITS = {GBPS: "GB/s", TFLOPS: "TFLOP/s", US: "µs", MS: "ms"}

IMPL_LABELS = {"kjit": "kjit", "cupy": "CuPy", "torch": "PyTorch", "cublas": "cuBLAS",
               "ceiling": "copy ceiling", "one_gpu": "one GPU", "driver": "bare driver copy",
               "nccl": "bare NCCL"}

ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int32": 4, "int64": 8}


@dataclass(frozen=True)
class Goal:
    """What kjit must reach.

    kind: 'copy_frac' (gbps >= value * copy ceiling), 'gbps_min' (gbps >= value),
          'max' (metric value <= value, for µs and ms), 'vs_impl' (kjit >= value * impl's number).
    """
    kind: str
    value: float
    impl: str = ""

    def text(self, metric: str) -> str:
        if self.kind == "copy_frac":
            return f"≥ {self.value * 100:g}% of copy"
        if self.kind == "gbps_min":
            return f"≥ {self.value:g} GB/s"
        if self.kind == "max":
            return f"≤ {self.value:g} {UNITS[metric]}"
        if self.kind == "vs_impl":
            return f"≥ {self.value:g}× {IMPL_LABELS.get(self.impl, self.impl)}"
        return f"{self.kind} {self.value:g}"


@dataclass(frozen=True)
class Case:
    id: str
    group: str                  # 'ceiling', 'ew', 'red', 'mm', 'graph'
    title: str                  # what is computed, as the table shows it
    metric: str                 # GBPS, TFLOPS, US or MS
    dtype: str
    shape: tuple                # the full-size problem (elements)
    tiny: tuple                 # shape used by peers.py --tiny (testing the script only)
    bytes_fn: Optional[Callable[[tuple], int]] = None   # bytes counted, from the shape
    goal: Optional[Goal] = None
    flops_fn: Optional[Callable[[tuple], int]] = None
    issue: dict = field(default_factory=dict)           # impl -> the issue's number, as text
    doc: str = ""               # how each peer does it (README)
    kjit_only: bool = False     # no peer can do it (the table shows — for them)

    def n(self, shape=None) -> int:
        shape = self.shape if shape is None else shape
        out = 1
        for s in shape:
            out *= int(s)
        return out

    def bytes(self, shape=None) -> int:
        return int(self.bytes_fn(self.shape if shape is None else shape)) if self.bytes_fn else 0

    def flops(self, shape=None) -> int:
        return int(self.flops_fn(self.shape if shape is None else shape)) if self.flops_fn else 0


def _prod(shape):
    out = 1
    for s in shape:
        out *= int(s)
    return out


def _unary(itemsize):          # one input array, one output array of the same size
    return lambda s: 2 * itemsize * _prod(s)


def _row(itemsize):            # matrix + one row -> matrix
    return lambda s: itemsize * (2 * _prod(s) + int(s[-1]))


def _mm(s):
    return 2 * int(s[0]) ** 3


def _mm_bytes(itemsize):
    return lambda s: 3 * itemsize * int(s[0]) ** 2


N28 = 1 << 28
SQ = (16384, 16384)
GROUPS = 800                   # groups in the group-by case (its shape is (readings,))

CASES = [
    Case("copy", "ceiling", "device-to-device copy, float32 2^28 (read + write)", GBPS, "float32",
         (N28,), (1 << 16,), _unary(4), issue={"ceiling": "4260"},
         doc="ceiling: cudaMemcpyAsync D2D through cupy.cuda.runtime.memcpyAsync, and torch's "
             "Tensor.copy_ (also a cudaMemcpyAsync); the table uses the highest. cupy: an "
             "ElementwiseKernel copy 'y = x' (CuPy's own kernels' ceiling)."),
    # ---- elementwise (issue 5)
    Case("ew_axpb_f32", "ew", "y = a*x + b, float32 2^28, a b scalars", GBPS, "float32",
         (N28,), (1 << 16,), _unary(4), Goal("copy_frac", 0.97),
         issue={"cupy": "1691", "torch": "4224 (mul)"},
         doc="cupy: ElementwiseKernel('T x, T a, T b', 'T y', 'y = a * x + b') with Python float "
             "scalars; variant: the ufunc expression a * x + b (two kernels and a temporary). "
             "torch: torch.mul(x, a, out=y) (the issue's 'mul': same bytes, no add); variants: "
             "torch.addcmul(b, x, a) with 0-d a, b (the same function in one kernel) and "
             "x * a + b (two kernels)."),
    Case("ew_abc_f32", "ew", "y = a*b + c, three float32 arrays 2^28", GBPS, "float32",
         (N28,), (1 << 16,), lambda s: 16 * _prod(s), Goal("gbps_min", 4400),
         issue={"cupy": "3356", "torch": "4468 (addcmul)"},
         doc="cupy: ElementwiseKernel('T a, T b, T c', 'T y', 'y = a * b + c'); variant: ufuncs "
             "a * b + c. torch: torch.addcmul(c, a, b, out=y); variant: a * b + c."),
    Case("ew_rowadd_f32", "ew", "y = x + row, x 16384² float32, row 16384", GBPS, "float32",
         SQ, (256, 256), _row(4), Goal("copy_frac", 0.90),
         issue={"cupy": "1692", "torch": "2791"},
         doc="cupy: cupy.add(x, row, out=y); variant: ElementwiseKernel 'y = x + r' broadcasting. "
             "torch: torch.add(x, row, out=y)."),
    Case("ew_trowadd_f32", "ew", "y = x.T + row, 16384² float32, y C-order", GBPS, "float32",
         SQ, (256, 256), _row(4), Goal("copy_frac", 0.60),
         issue={"cupy": "1126", "torch": "1122"},
         doc="cupy: cupy.add(x.T, row, out=y) with y C-contiguous. torch: torch.add(x.t(), row, "
             "out=y)."),
    Case("ew_inplace_f64", "ew", "x = x + 5 in place, float64 300M", GBPS, "float64",
         (300_000_000,), (1 << 16,), _unary(8), Goal("copy_frac", 0.97),
         issue={"cupy": "3366", "torch": "4033"},
         doc="cupy: cupy.add(x, 5, out=x) (what x += 5 does). torch: x.add_(5)."),
    Case("ew_axpb_f16", "ew", "y = a*x + b, float16 2^28", GBPS, "float16",
         (N28,), (1 << 16,), _unary(2), Goal("copy_frac", 0.97),
         issue={"cupy": "(measure)", "torch": "4221 (mul)"},
         doc="as ew_axpb_f32, in float16."),
    Case("ew_axpb_bf16", "ew", "y = a*x + b, bfloat16 2^28", GBPS, "bfloat16",
         (N28,), (1 << 16,), _unary(2), Goal("copy_frac", 0.97),
         issue={"cupy": "—", "torch": "4225 (mul)"},
         doc="as ew_axpb_f32, in bfloat16. CuPy 14 has bfloat16 only through ml_dtypes.bfloat16 "
             "('minimal support'); where that fails the record says why."),
    Case("ew_host_1k", "ew", "host time per call, y = a*x + b, 1000 float32", US, "float32",
         (1000,), (1000,), _unary(4), Goal("max", 4.0),
         issue={"cupy": "7.4", "torch": "7.65"},
         doc="cupy: the ElementwiseKernel called as k(x, a, b) (output allocated from the pool); "
             "variant: k(x, a, b, y). torch: torch.mul(x, a); variants: out=y, x * a + b, "
             "addcmul."),
    Case("ew_first_new", "ew", "first call of a new kernel, empty cache (compile included)", MS,
         "float32", (1000,), (1000,), None, Goal("max", 40),
         issue={"cupy": "97.6"},
         doc="cupy only, in a fresh process with CUPY_CACHE_DIR an empty folder, after import and "
             "device start: the median over several new kernels (each a new name, so new "
             "source) of constructing the ElementwiseKernel and its first call, synchronised; "
             "variant: the process's very first kernel (NVRTC start-up included)."),
    Case("ew_first_disk", "ew", "first call in a fresh process, kernel on disk", MS, "float32",
         (1000,), (1000,), None, Goal("max", 0.25),
         issue={"cupy": "0.51–0.74"},
         doc="cupy only: a process fills CUPY_CACHE_DIR; then each of several fresh processes "
             "imports cupy, starts the device, allocates its arrays, and times constructing the "
             "same ElementwiseKernel and its first call, synchronised (import and start excluded). "
             "Median over the processes; the spread is min-max."),
    Case("ew_first_readonly", "ew", "first call in a fresh process, kernel precompiled in a read-only layer, no NVRTC",
         MS, "float32", (1000,), (1000,), None, Goal("max", 0.35), kjit_only=True,
         doc="kjit only (CuPy has no peer: it cannot run a cached kernel without NVRTC's identity): "
             "`kjit precompile` fills a temporary folder; each of several fresh processes uses it as "
             "KJIT_CACHE_PATH with no writable folder and KJIT_NVRTC_LIBRARY=/nonexistent, and times "
             "the first call as ew_first_disk does. Median over the processes."),
    # ---- reductions (issue 6)
    Case("red_sum_f32", "red", "sum, float32 2^28", GBPS, "float32",
         (N28,), (1 << 16,), lambda s: 4 * _prod(s) + 4, Goal("gbps_min", 4400),
         issue={"cupy": "4438 (cp.sum, CUB)", "torch": "4347"},
         doc="cupy: cupy.sum(x) (CUB when CUPY_ACCELERATORS has cub, CuPy's default). "
             "torch: torch.sum(x)."),
    Case("red_sumsq_f32", "red", "sum of squares (user reduction), float32 2^28", GBPS,
         "float32", (N28,), (1 << 16,), lambda s: 4 * _prod(s) + 4, Goal("gbps_min", 4300),
         issue={"cupy": "2764", "torch": "1411 unfused, 4358 vector_norm"},
         doc="cupy: ReductionKernel('T x', 'T y', 'x * x', 'a + b', 'y = a', '0'). torch: "
             "torch.linalg.vector_norm(x).square(); variant: (x * x).sum() (unfused, moves 3x "
             "the counted bytes)."),
    Case("red_sum_ax1_f32", "red", "sum axis=1, 16384² float32", GBPS, "float32",
         SQ, (256, 256), lambda s: 4 * (_prod(s) + int(s[0])), Goal("gbps_min", 4400),
         issue={"cupy": "4525", "torch": "4146"},
         doc="cupy: x.sum(axis=1). torch: x.sum(dim=1)."),
    Case("red_sum_ax0_f32", "red", "sum axis=0, 16384² float32", GBPS, "float32",
         SQ, (256, 256), lambda s: 4 * (_prod(s) + int(s[1])), Goal("gbps_min", 4300),
         issue={"cupy": "2535", "torch": "4351"},
         doc="cupy: x.sum(axis=0). torch: x.sum(dim=0)."),
    Case("red_argmax_f32", "red", "argmax, float32 2^28", GBPS, "float32",
         (N28,), (1 << 16,), lambda s: 4 * _prod(s) + 8, Goal("gbps_min", 4200),
         issue={"cupy": "4267", "torch": "3813"},
         doc="cupy: cupy.argmax(x). torch: torch.argmax(x)."),
    Case("red_var_f32", "red", "var, float32 2^28, one pass", GBPS, "float32",
         (N28,), (1 << 16,), lambda s: 4 * _prod(s) + 4, Goal("gbps_min", 4200),
         doc="issue 36. kjit: kjit::var(x) (shifted sums in float64, Chan's merge, one pass). "
             "cupy: cupy.var(x). torch: torch.var(x, correction=0)."),
    Case("red_argmax_value_f32", "red", "argmax with its value, float32 2^28", GBPS, "float32",
         (N28,), (1 << 16,), lambda s: 4 * _prod(s) + 8 + 4, Goal("gbps_min", 4200),
         doc="issue 36. kjit: a ReductionKernel whose running value is struct { T v; int64 at; } "
             "(one pass, both outputs). cupy: cupy.argmax(x) then x[i] (no one-pass form). "
             "torch: torch.max(x, 0), values and indices together."),
    Case("red_histogram_i32", "red", "histogram, 2^28 int32 into 256 bins", GBPS, "int32",
         (N28,), (1 << 16,), lambda s: 4 * _prod(s) + 4 * 256, Goal("gbps_min", 3500),
         doc="issue 36. kjit: ElementwiseKernel('int32 v', 'raw int32 bins', 'atomic_add(bins[v], 1)') "
             "(global atomics). cupy: cupy.bincount(x, minlength=256). torch: torch.bincount(x, minlength=256). "
             "Values uniform in [0, 256)."),
    Case("red_bincount_i32", "red", "histogram, 2^28 int32 into 256 bins, shared-memory bins", GBPS, "int32",
         (N28,), (1 << 16,), lambda s: 4 * _prod(s) + 8 * 256, Goal("gbps_min", 3500),
         doc="issue 36. kjit: kjit::bincount(v, 256, {}, bins) (each block counts in shared memory, then "
             "adds its counts once). cupy: cupy.bincount(x, minlength=256). torch: torch.bincount(x, minlength=256). "
             "Values uniform in [0, 256)."),
    Case("red_cumsum_f32", "red", "cumsum, float32 2^28", GBPS, "float32",
         (N28,), (1 << 16,), _unary(4), Goal("copy_frac", 0.85),
         doc="issue 36. kjit: kjit::cumsum(x, {}, y) (a ScanKernel: decoupled look-back, one pass). "
             "cupy: cupy.cumsum(x, out=y). torch: torch.cumsum(x, 0, out=y). Bytes: x read and y written once."),
    Case("red_groupby_f64", "red", f"min/max/mean per group, 12M float64, {GROUPS} sorted groups",
         MS, "float64", (12_000_000,), (12_000,), lambda s: 8 * _prod(s) + 3 * 8 * GROUPS,
         Goal("max", 0.25),
         issue={"cupy": "1147 (loop); 9.8 (bincount, mean only)", "torch": "15.7 (scatter_reduce ×3)"},
         doc="data: readings ~ N(0,1), keys = sorted uniform integers in [0, 800) (numpy "
             "default_rng(0)), i.e. ~15000 readings per group; bytes count the readings once and "
             "the three outputs (not the keys). cupy: a Python loop over groups with boolean "
             "masks x[keys == g] and .min() .max() .mean() (the issue's 'per-group loop'); "
             "variants: the loop over slices x[o[g]:o[g+1]] of the sorted data, bincount "
             "(mean only), cupyx.scatter_min/max/add. torch: scatter_reduce_ ×3 (amin, amax, "
             "mean); variant: torch.segment_reduce ×3 with offsets."),
    Case("red_groupby_unsorted_f64", "red", f"min/max/mean per group, 12M float64, {GROUPS} unsorted groups",
         MS, "float64", (12_000_000,), (12_000,), lambda s: 8 * _prod(s) + 3 * 8 * GROUPS,
         Goal("max", 1.0),
         doc="issue 36. The group-by case's data in a random order (keys and readings permuted "
             "together). kjit: group_keys(keys) (a stable radix sort of the keys, then their runs) and "
             "reduce_by_key ×3 over the groups; wall time with its synchronisations. cupy: "
             "cupyx.scatter_min / scatter_max / scatter_add (atomics need no order). torch: "
             "scatter_reduce_ ×3 (amin, amax, mean)."),
    Case("red_host_1k", "red", "host time per call, user reduction, 1000 float32", US, "float32",
         (1000,), (1000,), lambda s: 4 * _prod(s) + 4, Goal("max", 5.0),
         issue={"cupy": "22.9", "torch": "—"},
         doc="cupy: the sum-of-squares ReductionKernel called as k(x). torch (not in the issue: "
             "no user reductions): torch.linalg.vector_norm(x)."),
]

# ---- matrix products (issue 7)
_MM_ISSUE = {
    ("f32", 8192): {"cublas": "51.3 (raw sgemm)"},
    ("tf32", 8192): {"cublas": "455 (raw)", "torch": "439"},
    ("f64", 8192): {"torch": "57.8"},
    ("bf16", 8192): {"torch": "845"},
    ("f16", 8192): {"torch": "811"},
    ("f32", 10000): {"cupy": "48.9"},
    ("f64", 10000): {"cupy": "55.8"},
}
_MM_DTYPE = {"f32": "float32", "tf32": "float32", "f64": "float64", "bf16": "bfloat16",
             "f16": "float16"}
for _size in (8192, 10000):
    for _k in ("f32", "tf32", "f64", "bf16", "f16"):
        _dt = _MM_DTYPE[_k]
        CASES.append(Case(
            f"mm_{_k}_{_size}", "mm",
            f"matmul {_size}², {_k}" + (" (float32 data, TF32 tensor cores)" if _k == "tf32" else ""),
            TFLOPS, _dt, (_size, _size), (96, 96) if _size == 8192 else (100, 100),
            _mm_bytes(ITEMSIZE[_dt]), Goal("vs_impl", 0.98, "cublas"), _mm,
            issue=_MM_ISSUE.get((_k, _size), {}),
            doc="cupy: cupy.matmul(a, b, out=c)" +
                ("; TF32 through cupy._core._routines_linalg.set_compute_type(float32, "
                 "COMPUTE_TYPE_TF32) (what CUPY_TF32=1 selects), restored after" if _k == "tf32"
                 else "") +
                ". torch: torch.matmul(a, b, out=c)" +
                ("; TF32 through torch.backends.cuda.matmul.fp32_precision = 'tf32' (allow_tf32 "
                 "on an older torch), restored after" if _k == "tf32" else "") + "."))
CASES.append(Case(
    "mm_host_64", "mm", "host time per call, matmul 64×64 float32", US, "float32", (64, 64),
    (64, 64), _mm_bytes(4), Goal("max", 6.0), _mm, issue={"cupy": "20.9", "torch": "13.5"},
    doc="cupy: cupy.matmul(a, b); variant: out=c. torch: torch.matmul(a, b); variant: out=c."))


# ---- CUDA graphs (issue 33): the same sequences captured once and replayed. The host time is per
# call of the sequence (a replay's time over its calls), so that kjit and the peers compare
# however many graph nodes each one's calls make (kjit's note gives its node count).
GRAPH_EW_CALLS = 10
GRAPH_CHAIN_CALLS = 20
_GRAPH_CHAIN = ("the chain: five rounds of two y = a*x + b calls (each on the one before's output, "
                "1000 float32), a sum of squares of the second's output into a 0-d array, and a "
                "64×64 float32 matmul into a preallocated output (20 calls)")
CASES += [
    Case("graph_ew10", "graph",
         "host µs per kernel, a replayed graph of 10 calls y = a*x + b, 1000 float32", US,
         "float32", (1000,), (1000,), None, Goal("max", 1.0),
         doc="the issue also asks for at most half of each peer's replay (kjit ÷ CuPy and kjit ÷ "
             "PyTorch ≥ 2). The host's share of a replay: batches of 100 replays between untimed "
             "syncs, per kernel (÷ 10); variants: the same calls eager (per call), replays back to "
             "back (1000 warm-up, then 10000 and one sync, all timed: the GPU's pace), the GPU "
             "time of a replay (events, ÷ 10). cupy: the ElementwiseKernel k(x, a, b, y) ×10 captured by "
             "Stream.begin_capture()/end_capture() on a non-blocking stream, Graph.launch(stream). "
             "torch: torch.addcmul(b, x, a, out=y) ×10 with 0-d a, b (one kernel each) captured by "
             "torch.cuda.graph(g) after a warm-up on a side stream, g.replay()."),
    Case("graph_chain20", "graph",
         "host µs per call, a replayed graph of 20 calls: 10 elementwise, 5 user reductions, "
         "5 matmuls 64×64", US, "float32", (1000,), (1000,), None, Goal("max", 1.0),
         doc=_GRAPH_CHAIN + "; replayed and timed as graph_ew10, per call (÷ 20); variants: the "
             "chain eager (the issue's 'today's floor', per call), replays back to back, "
             "the GPU time of a replay per call. cupy: ElementwiseKernel, the sum-of-squares "
             "ReductionKernel k(y, out=s), cupy.matmul(a, b, out=c). torch: addcmul as in "
             "graph_ew10, torch.linalg.vector_norm(y, out=s) (no user reductions: the one-kernel "
             "√Σy², as red_host_1k), torch.matmul(a, b, out=c)."),
    Case("graph_update", "graph",
         "µs per update() moving that graph to other arrays (all 23 of the chain)",
         US, "float32", (1000,), (1000,), None, Goal("max", 20.0), kjit_only=True,
         doc="kjit only (neither CuPy's nor PyTorch's graph object has a documented way to move "
             "a captured graph to other arrays): Graph::update({...}) naming the chain's 23 "
             "arrays, alternating between two sets, 5 batches of 200, per update; variant: "
             "update(stream, calls), a new capture applied with cuGraphExecUpdate. The second "
             "set's results are checked after a replay."),
]

# ---- Array expressions (issue 34): NumPy-style expressions fused into one kernel.
CASES += [
    Case("expr_fused_f32", "expr", "z = sqrt(a*x + b) * c, float32 2^28, arrays x, c", GBPS, "float32",
         (N28,), (1 << 16,), lambda s: 12 * _prod(s), Goal("copy_frac", 0.97),
         doc="kjit: eval(z, sqrt(2*x + 1) * c), one kernel. cupy: the ufunc expression into "
             "a new array (four kernels and temporaries); variant: cupy.fuse of the same function. "
             "torch: the eager expression; variant: torch.compile of it, where it runs."),
    Case("expr_var_f32", "expr", "s = sum((x - m) * (x - m)), float32 2^28", GBPS, "float32",
         (N28,), (1 << 16,), lambda s: 4 * _prod(s), Goal("gbps_min", 4300),
         doc="kjit: sum((x - m) * (x - m)) into a 0-d output, one kernel. cupy: "
             "cupy.sum((x - m) * (x - m)); variant: cupy.fuse. torch: the eager expression; "
             "variant: torch.compile."),
    Case("expr_where_f16", "expr", "y = where(x > 0, x, 0.1 * x), float16 2^28", GBPS, "float16",
         (N28,), (1 << 16,), _unary(2), Goal("copy_frac", 0.97),
         doc="kjit: eval(y, where(x > 0, x, 0.1 * x)), float16 throughout. cupy: cupy.where(x > 0, x, "
             "0.1 * x); variant: cupy.fuse. torch: torch.where(x > 0, x, 0.1 * x); variant: "
             "torch.compile."),
    Case("expr_host_1k", "expr", "host time per evaluation of z = (a*x + b) * c, 1000 float32", US,
         "float32", (1000,), (1000,), None, Goal("max", 5.0),
         doc="as ew_host_1k: 1000 warm-up evaluations, then 10000 and one sync, all timed, median "
             "of 5. kjit: eval(z, (2*x + 1) * c). cupy: the ufunc expression (three kernels); "
             "variant: cupy.fuse. torch: torch.mul(torch.add(torch.mul(x, 2), 1), c) eager."),
    Case("expr_first_new", "expr", "first evaluation of a new expression, empty cache (compile included)", MS,
         "float32", (1000,), (1000,), None, Goal("max", 40), kjit_only=True,
         doc="kjit only: the median over 5 new 3-operator expressions of x and c (structures new "
             "to the process and the cache) of eval(z, e) and a sync, NVRTC included."),
]

# Several GPUs (issue 38): kjit only, each judged against one GPU, the bare driver call or bare
# NCCL measured in the same run (records of impl one_gpu, driver, nccl beside kjit's).
CASES += [
    Case("mg_axpb_split_f32", "mg", "y = a*x + b, float32 2^29 split over 2 GPUs", GBPS, "float32",
         (1 << 29,), (1 << 16,), _unary(4), Goal("vs_impl", 1.9, "one_gpu"), kjit_only=True,
         doc="kjit: split(x) over cuda:0 and cuda:1, the same ElementwiseKernel launched on each half; "
             "the note gives one GPU's time on the whole and the ratio (goal >= 1.9x one GPU)."),
    Case("mg_peer_copy_1g", "mg", "x.to(cuda:1), 1 GiB float32", GBPS, "float32",
         (1 << 28,), (1 << 16,), lambda s: 4 * _prod(s), Goal("vs_impl", 0.9, "driver"), kjit_only=True,
         doc="kjit: Array::to between GPUs (allocation included, pool warm); the note gives a bare "
             "cuMemcpyPeerAsync into a kept buffer and the ratio (goal >= 90%)."),
    Case("mg_allreduce_256m_f32", "mg", "all-reduce of 256 MiB float32 over 2 GPUs", GBPS, "float32",
         (1 << 26,), (1 << 16,), lambda s: 4 * _prod(s), Goal("vs_impl", 0.95, "nccl"), kjit_only=True,
         doc="kjit: nccl::all_reduce over Communicator::local of both GPUs, in place; the note "
             "gives bare ncclAllReduce calls in one group on the same buffers and the ratio "
             "(goal >= 95%)."),
    Case("mg_first_call_second_device", "mg", "first call on cuda:1 of a kernel already used on cuda:0", MS,
         "float32", (1000,), (1000,), None, Goal("max", 0.3), kjit_only=True,
         doc="kjit: host time of the first launch on the second GPU; the note counts compiles "
             "during it (goal: none)."),
]

BY_ID = {c.id: c for c in CASES}
ORDER = [c.id for c in CASES]
GROUP_NAMES = {"ceiling": "Ceiling", "ew": "Elementwise (issue 5)", "red": "Reductions (issue 6)",
               "mm": "Matrix products (issue 7)", "graph": "Graphs (issue 33)",
               "expr": "Array expressions (issue 34)", "mg": "Several GPUs (issue 38)"}
