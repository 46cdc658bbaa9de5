"""Shared by the fake cupy and torch (tests only): failure injection from the environment."""
import os
import time


def _names(var):
    return {n.strip() for n in os.environ.get(var, "").split(",") if n.strip()}


def hook(name):
    """Called by each fake function on entry: raises or sleeps when the environment says so."""
    if name in _names("FAKE_BROKEN"):
        raise RuntimeError(f"fake failure injected into {name}")
    for item in _names("FAKE_SLOW"):
        n, _, secs = item.partition(":")
        if n == name:
            time.sleep(float(secs or 1))


def wrong(name):
    return name in _names("FAKE_WRONG")
