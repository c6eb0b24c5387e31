"""The GEMM family's registered view: its section, its terminal tables and its charts."""

from __future__ import annotations

from rich.console import Console

from parity.model.result import RunRecord
from parity.report.views import RunData, View, view_for

SUMMARY = {"ceiling_flops": 100.0, "bandwidth_bps": 10.0, "ridge_flop_per_byte": 10.0, "dtype": "bf16",
           "device_name": "dev", "measured": 1, "classes": {"compute-bound": 1},
           "backends": {"matmul": {"measured": 1, "best_fraction_of_ceiling": 0.9,
                                   "efficiency_compute_bound": {"median": 0.9, "n": 1}, "wins": 1},
                        "linear": {"measured": 1, "best_fraction_of_ceiling": 0.8,
                                   "efficiency_compute_bound": None, "wins": 0}},
           "rows": [{"m": 4, "n": 5, "k": 6, "name": "b", "arithmetic_intensity": 40.0, "class": "compute-bound",
                     "best_backend": "matmul",
                     "backends": {"matmul": {"achieved_flops": 90.0, "attainable_flops": 100.0, "efficiency": 0.9,
                                             "median_s": 1.0, "iqr_s": 0.01, "fraction_of_ceiling": 0.9},
                                  "linear": {"achieved_flops": 80.0, "efficiency": 0.8}}}]}


def test_the_gemm_family_registers_its_view() -> None:
    view = view_for("gemm")
    assert isinstance(view, View)
    assert view.section == ("gemm", "GEMM: roofline and efficiency")


def test_terminal_reads_each_backends_efficiency_from_its_distribution() -> None:
    view = view_for("gemm")
    console = Console(width=200, record=True)
    console.print(view.terminal(SUMMARY))
    text = console.export_text()
    # The backend table: shapes, best of P, median efficiency (compute-bound), best on, failed.
    matmul = next(line for line in text.splitlines() if line.startswith("│ matmul"))
    linear = next(line for line in text.splitlines() if line.startswith("│ linear"))
    assert [c.strip() for c in matmul.split("│")[1:-1]] == ["matmul", "1", "90.0%", "90.0%", "1", "0"]
    assert [c.strip() for c in linear.split("│")[1:-1]] == ["linear", "1", "80.0%", "-", "0", "0"]


def test_charts_keep_their_ids_and_draw_every_run() -> None:
    view = view_for("gemm")
    runs = [RunData(label=label, run=RunRecord(run_id=label, created_at=""), summary=SUMMARY) for label in ("a", "b")]
    roofline, histogram = view.charts(runs)
    assert (roofline.id, histogram.id) == ("gemm-roofline", "gemm-efficiency")
    assert {s["series"] for s in roofline.spec["datasets"]["shapes"]} == {"a", "b"}
    assert view.charts([]) == []
