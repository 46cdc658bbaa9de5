"""Fake of CuPy's compute-type switch (tests only)."""
import numpy as np

COMPUTE_TYPE_DEFAULT = 1
COMPUTE_TYPE_TF32 = 7
_types = {}


def get_compute_type(dtype):
    return _types.get(np.dtype(dtype).name, COMPUTE_TYPE_DEFAULT)


def set_compute_type(dtype, compute_type):
    _types[np.dtype(dtype).name] = compute_type
