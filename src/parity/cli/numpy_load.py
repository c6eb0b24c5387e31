"""numpy loaded for the trace commands, without OpenBLAS's thread pool."""

from __future__ import annotations

import os
import sys


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
