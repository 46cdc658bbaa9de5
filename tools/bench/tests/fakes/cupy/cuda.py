"""Fake cupy.cuda (tests only): events read the host clock; streams capture graphs."""
import ctypes
import time
from types import SimpleNamespace


class Device:
    def __init__(self, i=0):
        self.id = i

    def use(self):
        pass

    def synchronize(self):
        pass


class Event:
    def __init__(self, *a, **kw):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass


def get_elapsed_time(start, end):
    return (end.t - start.t) * 1e3


class Stream:
    """A stream: `with stream:` makes it current; begin_capture()/end_capture() record the calls
    made meanwhile into a Graph instead of running them, as CUDA's stream capture does."""

    def __init__(self, null=False, non_blocking=False, ptds=False):
        self.ptr = 0 if null else id(self)

    def __enter__(self):
        _current.append(self)
        return self

    def __exit__(self, *exc):
        _current.pop()
        return False

    def begin_capture(self, mode=None):
        global _capture, _capturing
        if self.ptr == 0:
            raise RuntimeError("fake: the null stream cannot be captured")
        if _capturing is not None:
            raise RuntimeError("fake: a capture is already under way")
        _capture, _capturing = [], self

    def end_capture(self):
        global _capture, _capturing
        if _capturing is not self:
            raise RuntimeError("fake: this stream is not capturing")
        calls, _capture, _capturing = _capture, None, None
        return Graph(calls)


class Graph:
    def __init__(self, calls):
        self.calls = calls

    def launch(self, stream=None):
        for call in self.calls:
            call()


_NULL = Stream(null=True)
_current = []
_capture = None        # the calls recorded by the capture under way
_capturing = None      # its stream


def get_current_stream():
    return _current[-1] if _current else _NULL


def run_or_record(name, call):
    """What a fake kernel does: runs `call` now, or records it while a stream captures. A call
    made on another stream than the capturing one fails, as it does on the GPU (an implicit
    dependency on a capturing stream invalidates the capture)."""
    if _capturing is None:
        return call()
    if get_current_stream() is not _capturing:
        raise RuntimeError(f"fake: {name} on another stream than the capturing one")
    _capture.append(call)
    return None


def _memcpy_async(dst, src, size, kind, stream):
    assert kind == 3
    ctypes.memmove(dst, src, size)


runtime = SimpleNamespace(
    getDeviceProperties=lambda i: {"name": b"Fake GPU (numpy)"},
    deviceSynchronize=lambda: None,
    runtimeGetVersion=lambda: 13000,
    memcpyAsync=_memcpy_async,
    memcpyDeviceToDevice=3,
)
