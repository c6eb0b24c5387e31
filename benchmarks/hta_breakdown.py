"""Run inside benchmarks/.venv-hta: HTA's load + temporal breakdown of one trace, timed.

Usage (the trace_vs_hta.py benchmark calls it): ``python hta_breakdown.py TRACE REPEATS``.
Prints one JSON line: the wall time of each repeat (``TraceAnalysis(trace_dir=...)`` then
``get_temporal_breakdown(visualize=False)``) and the last breakdown's rows in µs.
This file imports no parity code: it runs with HTA's own dependencies only.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
import warnings


def main() -> None:
    trace, repeats = sys.argv[1], int(sys.argv[2])
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    folder = tempfile.mkdtemp(prefix="hta-")
    name = os.path.basename(trace)
    os.symlink(os.path.abspath(trace), os.path.join(folder, name))
    times = []
    rows = []
    for _ in range(repeats):
        start = time.perf_counter()
        analyzer = TraceAnalysis(trace_dir=folder)
        frame = analyzer.get_temporal_breakdown(visualize=False)
        times.append(time.perf_counter() - start)
        rows = json.loads(frame.to_json(orient="records"))
    host_rows = _host_rows_counted(analyzer)
    os.unlink(os.path.join(folder, name))
    os.rmdir(folder)
    print(json.dumps({"times_s": times, "rows": rows, "host_rows": host_rows}))


HOST_CATEGORIES = {"cpu_op", "cuda_runtime", "cuda_driver", "python_function", "user_annotation"}


def _host_rows_counted(analyzer) -> list[list]:
    """Host events (by ``cat``) that the breakdown counts as GPU time: rows with a ``stream``
    argument, e.g. a Triton launcher's CPU op. Returned as ``[name, cat, dur_us]``."""
    trace = analyzer.t
    symbols = trace.symbol_table.get_sym_table()
    out = []
    for frame in trace.traces.values():
        gpu = frame[frame["stream"].ne(-1)]
        for _, row in gpu.iterrows():
            cat = symbols[int(row["cat"])] if "cat" in gpu.columns else ""
            if cat in HOST_CATEGORIES:
                out.append([symbols[int(row["name"])], cat, float(row["dur"])])
    return out


if __name__ == "__main__":
    main()
