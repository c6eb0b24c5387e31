"""The memory tables: units formatted at the edge, fits and their absence shown plainly."""

from __future__ import annotations

import io

from rich.console import Console

from parity.families.membw.summary import summarize_membw
from parity.model.result import CaseResult
from parity.families.latency.views import render_latency
from parity.families.membw.views import render_membw
from parity.report.units import format_bytes, format_seconds


def _text(renderable) -> str:
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_units_are_formatted_for_humans() -> None:
    assert format_bytes(1024) == "1 KiB"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(4 * 2**30) == "4 GiB"
    assert format_seconds(3.2e-6) == "3.2 us"
    assert format_seconds(0.0151) == "15.1 ms"
    assert format_seconds(12.92) == "12.9 s" and format_seconds(12920.2) == "12,920 s"  # never 1.29e+04


def test_a_single_size_curve_says_why_it_has_no_fit() -> None:
    row = CaseResult(suite="membw", key="copy/1024", params={"op": "copy", "bytes": 1024, "flush": True},
                     metrics={"operand_bytes": 1024, "bytes_moved": 2048, "median_s": 1e-6, "iqr_s": 1e-8,
                              "gbps": 2.048, "operand_gbps": 1.024, "threads": 2}, check={"passed": True})
    summary = summarize_membw([row]).to_dict()
    assert summary["curves"][0]["asymptotic_bps"] is None
    text = _text(render_membw(summary))
    assert "no fit: need at least 2 distinct sizes" in text
    assert "torch intra-op threads: 2" in text and "cache flushed before every call" in text
    assert "warm points are repeated without a flush" in text


def test_latency_tables_name_levels_and_knees() -> None:
    summary = {
        "size_curves": [{"page": "4KiB", "stride_bytes": 64,
                         "points": [{"working_set_bytes": 4096, "latency_ns": 1.2, "huge_page_share": 0.0}],
                         "plateaus": [{"level": "L1", "latency_ns": 1.2, "start_bytes": 4096, "size_bytes": 32768,
                                       "reported_bytes": 32768, "size_ratio": 1.0}]}],
        "blocks_curves": [{"page": "4KiB", "region_bytes": 16384, "block_kind": "thread", "compute_units": 2,
                           "compute_unit_kind": "logical CPUs", "points": [{"blocks": 1, "latency_ns": 1.2},
                                                                           {"blocks": 2, "latency_ns": 1.2},
                                                                           {"blocks": 3, "latency_ns": 1.8}],
                           "knees": [{"blocks": 2, "slope_before_ns_per_block": 0.0, "slope_after_ns_per_block": 0.6}]}],
        "method": "pointer chase", "estimator": "slope between the chains' minima",
    }
    text = _text(render_latency(summary))
    assert "plateaus, 4KiB pages" in text and "1x" in text
    assert "knee after 2 blocks: slope 0 -> 0.6 ns per added block" in text
