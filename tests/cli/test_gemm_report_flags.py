"""Small things a GEMM reader trips on: durations, column meanings, dispersion flags, emulation."""

from __future__ import annotations

from rich.console import Console

from parity.families.gemm.dtypes import resolve_dtype
from parity.device.fake import FakeDevice
from parity.families.gemm.views import shape_table
from parity.report.cases import duration


def test_durations_never_print_an_exponent() -> None:
    assert duration(999.6e-6) == "1 ms" and duration(1.5e-3) == "1.5 ms" and duration(900e-6) == "900 us"


def _text(renderable) -> str:
    console = Console(width=300, record=True)
    console.print(renderable)
    return console.export_text()


def test_shape_table_explains_its_columns_and_flags_a_wide_iqr() -> None:
    row = {"m": 64, "n": 64, "k": 64, "name": "s", "arithmetic_intensity": 21.3, "class": "memory-bound",
           "near_ridge": True, "best_backend": "matmul",
           "backends": {"matmul": {"achieved_flops": 1e9, "median_s": 1e-3, "iqr_s": 0.54e-3, "ok": True,
                                   "fraction_of_ceiling": 0.1, "efficiency": 0.2, "relative_error": 1e-3}}}
    text = _text(shape_table({"rows": [row], "backends": {"matmul": {}}, "ceiling_flops": 1e10}))
    assert "mem~" in text and "IQR" in text.split("mem~")[1].splitlines()[0]
    assert "~ within 25% of the ridge" in text and "of P: median rate / P" in text and "eff.: median rate" in text


def test_fp8_on_a_cpu_is_emulated_and_fp32_is_not() -> None:
    from parity.families.gemm.dtypes import emulation_note
    from parity.device import get_device

    cpu = get_device("cpu")
    assert "emulated" in emulation_note(resolve_dtype("fp8"), cpu)
    assert emulation_note(resolve_dtype("fp32"), cpu) is None
    assert emulation_note(resolve_dtype("fp8"), FakeDevice()) is None  # accelerators: not judged here


def test_headline_prints_bracketed_text_as_text() -> None:
    """"[too few for a CI]" and the own shape's "[95% CI ...]" are shown, not taken for markup."""
    from parity.families.gemm.views import headline_table

    summary = {"dtype": "fp32", "device_name": "cpu", "ceiling_flops": 1e11,
               "efficiency_compute_bound": {"median": 0.475, "n": 2, "p10": 0.34, "p90": 0.61, "ci95_low": None},
               "ceiling_own_shape": {"fraction": 0.932, "ci95": [0.915, 0.974], "own_flops": [1.0] * 6,
                                     "source": "sentinels through the sweep", "reproduced": False}}
    text = _text(headline_table(summary))
    assert "47.5% [too few for a CI], n=2" in text
    assert ("93.2% of P [95% CI 91.5%, 97.4%], median of 6 timings (sentinels through the sweep); "
            "100% is outside the CI") in text


def test_the_case_table_says_which_ceiling_figure_a_row_holds() -> None:
    from parity.model.result import CaseResult
    from parity.report.cases import case_table, rate_text

    assert rate_text({"rounds_flops": [1.7e11], "median_flops": 1.7e11}) == "170 GFLOP/s (P rounds)"
    assert rate_text({"ceiling_flops": 1.8e11, "ceiling_rounds": {}}) == "180 GFLOP/s (search)"
    assert rate_text({"achieved_flops": 2.5e12}) == "2.5 TFLOP/s"
    assert rate_text({"skipped": "no ceiling"}) == "-"
    shape = CaseResult(suite="gemm", key="fp32/64x64x64/matmul", params={}, metrics={"achieved_flops": 1e9})
    assert "(search):" not in _text(case_table([shape]))
    ceiling = CaseResult(suite="gemm", key="ceiling/fp32", params={}, metrics={"ceiling_flops": 1.8e11})
    text = _text(case_table([shape, ceiling]))
    assert "180 GFLOP/s (search)" in text and "(search): the ceiling search's confirmation median" in text


def test_a_reused_ceiling_is_not_called_a_search() -> None:
    from parity.report.cases import rate_text

    assert rate_text({"ceiling_flops": 1.8e11, "ceiling_from": "20261202-1"}) == "180 GFLOP/s (reused P)"
