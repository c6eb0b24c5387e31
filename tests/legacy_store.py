"""A results store written by schema version 3 (before the figures table), built row by row
with plain sqlite3 so that no code of this parity touches it before ``Store.open`` migrates it.

Two runs, A and B, of the same cases in six suites whose cases carry the metrics runs stored
then: a GEMM sweep (``achieved_flops``, its ceiling ``ceiling_flops``, a per-case figure table
``case_figures`` in the summary), bandwidth (``gbps``), pointer-chase latency (``ns_per_load``),
offline decode (``tokens_per_s``), and two suites of harness-declared work (``flop_per_s``,
``bytes_per_s``). Figures live as JSON inside each run's summary. ``tests/golden/`` holds what
``parity compare A B`` gave on this store before the figures table existed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from parity.model.figure import Figure
from parity.model.result import CaseResult
from parity.model.samples import Samples
from parity.store.rows import INSERT_CASE, case_row, dump_json
from parity.store.schema import APPLICATION_ID, MIGRATIONS

RUN_A, RUN_B = "20260101-000000-aaaa", "20260102-000000-bbbb"
PROVENANCE = {"device": {"type": "cuda", "properties": {"name": "NVIDIA H200"}},
              "host": {"hostname": "node7", "architecture": "x86-64"}, "torch": {"version": "2.13.0"}}
SHAPES = ((4096, 1.0, "compute-bound"), (2048, 1.1, "compute-bound"), (1024, 1.3, "compute-bound"),
          (512, 1.5, "memory-bound"), (256, 1.2, "memory-bound"))


def _samples(median: float) -> dict[str, Samples]:
    return {"main": Samples(values_s=(median * 0.98, median, median * 1.03, median * 1.01, median * 0.99),
                            method="device-events")}


def _gemm(speed: float) -> tuple[list[CaseResult], dict[str, Any], list[Figure]]:
    peak = 100e12 * speed
    cases = [CaseResult(suite="gemm", key="ceiling/bf16", params={"kind": "ceiling", "dtype": "bf16"},
                        samples=_samples(0.01 / speed), check={"passed": True},
                        metrics={"ceiling_flops": peak, "ceiling_shape": {"m": 8192, "n": 8192, "k": 8192}}),
             CaseResult(suite="gemm", key="bandwidth", params={"kind": "bandwidth"}, check={"passed": True},
                        metrics={"bandwidth_bps": 1e12})]
    rows: dict[str, dict[str, Any]] = {}
    for side, gain, klass in SHAPES:
        flop = 2.0 * side**3
        median = flop / (0.5 * peak) / (gain if speed > 1 else 1.0)
        key = f"bf16/matmul/{side}x{side}x{side}"
        cases.append(CaseResult(suite="gemm", key=key, check={"passed": True}, samples=_samples(median),
                                params={"kind": "shape", "dtype": "bf16", "m": side, "n": side, "k": side,
                                        "origin": "test"},
                                metrics={"median_s": median, "achieved_flops": flop / median, "work_flop": flop}))
        rows[key] = {"tflops": flop / median / 1e12, "best_flops": None, "efficiency": flop / median / peak,
                     "class": klass, "near_ridge": side == 1024, "arithmetic_intensity": side / 3, "dtype": "bf16",
                     "device": "NVIDIA H200"}
    units = {"tflops": "TFLOP/s", "best_flops": "FLOP/s", "efficiency": "1", "arithmetic_intensity": "FLOP/B",
             "class": "", "near_ridge": "", "dtype": "", "device": ""}
    summary = {"ceiling_flops": peak, "case_figures": {"units": units, "statistic": "median", "rows": rows}}
    figures = [Figure(name="gemm.ceiling", value=peak, unit="FLOP/s", method="median of rounds",
                      scope={"dtype": "bf16"}, ci95=(0.98 * peak, 1.01 * peak), best=1.02 * peak),
               Figure(name="gemm.median_efficiency.compute-bound", value=0.5, unit="1", method="median",
                      scope={"dtype": "bf16", "subset": "compute-bound", "cases": 3}),
               Figure(name="gemm.speedup.tuned", value=1.1 * speed, unit="1", method="median speedup",
                      scope={"bucket": "small"}),
               Figure(name="gemm.speedup.tuned", value=1.2 * speed, unit="1", method="median speedup",
                      scope={"bucket": "all"}),
               Figure(name="gemm.best_fraction_of_ceiling", value=None, unit="1", method="best over P",
                      note="no ceiling")]
    return cases, summary, figures


def _simple(speed: float) -> dict[str, tuple[list[CaseResult], list[Figure]]]:
    membw = [CaseResult(suite="membw", key=f"copy/{size}", params={"op": "copy", "bytes": size},
                        samples=_samples(2 * size / 1e11 / speed), check={"passed": True},
                        metrics={"median_s": 2 * size / 1e11 / speed, "gbps": 100 * speed,
                                 "bytes_convention": "bytes read + written (STREAM)"})
             for size in (1 << 20, 1 << 22, 1 << 24)]
    latency = [CaseResult(suite="latency", key=f"size/{size}", params={"bytes": size}, check={"passed": True},
                          samples={"short": Samples(values_s=(1e-6, 1.1e-6), method="host-clock")},
                          metrics={"ns_per_load": (5.0 if size < 65536 else 80.0) / speed})
               for size in (16384, 1 << 20)]
    decode = [CaseResult(suite="decode", key="llama/b8", params={"batch": 8}, samples=_samples(0.02 / speed),
                         check={"passed": True}, metrics={"tokens_per_s": 400.0 * speed, "median_s": 0.02 / speed})]
    kernels = [CaseResult(suite="kernels", key=f"rmsnorm/{n}", params={"n": n}, samples=_samples(n * 1e-9 / speed),
                          check={"passed": True},
                          metrics={"median_s": n * 1e-9 / speed, "flop_per_s": 4e9 * speed, "bytes_per_s": 8e9 * speed,
                                   "bytes_convention": "bytes read + written (STREAM)", "strategy": "device-events"})
               for n in (1024, 4096, 16384, 65536, 262144)]
    collectives = [CaseResult(suite="collectives", key=f"all_reduce/{size}", params={"op": "all_reduce", "bytes": size},
                              samples=_samples(size / 1e10 / speed), check={"passed": True},
                              metrics={"median_s": size / 1e10 / speed, "bytes_per_s": 1e10 * speed,
                                       "bytes_convention": "nccl-tests bus bandwidth"})
                   for size in (1024, 8192)]
    bw = Figure(name="membw.ceiling", value=1e11 * speed, unit="B/s", method="copy, STREAM", scope={"op": "copy"})
    chase = Figure(name="latency.L1", value=5e-9 / speed, unit="s", method="slope", scope={"level": "L1"})
    return {"membw": (membw, [bw]), "latency": (latency, [chase]), "decode": (decode, []),
            "kernels": (kernels, []), "collectives": (collectives, [])}


def _outcome(name: str, cases: list[CaseResult], summary: dict[str, Any], figures: list[Figure]) -> dict[str, Any]:
    return {"suite": name, "ok": True, "cases": len(cases), "failed": 0, "errors": 0, "summary": summary,
            "figures": [f.to_dict() for f in figures], "summary_error": None}


def write_v3_store(path: Path) -> tuple[str, str]:
    """Write the two runs into a new file at ``path`` in schema 3; their ids ``(A, B)``."""
    conn = sqlite3.connect(path)
    for version in (0, 1, 2):
        for statement in MIGRATIONS[version]:
            conn.execute(statement)
    for run_id, speed, day in ((RUN_A, 1.0, "01"), (RUN_B, 2.0, "02")):
        gemm_cases, gemm_summary, gemm_figures = _gemm(speed)
        suites = {"gemm": _outcome("gemm", gemm_cases, gemm_summary, gemm_figures)}
        cases = list(gemm_cases)
        for name, (more, figures) in _simple(speed).items():
            suites[name] = _outcome(name, more, {"rows": len(more)}, figures)
            cases += more
        config = {"device": "cuda:0", "suites": list(suites), "quick": False, "options": {}}
        created = f"2026-01-{day}T00:00:00.000000+00:00"
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, 'complete', ?, ?, ?)",
                     (run_id, created, created, dump_json(config), dump_json(PROVENANCE),
                      dump_json({"ok": True, "suites": suites})))
        for case in cases:
            conn.execute(INSERT_CASE, case_row(run_id, case, created))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    return RUN_A, RUN_B
