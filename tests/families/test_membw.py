"""The bandwidth suite: sizes, cases, a real small CPU run, the summary, and the command."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from parity.families.membw.suite import WARM_MAX_BYTES, MembwSuite, transfer_sizes
from parity.families.membw.options import MembwOptions
from parity.families.membw.summary import summarize_membw
from parity.harness.suite import CaseSpec
from parity.cli.main import cli
from parity.report.views import view_for
from parity.model.errors import ParityError
from parity.model.result import CaseResult

pytestmark = pytest.mark.torch


def _summary(rows: list[CaseResult]) -> dict:
    """The stored form of the suite summary (SI units)."""
    return summarize_membw(rows).to_dict()


def test_sizes_are_log_spaced_and_bounded() -> None:
    assert transfer_sizes(min_bytes=1024, max_bytes=8192, per_octave=1) == [1024, 2048, 4096, 8192]
    two = transfer_sizes(min_bytes=1024, max_bytes=4096, per_octave=2)
    assert two == [1024, 1536, 2048, 2816, 4096]  # 1024·√2 = 1448 -> 1536 (multiples of 256 B)
    with pytest.raises(ParityError):
        transfer_sizes(min_bytes=4096, max_bytes=1024, per_octave=1)


def test_cpu_cases_are_device_ops_only_and_capped_in_quick_mode() -> None:
    from parity.device import get_device

    cpu = get_device("cpu")
    cases = MembwSuite().cases(device=cpu, quick=True, options=MembwOptions())
    assert {c.params["op"] for c in cases} == {"copy", "read", "write", "triad"}
    ceiling, sweep = cases[0], cases[1:]
    assert ceiling.key == "ceiling/copy" and ceiling.params["kind"] == "ceiling"
    assert ceiling.params["target_bytes"] >= 64 * 2**20  # a dedicated copy, whatever the range
    assert max(c.params["bytes"] for c in sweep) <= 64 * 2**20
    assert len({c.key for c in cases}) == len(cases)
    tiny = MembwSuite().cases(device=cpu, quick=True, options=MembwOptions(max_bytes=0, ops=("copy",)))
    assert [c.key for c in tiny] == ["ceiling/copy", "copy/1024", "copy/1024/warm"]
    assert [(c.params.get("regime"), c.params["flush"]) for c in tiny[1:]] == [("cold", True), ("warm", False)]
    warm = [c for c in sweep if c.key.endswith("/warm")]
    assert warm and max(c.params["bytes"] for c in warm) <= WARM_MAX_BYTES
    unflushed = MembwSuite().cases(device=cpu, quick=True, options=MembwOptions(max_bytes=0, ops=("copy",), flush=False))
    assert [c.key for c in unflushed] == ["ceiling/copy", "copy/1024"] and unflushed[1].params["regime"] == "warm"
    with pytest.raises(ParityError, match="needs an accelerator"):
        MembwSuite().cases(device=cpu, quick=True, options=MembwOptions(ops=("h2d-pinned",)))


@pytest.mark.parametrize("op", ["copy", "read", "write", "triad"])
def test_real_cpu_case_is_checked_and_rated(op: str) -> None:
    from parity.device import get_device

    cpu = get_device("cpu")
    case = CaseSpec(suite="membw", key=f"{op}/65536", params={
        "op": op, "bytes": 65536, "dtype": "float32", "flush": False, "quick": True, "device_name": "cpu"})
    result = MembwSuite().measure(case, device=cpu, options=MembwOptions(budget_s=0.01))
    assert result.ok, (result.error, result.check)
    factor = {"copy": 2, "read": 1, "write": 1, "triad": 3}[op]
    assert result.metrics["bytes_moved"] == factor * 65536
    assert result.metrics["gbps"] == pytest.approx(factor * 65536 / result.metrics["median_s"] / 1e9)
    assert result.metrics["threads"] >= 1
    assert len(result.samples["main"]) >= 5


def _row(op: str, size: int, seconds: float) -> CaseResult:
    factor = {"copy": 2, "triad": 3}[op]
    return CaseResult(suite="membw", key=f"{op}/{size}", params={"op": op, "bytes": size, "device_name": "x"},
                      metrics={"operand_bytes": size, "bytes_moved": factor * size, "median_s": seconds,
                               "iqr_s": 0.0, "gbps": factor * size / seconds / 1e9,
                               "operand_gbps": size / seconds / 1e9, "threads": 2},
                      check={"passed": True})


def test_summary_fits_each_curve_and_rates_against_the_largest_copy() -> None:
    # copy: a = 10 us, b = 20 GB/s; triad: a = 10 us, b = 30 GB/s.
    sizes = [2**k for k in range(10, 27, 2)]
    rows = [_row("copy", s, 10e-6 + 2 * s / 20e9) for s in sizes] + [_row("triad", s, 10e-6 + 3 * s / 30e9) for s in sizes]
    summary = _summary(rows)
    copy, triad = summary["curves"]
    assert copy["op"] == "copy" and triad["op"] == "triad"
    assert copy["fixed_cost_s"] == pytest.approx(10e-6) and copy["asymptotic_bps"] == pytest.approx(20e9)
    assert triad["n_half_bytes"] == pytest.approx(10e-6 * 30e9)
    largest = copy["points"][-1]
    assert summary["ceiling"]["bps"] == pytest.approx(largest["bandwidth_bps"])
    assert largest["utilization_ceiling"] == pytest.approx(1.0)
    assert triad["points"][-1]["utilization_ceiling"] == pytest.approx(triad["points"][-1]["bandwidth_bps"] / largest["bandwidth_bps"])
    assert summary["datasheet"]["bps"] is None and "no datasheet entry" in summary["datasheet"]["note"]


def _ceiling_row(seconds: float, size: int = 2**28) -> CaseResult:
    return CaseResult(suite="membw", key="ceiling/copy",
                      params={"kind": "ceiling", "op": "copy", "bytes": size, "device_name": "x", "llc_bytes": 2**20},
                      metrics={"operand_bytes": size, "bytes_moved": 2 * size, "median_s": seconds,
                               "gbps": 2 * size / seconds / 1e9}, check={"passed": True})


def test_ceiling_is_the_dedicated_copy_whatever_the_range() -> None:
    # --max-size 0: one 1 KiB point (0.036 GB/s) and the dedicated 256 MiB copy at 20 GB/s.
    rows = [_ceiling_row(2 * 2**28 / 20e9), _row("copy", 1024, 2 * 1024 / 0.036e9)]
    summary = _summary(rows)
    assert summary["ceiling"]["bps"] == pytest.approx(20e9)
    assert summary["ceiling"]["method"] == "dedicated device-to-device copy"
    assert [p["operand_bytes"] for p in summary["curves"][0]["points"]] == [1024]  # not in the curve
    assert summary["findings"] == []


def test_points_over_the_ceiling_are_a_finding() -> None:
    # triad at 16 MiB: 3 * 16 MiB / 1.446 ms = 34.8 GB/s, 174% of a 20 GB/s ceiling.
    size = 16 * 2**20
    rows = [_ceiling_row(2 * 2**28 / 20e9), _row("triad", size, 3 * size / 34.8e9), _row("triad", 2**28, 3 * 2**28 / 15e9)]
    summary = _summary(rows)
    (finding,) = summary["findings"]
    assert finding["code"] == "over-ceiling" and finding["severity"] == "warning"
    assert finding["message"].startswith("1 point(s) beyond the last-level cache exceed the measured ceiling "
                                         "(triad 16 MiB at 174%): memory beat the memory ceiling")  # LLC 1 MiB
    # a point in the cache beside it is counted; alone, cache points are a note, not a warning
    cached = [_row("copy", 2**19, 2 * 2**19 / 40e9)]
    (both,) = _summary(rows + cached)["findings"]
    assert both["severity"] == "warning" and both["message"].endswith("; 1 more fit in the last-level cache and measure it")
    (alone,) = _summary([rows[0], *cached])["findings"]
    assert alone["severity"] == "info" and "copy 512 KiB at 200%" in alone["message"]
    assert "measures the cache, not memory" in alone["message"]
    from rich.console import Console

    from parity.families.membw.views import render_membw

    console = Console(width=200, record=True)
    console.print(render_membw(summary))
    text = console.export_text()
    assert "174.0% (over)" in text and "over-ceiling" in text


def test_membw_command_writes_points_and_fits(tmp_path: Path, db_path: Path) -> None:
    out = tmp_path / "membw.json"
    result = CliRunner().invoke(cli, ["membw", "--quick", "--max-bytes", "16KiB", "--ops", "copy,triad",
                                      "--budget-s", "0.01", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = orjson.loads(out.read_bytes())
    assert data["figures"] and f"run {data['run_id']}" in result.output
    data = {**data["summary"], **data}  # the family JSON nests the suite's summary
    assert data["schema_version"] >= 1 and data["kind"] == "membw"
    assert [c["op"] for c in data["curves"]] == ["copy", "copy", "triad", "triad"]
    for curve in data["curves"]:
        assert {"fixed_cost_s", "asymptotic_bps", "n_half_bytes"} <= set(curve)
        assert [p["operand_bytes"] for p in curve["points"]] == [1024, 2048, 4096, 8192, 16384]
    assert [(c["op"], c["regime"]) for c in data["curves"]] == [("copy", "cold"), ("copy", "warm"),
                                                                ("triad", "cold"), ("triad", "warm")]
    if view_for("membw") is not None:  # the family's own text once it registers its view
        assert "fit t = a + V/b" in result.output and "stream" in result.output
    assert data["ceiling"]["method"] == "dedicated device-to-device copy"
    assert data["ceiling"]["operand_bytes"] >= 64 * 2**20  # not the 16 KiB top of the sweep
    assert db_path.exists()


def test_datasheet_peak_comes_from_the_spec_table() -> None:
    rows = [_row("copy", s, 1e-6 + 2 * s / 4e12) for s in (2**20, 2**24, 2**28)]
    rows = [CaseResult(**{**r.__dict__, "params": {**r.params, "device_name": "NVIDIA H200"}}) for r in rows]
    summary = _summary(rows)
    sheet = summary["datasheet"]
    assert sheet["bps"] == pytest.approx(4800e9) and sheet["source"]
    point = summary["curves"][0]["points"][-1]
    assert point["utilization_datasheet"] == pytest.approx(point["bandwidth_bps"] / 4800e9)


@pytest.mark.cuda
@pytest.mark.parametrize("op", ["copy", "h2d-pinned", "h2d-pageable", "d2h-pinned", "d2h-pageable"])
def test_gpu_transfers_are_checked(op: str) -> None:
    from parity.device import get_device

    gpu = get_device("cuda")
    case = CaseSpec(suite="membw", key=f"{op}/1048576", params={
        "op": op, "bytes": 2**20, "dtype": "float32", "flush": True, "quick": True, "device_name": "gpu"})
    result = MembwSuite().measure(case, device=gpu, options=MembwOptions(budget_s=0.02))
    assert result.ok, (result.error, result.check)
    assert result.samples["main"].method == "device-events"


def test_warm_and_cold_points_get_their_own_fits_and_the_headline_is_warm() -> None:
    # cold: a = 60 us (the flush's refill), b = 10 GB/s; warm: a = 1 us, b = 40 GB/s.
    sizes = [2**k for k in range(10, 21)]
    cold = [_row("copy", s, 60e-6 + 2 * s / 10e9) for s in sizes]
    warm = [CaseResult(**{**r.__dict__, "key": r.key + "/warm", "params": {**r.params, "regime": "warm"}})
            for r in (_row("copy", s, 1e-6 + 2 * s / 40e9) for s in sizes)]
    summary = _summary([_ceiling_row(2 * 2**28 / 20e9)] + cold + warm)
    first, second = summary["curves"]
    assert (first["regime"], second["regime"]) == ("cold", "warm") and "no cache flush" in second["label"]
    assert first["fixed_cost_s"] == pytest.approx(60e-6) and second["fixed_cost_s"] == pytest.approx(1e-6)
    head = summary["headline"]
    assert head["copy_warm_fixed_cost_s"] == pytest.approx(1e-6)
    assert head["copy_warm_n_half_bytes"] == pytest.approx(1e-6 * 40e9)
    assert head["copy_cold_fixed_cost_s"] == pytest.approx(60e-6)
    assert head["copy_asymptotic_bps"] == pytest.approx(10e9)  # the full-range (cold) curve
    assert list(head)[:2] == ["ceiling_bps", "copy_warm_fixed_cost_s"]


def _again(row: CaseResult) -> CaseResult:
    return CaseResult(**{**row.__dict__, "key": row.key + "/again", "params": {**row.params, "again_of": row.key}})


def test_off_trend_point_is_measured_again_and_flagged_only_if_it_stays() -> None:
    # triad at 512 KiB took 8.0 ms (0.2 GB/s) between 6.8 and 20.8 GB/s neighbours.
    sizes = [256 * 1024, 512 * 1024, 1024 * 1024]
    rates = [6.8e9, 0.2e9, 20.8e9]
    rows = [_row("triad", s, 3 * s / r) for s, r in zip(sizes, rates)]
    suite = MembwSuite()
    (again,) = suite.recheck(rows, options=MembwOptions())
    assert again.key == "triad/524288/again" and again.params["again_of"] == "triad/524288"
    # Measured again on trend (12 GB/s): the second measurement replaces the first, no finding.
    fixed = _summary(rows + [_again(_row("triad", sizes[1], 3 * sizes[1] / 12e9))])
    assert [p["bandwidth_bps"] for p in fixed["curves"][0]["points"]] == pytest.approx([6.8e9, 12.0e9, 20.8e9])
    assert fixed["findings"] == []
    # Still off trend (0.25 GB/s): the first stays, and the finding gives both figures.
    stays = _summary(rows + [_again(_row("triad", sizes[1], 3 * sizes[1] / 0.25e9))])
    assert [p["bandwidth_bps"] for p in stays["curves"][0]["points"]] == pytest.approx([6.8e9, 0.2e9, 20.8e9])
    (finding,) = stays["findings"]
    assert finding["code"] == "off-trend" and "triad/524288 0.2 GB/s then 0.25 GB/s" in finding["message"]
    assert suite.recheck(rows + [_again(rows[1])], options=MembwOptions())[0].key == "triad/524288/again"


def test_the_ceiling_is_never_below_a_copy_that_streamed_from_memory() -> None:
    # The dedicated 256 MiB copy read 20 GB/s; the sweep's cold copy of 4 MiB (4x this 1 MiB LLC)
    # read 25 GB/s: B is 25 GB/s, said as a note. A 1.5 MiB copy at 40 GB/s (under 2x the LLC,
    # partly cached) raises nothing and stays over the ceiling.
    def llc(row: CaseResult) -> CaseResult:
        row.params["llc_bytes"] = 2**20
        return row

    streamed = llc(_row("copy", 4 * 2**20, 2 * 4 * 2**20 / 25e9))
    partly_cached = llc(_row("copy", 3 * 2**19, 2 * 3 * 2**19 / 40e9))
    summary = _summary([_ceiling_row(2 * 2**28 / 20e9), streamed, partly_cached])
    assert summary["ceiling"]["bps"] == pytest.approx(25e9)
    assert summary["ceiling"]["raised_from_bps"] == pytest.approx(20e9)
    assert summary["ceiling"]["raised_at_bytes"] == 4 * 2**20 and "raised to the sweep's cold copy of 4 MiB" in \
        summary["ceiling"]["method"]
    assert summary["ceiling"]["operand_bytes"] == 2**28  # the dedicated copy's size: the condition asked
    raised, over = summary["findings"]
    assert raised["code"] == "ceiling-raised" and raised["severity"] == "info"
    assert raised["message"].startswith("B raised from 20 GB/s to 25 GB/s: the sweep's cold copy of 4 MiB")
    assert over["code"] == "over-ceiling" and "copy 1.5 MiB at 160%" in over["message"]
    slower = _summary([_ceiling_row(2 * 2**28 / 30e9), llc(_row("copy", 4 * 2**20, 2 * 4 * 2**20 / 25e9))])
    assert slower["ceiling"]["bps"] == pytest.approx(30e9) and "raised_from_bps" not in slower["ceiling"]
