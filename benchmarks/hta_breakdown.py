"""Run inside benchmarks/.venv-hta: HTA's load + temporal breakdown of one trace, timed.

Usage (the trace_vs_hta.py benchmark calls it):

    python hta_breakdown.py TRACE REPEATS   # REPEATS runs, then one JSON line
    python hta_breakdown.py TRACE --serve   # one run per input line, for paired timing

The JSON line holds the wall time of each run (``TraceAnalysis(trace_dir=...)`` then
``get_temporal_breakdown(visualize=False)``) and the last breakdown's rows in µs. With
``--serve`` each line read from stdin starts one run and gets back ``{"t": seconds}``; an empty
line (or the end of input) ends with the same JSON line as the batch form. That lets the caller
time its own side between two HTA runs, so both sides see the machine in the same state.
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

HOST_CATEGORIES = {"cpu_op", "cuda_runtime", "cuda_driver", "python_function", "user_annotation"}


class Breakdown:
    """HTA's breakdown of one trace, each run timed; the trace is linked into a folder of its
    own because HTA takes a folder."""

    def __init__(self, trace: str) -> None:
        from hta.trace_analysis import TraceAnalysis

        self._analysis = TraceAnalysis
        self.folder = tempfile.mkdtemp(prefix="hta-")
        self.link = os.path.join(self.folder, os.path.basename(trace))
        os.symlink(os.path.abspath(trace), self.link)
        self.times: list[float] = []
        self.rows: list[dict] = []
        self.analyzer = None

    def run(self) -> float:
        start = time.perf_counter()
        self.analyzer = self._analysis(trace_dir=self.folder)
        frame = self.analyzer.get_temporal_breakdown(visualize=False)
        elapsed = time.perf_counter() - start
        self.times.append(elapsed)
        self.rows = json.loads(frame.to_json(orient="records"))
        return elapsed

    def report(self) -> str:
        host_rows = _host_rows_counted(self.analyzer) if self.analyzer is not None else []
        os.unlink(self.link)
        os.rmdir(self.folder)
        return json.dumps({"times_s": self.times, "rows": self.rows, "host_rows": host_rows})


def main() -> None:
    trace, mode = sys.argv[1], sys.argv[2]
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    breakdown = Breakdown(trace)
    if mode == "--serve":
        print("ready", flush=True)
        for line in sys.stdin:
            if not line.strip():
                break
            print(json.dumps({"t": breakdown.run()}), flush=True)
    else:
        for _ in range(int(mode)):
            breakdown.run()
    print(breakdown.report(), flush=True)


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
