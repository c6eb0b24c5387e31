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
    os.unlink(os.path.join(folder, name))
    os.rmdir(folder)
    print(json.dumps({"times_s": times, "rows": rows}))


if __name__ == "__main__":
    main()
