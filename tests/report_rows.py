"""Synthetic stored rows for the HTML report's tests: families being built elsewhere (decode,
serving), the multi-rank collectives and latency summaries, a family the report has no code for,
and a comparison dict as ``compare_runs(...).to_dict()`` returns it."""

from __future__ import annotations

from typing import Any

from parity.model.result import CaseResult, RunRecord

KERNEL_NAME = "<script>alert(1)</script>"


def _figure(name: str, value: float | None, unit: str, **scope: Any) -> dict[str, Any]:
    return {"name": name, "value": value, "unit": unit, "method": f"method of {name}", "scope": scope,
            "ci95": None, "best": None, "note": ""}


def synthetic_run() -> tuple[RunRecord, list[CaseResult]]:
    """A run with decode, serving, collectives, latency and an unknown family ``newfamily``."""
    decode = [CaseResult(suite="decode", key=f"cfg-a/b{b}", params={"batch": b, "config": "tp1"},
                         metrics={"tpot_s": 0.010 + 0.002 * i, "tokens_per_s_per_card": b / (0.010 + 0.002 * i)},
                         check={"passed": True}) for i, b in enumerate((1, 4, 16, 64))]
    serving = [CaseResult(suite="serving", key=f"c{c}", params={"concurrency": c, "config": "vllm"},
                          metrics={"median_tpot_s": 0.02 + 0.005 * i, "output_throughput_per_card": 40.0 * c},
                          check={"passed": True}) for i, c in enumerate((1, 8, 32))]
    collectives = {"rows": [{"op": op, "dtype": "fp32", "placement": "out-of-place", "size_bytes": s,
                             "time_s": 1e-5 + s / 1e10, "algbw_gbps": s / (1e-5 + s / 1e10) / 1e9,
                             "busbw_gbps": (1.5 if op == "all_reduce" else 0.75) * s / (1e-5 + s / 1e10) / 1e9,
                             "wrong": 0}
                            for op in ("all_reduce", "all_gather") for s in (1024, 65536, 4194304)]}
    latency = {"size_curves": [{"page": "base", "stride_bytes": 64, "points": [
                   {"working_set_bytes": 4096 * 2**i, "latency_ns": ns} for i, ns in enumerate((1.2, 1.2, 4.0, 4.1, 12.0, 80.0))],
                "plateaus": [{"level": "L1", "latency_ns": 1.2, "start_bytes": 4096, "size_bytes": 8192},
                             {"level": "L2", "latency_ns": 4.05, "start_bytes": 16384, "size_bytes": 32768}]}],
               "blocks_curves": [{"page": "base", "block_kind": "thread", "region_bytes": 16384,
                                  "points": [{"blocks": b, "latency_ns": ns} for b, ns in ((1, 1.1), (2, 1.1), (3, 1.8), (4, 2.4))],
                                  "knees": [{"blocks": 2, "slope_before_ns_per_block": 0.0,
                                             "slope_after_ns_per_block": 0.65}]}]}
    suites = {
        "decode": {"summary": {}, "figures": [_figure("decode.throughput_at_tpot", 2100.0, "tok/s",
                                                      tpot_target_s=0.015, statistic="median")]},
        "serving": {"summary": {}, "figures": [_figure("serving.throughput_at_tpot", None, "tok/s",
                                                       tpot_target_s=0.005)]},
        "collectives": {"summary": collectives, "figures": [_figure("collectives.avg_busbw", 3.2e9, "B/s")]},
        "latency": {"summary": latency, "figures": [_figure("latency.L1", 1.2e-9, "s")]},
        "newfamily": {"summary": {"anything": 1}, "figures": [
            _figure("newfamily.widgets_per_s", 12345.678, "count", subset=KERNEL_NAME),
            # wide: long unspaced names and long text in every text column (a page must still fit)
            {**_figure("newfamily.widgets_per_s.compute_bound.intersection_of_every_run_compared", 2.5, "count",
                       **{f"condition_{i}": f"a_value_without_spaces_{i}_" * 4 for i in range(6)}),
             "method": "widgets counted per second over every configuration_of_the_sweep_and_its_repeats " * 3,
             "note": "raised_after_the_sweep_because_the_search_budget_was_short_of_the_best_shape " * 2}]},
    }
    run = RunRecord(run_id="20261201-000000-test", created_at="2026-12-01T00:00:00+00:00",
                    config={"device": "fake", "suites": list(suites)},
                    provenance={"device": {"properties": {"name": "Fake <b>chip</b>"}}, "host": {"cpu_model": "x"}},
                    status="complete", summary={"suites": suites})
    return run, decode + serving


def comparison_dict(*, forced: bool = True) -> dict[str, Any]:
    """A two-run comparison: two GEMM cases (one marked as forced), an audit, a summary, claims."""
    return {
        "kind": "runs",
        "runs": [{"id": "run-a", "label": "A100 · run-a", "device": "A100"},
                 {"id": "run-b", "label": "H100 · run-b", "device": "H100"}],
        "cases": [
            {"suite": "gemm", "key": "bf16/matmul/4096x4096x4096", "params": {}, "values": [2.0e14, 5.0e14],
             "unit": "FLOP/s", "ratio": 2.5, "ratio_ci95": [2.4, 2.6], "marked": False},
            {"suite": "membw", "key": "copy/1048576", "params": {}, "values": [1.5e12, 3.0e12],
             "unit": "B/s", "ratio": 2.0, "ratio_ci95": [1.9, 2.1], "marked": forced},
        ],
        "summary": [{"name": "gemm.median_efficiency.compute-bound", "value": 0.468, "unit": "1",
                     "method": "median over the intersection", "scope": {"cases": 1}, "ci95": [0.45, 0.48],
                     "best": None, "note": ""}],
        "audit": [{"condition": "torch version", "values": ["2.3.0", "2.5.1"], "matters": True, "refused": False},
                  {"condition": "byte convention", "values": ["stream", KERNEL_NAME], "matters": True,
                   "refused": True}],
        "claims": ["on these 1 compute-bound shapes, H100 · run-b is 2.5x A100 · run-a"],
        "forced": forced,
    }
