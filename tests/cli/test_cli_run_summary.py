"""The run summary renderer: unit formatting, headlines, per-suite counts, the verdict."""

from __future__ import annotations

from rich.console import Console

from parity.model import CaseResult, Finding, RunRecord, Severity
from parity.report.run_summary import (
    failure_reason,
    format_value,
    headline,
    render_run_summary,
    suite_rows,
    verdict_text,
)


def test_format_value_by_unit_in_the_key() -> None:
    assert format_value("median_s", 0.0123) == "12.3 ms"
    assert format_value("median_s", 4.2e-7) == "420 ns"
    assert format_value("peak_flop_per_s", 9.89e14) == "989 TFLOP/s"
    assert format_value("copy_bytes_per_s", 4.8e12) == "4.8 TB/s"
    assert format_value("operand_bytes", 134217728) == "134.2 MB"
    assert format_value("ceiling_gbps", 2.632146) == "2.632 GB/s"
    assert format_value("latency_ns", 98.25) == "98.25 ns"
    assert format_value("best_fraction", 0.997) == "99.7%"
    assert format_value("threads", 2) == "2"
    assert format_value("dtype", "bf16") == "bf16"
    assert format_value("x", float("nan")) == "nan"


def test_headline_prefers_the_suites_choice_then_numeric_leaves() -> None:
    chosen = {"headline": {"best_fraction": 0.5, "peak_tflops": 312.0}, "device": "H200", "n": 3}
    assert headline(chosen) == "best_fraction 50.0%; peak_tflops 312 TFLOP/s"
    fallback = {
        "device": "x",
        "ceiling": {"gbps": 2.5, "op": "copy", "deep": {"n": 1}},
        "curves": [1, 2],
        "threads": 2,
        "flush": True,
    }
    assert headline(fallback) == "ceiling.gbps 2.5 GB/s; threads 2"


def _run(status: str = "complete", ok: bool = False) -> RunRecord:
    return RunRecord(
        run_id="20261129-230512-a3f9",
        created_at="2026-11-29T23:05:12+00:00",
        status=status,
        config={"device": "cuda:0", "suites": ["gemm", "membw"]},
        summary={
            "ok": ok,
            "suites": {
                "gemm": {"summary": {"headline": {"best_fraction": 0.9}}, "summary_error": None},
                "membw": {"summary": {}, "summary_error": "ValueError: no points"},
            },
        },
    )


CASES = [
    CaseResult(
        suite="gemm",
        key="a",
        check={"passed": True},
        findings=(Finding(code="high-variance", severity=Severity.WARNING, message="m"),),
    ),
    CaseResult(suite="gemm", key="b", error="out of memory"),
    CaseResult(suite="gemm", key="c", check={"passed": False, "max_rel_error": 0.5}),
    CaseResult(
        suite="membw",
        key="d",
        findings=(Finding(code="over-ceiling", severity=Severity.ERROR, message="120%"),),
    ),
]


def test_suite_rows_count_each_suite() -> None:
    gemm, membw = suite_rows(_run(), CASES)
    assert (gemm.cases, gemm.passed, gemm.failed, gemm.errors, gemm.warnings) == (3, 1, 2, 1, 1)
    assert gemm.headline == "best_fraction 90.0%" and not gemm.ok
    assert membw.headline == "summary failed: ValueError: no points" and not membw.ok


def test_failure_reasons() -> None:
    assert failure_reason(CASES[1]) == "out of memory"
    assert failure_reason(CASES[2]) == "check failed: {'max_rel_error': 0.5}"
    assert failure_reason(CASES[3]) == "over-ceiling: 120%"


def test_verdicts() -> None:
    clean = RunRecord(run_id="r1", created_at="t", status="complete", summary={"ok": True})
    assert verdict_text(clean, CASES[:1]).plain == "OK (1 cases, 0 not ok)"
    assert verdict_text(_run(ok=False), CASES).plain == (
        "FAILED (4 cases, 3 not ok, summary failed: membw)"
    )
    assert verdict_text(_run(status="running"), CASES).plain == (
        "INCOMPLETE (4 cases, 3 not ok, summary failed: membw); "
        "continue with parity run --resume 20261129-230512-a3f9"
    )


def test_rendered_summary_lists_failed_cases_and_warnings() -> None:
    console = Console(width=140, record=True)
    console.print(render_run_summary(_run(), CASES))
    text = console.export_text()
    assert "run 20261129-230512-a3f9 on cuda:0 (complete)" in text
    assert "gemm/b: out of memory" in text and "membw/d: over-ceiling: 120%" in text
    assert "warnings: high-variance x1" in text
    assert text.rstrip().endswith("FAILED (4 cases, 3 not ok, summary failed: membw)")


def test_headline_reads_the_suites_figures_in_human_units() -> None:
    from parity.model.figure import Figure
    from parity.report.run_summary import figure_headline

    figures = [
        Figure(name="gemm.ceiling", value=1.25e12, unit="FLOP/s", method="m").to_dict(),
        Figure(name="gemm.bandwidth_ceiling", value=None, unit="B/s", method="m", note="not measured").to_dict(),
        Figure(name="gemm.median_efficiency.compute-bound", value=0.415, unit="1", method="m").to_dict(),
        Figure(name="membw.copy.fixed_cost", value=2.5e-6, unit="s", method="m").to_dict(),
    ]
    assert figure_headline(figures, suite="gemm") == \
        "ceiling 1.25 TFLOP/s; median_efficiency.compute-bound 41.5%; membw.copy.fixed_cost 2.5 us"


def test_a_name_given_to_several_figures_says_which_each_is() -> None:
    from parity.model.figure import Figure
    from parity.report.run_summary import figure_headline, scope_tags

    def fig(name: str, value: float, unit: str, **scope: object) -> Figure:
        return Figure(name=name, value=value, unit=unit, method="m", scope=scope)

    overlap = [fig("overlap.exchange_slowdown", 1.07, "count", case="dispatch+gemm", world_size=1),
               fig("overlap.overlap_fraction", 0.25, "1", case="dispatch+gemm", world_size=1),
               fig("overlap.exchange_slowdown", 7.0, "count", case="dispatch+copy", world_size=1)]
    assert figure_headline([f.to_dict() for f in overlap], suite="overlap") == (
        "exchange_slowdown [dispatch+gemm] 1.07; overlap_fraction 25%; exchange_slowdown [dispatch+copy] 7")
    # no case, or cases that repeat: the scope values that differ among the figures of the name
    kernels = [fig("kernels.fp8_gemm.flop_per_s", 3.81e10, "FLOP/s", op="fp8_gemm", shape="128x256x512"),
               fig("kernels.fp8_gemm.flop_per_s", 8.57e8, "FLOP/s", op="fp8_gemm", shape="1x512x1024")]
    assert scope_tags(kernels) == ["128x256x512", "1x512x1024"]
    same_case = [fig("x.rate", 1.0, "B/s", case="c", dtype="fp8"), fig("x.rate", 2.0, "B/s", case="c", dtype="bf16")]
    assert scope_tags(same_case) == ["fp8", "bf16"]
    assert scope_tags([fig("x.rate", 1.0, "B/s", case="c")]) == [""]


def test_a_case_key_that_looks_like_console_markup_is_printed_as_written() -> None:
    from parity.report.cases import case_table

    case = CaseResult(suite="plugin[red]", key="ops/[bold]fused[/bold]/n=4", metrics={"median_s": 0.001},
                      check={"passed": True})
    console = Console(width=200, color_system=None, record=True)
    console.print(case_table([case]))
    text = console.export_text()
    assert "plugin[red]" in text and "ops/[bold]fused[/bold]/n=4" in text


def test_a_figure_tag_in_the_run_table_is_printed_as_written() -> None:
    """The run table's headline is plain text: a tag that starts with a letter,
    ``[dispatch+gemm]``, read as console markup, vanished from the terminal (a shape such as
    ``[128x256x512]`` survived), leaving two figures of one name told apart by nothing."""
    from parity.model.figure import Figure

    figures = [Figure(name="overlap.exchange_slowdown", value=v, unit="count", method="m", scope={"case": c}).to_dict()
               for c, v in (("dispatch+gemm", 1.22), ("dispatch+copy", 13.1))]
    run = RunRecord(run_id="20261207-031213-59f0", created_at="2026-12-07T03:12:13Z", status="complete",
                    config={"device": "cpu", "suites": ["overlap"]},
                    summary={"suites": {"overlap": {"suite": "overlap", "figures": figures}}})
    cases = [CaseResult(suite="overlap", key=k, metrics={}, check={"passed": True}) for k in ("dispatch+gemm", "dispatch+copy")]
    console = Console(width=200, color_system=None, record=True)
    console.print(render_run_summary(run, cases))
    text = console.export_text()
    assert "exchange_slowdown [dispatch+gemm] 1.22" in text and "exchange_slowdown [dispatch+copy] 13.1" in text
