"""A fake cupy made of numpy, for tools/bench/tests only (see ../README.md)."""
import hashlib
import os
import sys
import time

import numpy as _np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _fakeutil import hook as _hook, wrong as _wrong  # noqa: E402

if os.environ.get("FAKE_CUPY_IMPORT_ERROR"):
    raise ImportError("fake: cupy import failure injected")

__version__ = "0.0-fake"


class _MemPtr:
    def __init__(self, arr):
        self.ptr = arr.ctypes.data


class ndarray(_np.ndarray):
    """numpy's array with cupy's .data.ptr."""

    @property
    def data(self):
        return _MemPtr(self)


def _wrap(r):
    if isinstance(r, _np.ndarray) and not isinstance(r, ndarray):
        return r.view(ndarray)
    return r


def asarray(a, dtype=None):
    _hook("asarray")
    return _np.array(a, dtype=dtype, copy=True).view(ndarray)


def asnumpy(a):
    return _np.array(a).view(_np.ndarray)


def __getattr__(name):
    f = getattr(_np, name)
    if callable(f) and not isinstance(f, type):
        def run(*args, **kw):
            _hook(name)
            r = f(*args, **kw)
            if _wrong(name):
                if isinstance(r, _np.ndarray):
                    r[...] += 1
                else:
                    r = r + 1
            return _wrap(r)

        def call(*args, **kw):
            r = cuda.run_or_record(name, lambda: run(*args, **kw))
            return kw.get("out") if r is None else r
        return call
    return f


class _Random:
    _rng = _np.random.default_rng(12345)

    def standard_normal(self, size=None, dtype=float):
        _hook("random.standard_normal")
        return _wrap(self._rng.standard_normal(size, dtype=_np.dtype(dtype)))


random = _Random()


def _names(params):
    return [p.split()[-1] for p in params.split(",") if p.strip()]


def _fake_compile(name, src):
    """Stands for NVRTC and the disk cache: one file per kernel in CUPY_CACHE_DIR."""
    d = os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache"))
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, hashlib.sha1((name + src).encode()).hexdigest() + ".cubin")
    if not os.path.exists(path):
        time.sleep(0.002)
        with open(path, "w") as f:
            f.write(src)


class ElementwiseKernel:
    def __init__(self, in_params, out_params, operation, name="kernel", **kw):
        self.ins, self.outs = _names(in_params), _names(out_params)
        self.op, self.name = operation.strip().rstrip(";"), name
        self.compiled = False

    def __call__(self, *args):
        r = cuda.run_or_record("ElementwiseKernel", lambda: self._run(*args))
        if r is None and len(args) > len(self.ins):
            return args[len(self.ins)]
        return r

    def _run(self, *args):
        _hook("ElementwiseKernel")
        if not self.compiled:
            _fake_compile(self.name, self.op)
            self.compiled = True
        ins, outs = args[:len(self.ins)], args[len(self.ins):]
        arrays = [a for a in ins if isinstance(a, _np.ndarray)]
        T = arrays[0].dtype
        env = {n: (a if isinstance(a, _np.ndarray) else T.type(a)) for n, a in zip(self.ins, ins)}
        for n, a in zip(self.outs, outs):
            env[n] = a
        exec(self.op, {"__builtins__": {}}, env)
        value = env[self.outs[0]]
        if _wrong("ElementwiseKernel"):
            value = value + 1
        if outs:
            outs[0][...] = value
            return outs[0]
        shape = _np.broadcast_shapes(*[a.shape for a in arrays])
        return _wrap(_np.array(_np.broadcast_to(value, shape), dtype=T))


class ReductionKernel:
    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce", **kw):
        assert reduce_expr.replace(" ", "") == "a+b", "the fake only sums"
        self.map, self.name, self.compiled = map_expr, name, False

    def __call__(self, x, out=None, axis=None):
        r = cuda.run_or_record("ReductionKernel", lambda: self._run(x, out, axis))
        return out if r is None else r

    def _run(self, x, out, axis):
        _hook("ReductionKernel")
        if not self.compiled:
            _fake_compile(self.name, self.map)
            self.compiled = True
        mapped = eval(self.map, {"__builtins__": {}}, {"x": x})
        value = _np.asarray(_np.sum(mapped, axis=axis), dtype=x.dtype)
        if _wrong("ReductionKernel"):
            value = 2 * value + 1           # wrong by more than rounding, however large the sum
        if out is not None:
            out[...] = value
            return out
        return _wrap(value)


class _Pool:
    def free_all_blocks(self):
        pass


def get_default_memory_pool():
    return _Pool()


def get_default_pinned_memory_pool():
    return _Pool()


from . import _core, cuda  # noqa: E402,F401  (cupy.cuda and cupy._core as attributes)
