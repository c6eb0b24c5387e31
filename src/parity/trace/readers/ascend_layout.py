"""Where torch_npu's Ascend profiler writes its output: the folder and file names, and how to
find the output folder from what the user passed. Standard library only, so telling a trace's
format (:mod:`.detect`) and listing a folder of ranks (:mod:`parity.trace.load`) do not load
the Ascend readers (CSV, SQLite) for a Kineto file.
"""

from __future__ import annotations

from pathlib import Path

OUTPUT = "ASCEND_PROFILER_OUTPUT"
TRACE_VIEW = "trace_view.json"
KERNEL_DETAILS = "kernel_details.csv"
STEP_TRACE = "step_trace_time.csv"
COMMUNICATION = "communication.json"


def output_dir(path: Path) -> Path:
    """The ``ASCEND_PROFILER_OUTPUT`` folder for a ``*_ascend_pt`` folder, itself, or a file in it."""
    if path.is_file():
        return path.parent
    return path / OUTPUT if (path / OUTPUT).is_dir() else path
