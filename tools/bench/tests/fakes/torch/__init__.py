"""A fake torch made of numpy, for tools/bench/tests only (see ../README.md). Tensors wrap numpy
arrays; bfloat16 is float32 rounded to 8 bits of mantissa; .numpy() of a bfloat16 tensor fails as
torch's does; a CUDA graph records the calls made during its capture and replays them."""
import os
import sys
import time
from types import SimpleNamespace

import numpy as _np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _fakeutil import hook as _hook, wrong as _wrong  # noqa: E402

if os.environ.get("FAKE_TORCH_IMPORT_ERROR"):
    raise ImportError("fake: torch import failure injected")

__version__ = "0.0+fake"
version = SimpleNamespace(cuda="13.0")


class dtype:
    def __init__(self, name, np_dtype):
        self.name, self.np = name, _np.dtype(np_dtype)
        self.itemsize = 2 if name in ("float16", "bfloat16", "int16") else self.np.itemsize

    def __repr__(self):
        return "torch." + self.name


float16 = dtype("float16", _np.float16)
bfloat16 = dtype("bfloat16", _np.float32)
float32 = dtype("float32", _np.float32)
float64 = dtype("float64", _np.float64)
int64 = dtype("int64", _np.int64)
int16 = dtype("int16", _np.int16)
_BY_NP = {float16.np: float16, float32.np: float32, float64.np: float64, int64.np: int64,
          int16.np: int16}


def _round_bf16(a):
    bits = _np.asarray(a, dtype=_np.float32).view(_np.uint32).astype(_np.uint64)
    u = _np.uint64
    bits = (bits + u(0x7FFF) + ((bits >> u(16)) & u(1))) & u(0xFFFF0000)
    return bits.astype(_np.uint32).view(_np.float32)


def _cast(a, dt):
    a = _np.asarray(a, dtype=dt.np)
    return _round_bf16(a) if dt is bfloat16 else a


def _arr(v):
    return v.a if isinstance(v, Tensor) else v


def _conv_index(idx):
    if isinstance(idx, tuple):
        return tuple(_arr(i) for i in idx)
    return _arr(idx)


class Tensor:
    def __init__(self, a, dt):
        self.a, self.dtype = a, dt

    @property
    def shape(self):
        return tuple(self.a.shape)

    def numel(self):
        return int(self.a.size)

    def element_size(self):
        return self.dtype.itemsize

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return Tensor(self.a.reshape(shape), self.dtype)

    def t(self):
        return Tensor(self.a.T, self.dtype)

    def __getitem__(self, idx):
        return Tensor(self.a[_conv_index(idx)], self.dtype)

    def float(self):
        return Tensor(self.a.astype(_np.float32), float32)

    def double(self):
        return Tensor(self.a.astype(_np.float64), float64)

    def cpu(self):
        return self

    def to(self, device):
        return self

    def numpy(self):
        if self.dtype is bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self.a

    def item(self):
        return self.a.item()

    def view(self, dt):
        if self.dtype is bfloat16 and dt is int16:
            bits = (_np.ascontiguousarray(self.a).view(_np.uint32) >> 16).astype(_np.uint16)
            return Tensor(bits.view(_np.int16), int16)
        raise NotImplementedError(f"fake view {self.dtype} -> {dt}")

    def fill_(self, v):
        self.a[...] = v
        return self

    def add_(self, v):
        _hook("Tensor.add_")
        self.a[...] = _cast(self.a + _arr(v) + (1 if _wrong("Tensor.add_") else 0), self.dtype)
        return self

    def copy_(self, src):
        _hook("Tensor.copy_")
        self.a[...] = src.a
        return self

    def scatter_reduce_(self, dim, index, src, reduce, include_self=True):
        _hook("Tensor.scatter_reduce_")
        assert dim == 0 and not include_self
        idx, val = index.a, src.a
        touched = _np.zeros(self.a.shape, bool)
        touched[idx] = True
        if reduce in ("amin", "amax"):
            init = _np.inf if reduce == "amin" else -_np.inf
            out = _np.full(self.a.shape, init)
            (_np.minimum if reduce == "amin" else _np.maximum).at(out, idx, val)
        elif reduce in ("sum", "mean"):
            out = _np.zeros(self.a.shape)
            _np.add.at(out, idx, val)
            if reduce == "mean":
                cnt = _np.zeros(self.a.shape)
                _np.add.at(cnt, idx, 1)
                out = out / _np.maximum(cnt, 1)
        else:
            raise RuntimeError(f"reduce {reduce}")
        self.a[touched] = _cast(out[touched], self.dtype)
        return self

    def sum(self, dim=None, dtype=None):
        _hook("Tensor.sum")
        dt = dtype or self.dtype
        return Tensor(_cast(_np.sum(self.a.astype(dt.np), axis=dim), dt), dt)

    def max(self):
        return Tensor(_np.asarray(self.a.max()), self.dtype)

    def square(self):
        return Tensor(_cast(self.a * self.a, self.dtype), self.dtype)

    def _bin(self, other, f):
        return Tensor(_cast(f(self.a, _arr(other)), self.dtype), self.dtype)

    def __mul__(self, o):
        return self._bin(o, _np.multiply)

    __rmul__ = __mul__

    def __add__(self, o):
        return self._bin(o, _np.add)

    __radd__ = __add__

    def __pow__(self, o):
        return self._bin(o, _np.power)

    def __sub__(self, o):
        return self._bin(o, _np.subtract)

    def __rsub__(self, o):
        return Tensor(_cast(_arr(o) - self.a, self.dtype), self.dtype)

    def __gt__(self, o):  # a mask of 0 and 1 in the tensor's dtype (enough for where)
        return self._bin(o, _np.greater)


# CUDA graphs: while torch.cuda.graph(g) captures, the calls marked _capturable are recorded
# for g.replay() instead of run, as on the GPU.
_capture = None


def _capturable(fn):
    def call(*args, **kw):
        if _capture is not None:
            _capture.append(lambda: fn(*args, **kw))
            return kw.get("out")
        return fn(*args, **kw)
    call.__name__ = fn.__name__
    return call


def _result(name, value, dt, out):
    _hook("torch." + name)
    if _wrong("torch." + name):
        value = value + 1
    if out is not None:
        out.a[...] = _cast(value, out.dtype)
        return out
    return Tensor(_cast(value, dt), dt)


def _first_dtype(*xs):
    return next(x.dtype for x in xs if isinstance(x, Tensor))


@_capturable
def mul(x, y, out=None):
    return _result("mul", _np.multiply(_arr(x), _arr(y)), _first_dtype(x, y), out)


@_capturable
def add(x, y, out=None):
    return _result("add", _np.add(_arr(x), _arr(y)), _first_dtype(x, y), out)


@_capturable
def addcmul(input, tensor1, tensor2, value=1, out=None):
    v = _arr(input) + value * _arr(tensor1) * _arr(tensor2)
    return _result("addcmul", v, _first_dtype(tensor1, input), out)


def sum(x):  # noqa: A001
    return _result("sum", _np.sum(x.a), x.dtype, None)


def abs(x):  # noqa: A001
    return _result("abs", _np.abs(x.a), x.dtype, None)


def sqrt(x):
    return _result("sqrt", _np.sqrt(x.a), x.dtype, None)


def where(c, x, y):
    return _result("where", _np.where(_arr(c) != 0, _arr(x), _arr(y)), _first_dtype(x, y), None)


def argmax(x):
    return _result("argmax", _np.asarray(_np.argmax(x.a)), int64, None)


@_capturable
def matmul(a, b, out=None):
    return _result("matmul", _np.matmul(a.a, b.a), a.dtype, out)


def segment_reduce(data, reduce, *, lengths=None, offsets=None, unsafe=False, axis=0):
    _hook("torch.segment_reduce")
    starts = offsets.a[:-1]
    x = data.a
    f = {"min": _np.minimum.reduceat, "max": _np.maximum.reduceat,
         "sum": _np.add.reduceat}
    if reduce == "mean":
        v = _np.add.reduceat(x, starts) / _np.diff(offsets.a)
    else:
        v = f[reduce](x, starts)
    return Tensor(_cast(v, data.dtype), data.dtype)


_rng = _np.random.default_rng(54321)


def randn(*size, device=None, dtype=float32):
    _hook("torch.randn")
    return Tensor(_cast(_rng.standard_normal(size), dtype), dtype)


def empty(*size, dtype=float32, device=None):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return Tensor(_np.full(size, _np.nan, dtype=dtype.np), dtype)


def empty_like(t):
    return Tensor(_np.full(t.a.shape, _np.nan, dtype=t.dtype.np), t.dtype)


def tensor(v, device=None, dtype=None):
    dt = dtype or float32
    return Tensor(_cast(_np.asarray(v), dt), dt)


def from_numpy(a):
    return Tensor(a, _BY_NP[a.dtype])


def device(kind, index=0):
    return f"{kind}:{index}"


@_capturable
def _vector_norm(x, out=None):
    return _result("linalg.vector_norm", _np.sqrt(_np.sum(x.a.astype(_np.float64) ** 2)), x.dtype, out)


linalg = SimpleNamespace(vector_norm=_vector_norm)


class _Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class _Stream:
    def wait_stream(self, other):
        pass


_DEFAULT_STREAM = _Stream()
_streams = []


class _StreamContext:
    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        _streams.append(self.stream)
        return self.stream

    def __exit__(self, *exc):
        _streams.pop()
        return False


class CUDAGraph:
    def __init__(self):
        self.calls = None

    def replay(self):
        if self.calls is None:
            raise RuntimeError("fake: replay of a graph never captured")
        for call in self.calls:
            call()


class _GraphContext:
    """torch.cuda.graph(g): what is called inside is recorded into g."""

    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        global _capture
        if _capture is not None:
            raise RuntimeError("fake: a capture is already under way")
        _capture = []
        return self.graph

    def __exit__(self, *exc):
        global _capture
        self.graph.calls, _capture = _capture, None
        return False


cuda = SimpleNamespace(
    is_available=lambda: True,
    set_device=lambda i: None,
    get_device_name=lambda i=0: "Fake GPU (numpy)",
    synchronize=lambda: None,
    empty_cache=lambda: None,
    Event=_Event,
    Stream=_Stream,
    current_stream=lambda device=None: _streams[-1] if _streams else _DEFAULT_STREAM,
    stream=_StreamContext,
    CUDAGraph=CUDAGraph,
    graph=_GraphContext,
)


class _Matmul:
    def __init__(self):
        self._p = "ieee"

    @property
    def fp32_precision(self):
        return self._p

    @fp32_precision.setter
    def fp32_precision(self, v):
        if v not in ("ieee", "tf32", "none"):
            raise ValueError(v)
        self._p = v


backends = SimpleNamespace(cuda=SimpleNamespace(matmul=_Matmul()))
