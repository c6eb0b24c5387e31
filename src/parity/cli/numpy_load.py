"""How a trace command loads its modules: numpy without OpenBLAS's thread pool, and, in a
``parity`` process of its own, without the cyclic collector traversing what the imports build."""

from __future__ import annotations

import gc
import importlib
import os
import sys

_OWN_PROCESS = [False]  # set by the entry point: the process ends with the command


def own_process() -> None:
    """Mark this process as one ``parity`` command's own (the entry point calls it, never a
    caller that passes its own argv: a test or a script keeps its collector as it was)."""
    _OWN_PROCESS[0] = True


def import_numpy_single_threaded() -> None:
    """Import numpy with OpenBLAS limited to one thread, unless numpy is loaded already or the
    user chose a thread count (``OPENBLAS_NUM_THREADS``).

    A trace command does no floating-point linear algebra; OpenBLAS would start a thread per
    core when numpy loads, and they spin while they wait: some 30 to 40 ms of CPU time of a
    short trace command on a 2-core machine, for nothing. OpenBLAS reads the variable once, as it
    loads, so it is removed at once: processes started later see the environment as it was.
    """
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401 - loaded now, under the setting above
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def load_modules(*names: str) -> None:
    """Load a trace command's modules before its work: numpy first (single-threaded), then
    ``names`` (module paths, imported as ``import name`` would).

    In a process of its own (:func:`own_process`) the cyclic collector is paused while they
    load and what they built is frozen afterwards (``gc.freeze``: moved to the permanent
    generation, which no collection traverses). Importing numpy, rich and the trace modules
    creates some 10^5 objects that live as long as the process; the collector would otherwise
    traverse them again and again while they load and in every later collection, about 10 ms of
    a 180 ms ``parity trace compare``. The collector runs as usual afterwards: the command's own
    garbage is collected.
    """
    own, was_enabled = _OWN_PROCESS[0], gc.isenabled()
    if own:
        gc.disable()
    try:
        import_numpy_single_threaded()
        for name in names:
            importlib.import_module(name)
    finally:
        if own:
            gc.freeze()
            if was_enabled:
                gc.enable()
