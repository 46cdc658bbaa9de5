"""Fake cupyx scatter functions (tests only)."""
import numpy as np


def scatter_min(a, slices, value):
    np.minimum.at(a, slices, value)


def scatter_max(a, slices, value):
    np.maximum.at(a, slices, value)


def scatter_add(a, slices, value):
    np.add.at(a, slices, value)
