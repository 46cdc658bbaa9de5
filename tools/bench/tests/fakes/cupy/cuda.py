"""Fake cupy.cuda (tests only): events read the host clock."""
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


class _Stream:
    ptr = 0


def get_current_stream():
    return _Stream()


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
