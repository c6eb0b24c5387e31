"""The latency suite: working sets, block counts, a real small CPU run, the summary, the command."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from parity.compare.join import headline, headline_medians
from parity.families.latency.options import LatencyOptions
from parity.families.latency.suite import LatencySuite, block_counts, working_sets
from parity.families.latency.summary import summarize_latency
from parity.harness.suite import CaseSpec
from parity.cli.main import cli
from parity.report.views import view_for
from parity.model.result import CaseResult


def _summary(rows: list[CaseResult], **kwargs) -> dict:
    """The stored form of the suite summary (seconds)."""
    return summarize_latency(rows, **kwargs).to_dict()


def _native_unbuildable() -> bool:
    """True when the native chase is missing and no C compiler could have built it."""
    import importlib.util
    import shutil

    missing = importlib.util.find_spec("parity.families.latency.chase._chase") is None
    return missing and not any(shutil.which(cc) for cc in ("cc", "gcc", "clang"))


needs_native = pytest.mark.skipif(_native_unbuildable(), reason="no C compiler: the native chase is not built")

pytestmark = pytest.mark.torch
NS = 1e-9
KIB, MIB = 1024, 1024 * 1024


def test_working_sets_start_at_4kib_two_per_octave() -> None:
    sizes = working_sets(max_bytes=16 * KIB)
    assert sizes[0] == 4 * KIB and sizes[-1] == 16 * KIB and sizes == sorted(set(sizes))
    assert all(s % (4 * KIB) == 0 for s in sizes)


def test_block_counts_reach_twice_the_compute_units() -> None:
    assert block_counts(2, quick=True) == [1, 2, 3, 4]
    gpu = block_counts(132, quick=True)
    assert gpu[0] == 1 and gpu[-1] == 264 and len(gpu) <= 20
    assert block_counts(132, quick=False) == list(range(1, 265))


@needs_native
def test_real_cpu_cases_measure_both_curves() -> None:
    from parity.device import get_device

    cpu = get_device("cpu")
    suite = LatencySuite()
    common = {"device": "cpu", "stride_bytes": 64, "quick": True, "page": "base"}
    size = CaseSpec(suite="latency", key="size/base/16384",
                    params={**common, "curve": "size", "working_set_bytes": 16 * KIB, "blocks": 1})
    blocks = CaseSpec(suite="latency", key="blocks/base/2",
                      params={**common, "curve": "blocks", "working_set_bytes": 16 * KIB, "blocks": 2})
    options = LatencyOptions(target_s=0.0005, budget_s=0.01, min_samples=5)
    for case in (size, blocks):
        result = suite.measure(case, device=cpu, options=options)
        assert result.ok, (result.error, result.check)
        assert result.metrics["page_label"] == "4KiB"
        assert result.metrics["long_loads"] == 4 * result.metrics["short_loads"]
        # Behaviour, not speed (a shared 2-core machine can be slow at any moment): a positive
        # slope, and a check that covered the timed chases.
        assert result.metrics["ns_per_load_min"] > 0 and result.metrics["ns_per_load"] > 0, result.metrics
        assert "every chase ended" in result.check["method"]
        # the declared medians give back the slope, so compare can resample both chains
        medians = headline_medians(result, headline(result))
        assert medians is not None and medians.time() == pytest.approx(result.metrics["ns_per_load"], rel=1e-12)


def _row(curve: str, x: int, ns: float, page: str = "base") -> CaseResult:
    params = {"curve": curve, "page": page, "working_set_bytes": x if curve == "size" else 16 * KIB,
              "blocks": x if curve == "blocks" else 1, "caches": [["L1", 32 * KIB], ["L2", 512 * KIB], ["L3", 32 * MIB]],
              "memory_name": "DRAM", "device": "cpu", "stride_bytes": 64, "compute_units": 2}
    return CaseResult(suite="latency", key=f"{curve}/base/{x}", params=params,
                      metrics={"ns_per_load": ns * 1.5, "ns_per_load_min": ns,
                               "page_label": "4KiB" if page == "base" else "2MiB-THP"},
                      check={"passed": True})


def test_summary_names_plateaus_and_finds_the_core_count_knee() -> None:
    sizes = [2**k for k in range(12, 28)]
    lat = {s: 1.0 if s <= 32 * KIB else 4.0 if s <= 512 * KIB else 15.0 if s <= 32 * MIB else 120.0 for s in sizes}
    rows = [_row("size", s, lat[s]) for s in sizes] + [_row("blocks", n, v) for n, v in [(1, 1.0), (2, 1.0), (3, 1.5), (4, 2.0)]]
    summary = _summary(rows)
    assert [(p["level"], p["size_bytes"], p["latency_s"]) for p in summary["plateaus"]] == [
        ("L1", 32 * KIB, 1.0 * NS), ("L2", 512 * KIB, 4.0 * NS), ("L3", 32 * MIB, 15.0 * NS), ("DRAM", 2**27, 120.0 * NS)]
    assert [k["blocks"] for k in summary["blocks_curves"][0]["knees"]] == [2]
    assert summary["estimator"] == "slope between the chains' minima"
    medians = _summary(rows, estimator="median")
    assert medians["plateaus"][0]["latency_s"] == 1.5 * NS
    assert summary["findings"] == [] and summary["plateaus_page"] == "4KiB"


def test_summary_reads_cache_sizes_from_huge_pages_and_marks_page_walks() -> None:
    """A VM-like machine: the last-level plateau ends at 4 MiB of a reported 32 MiB even with
    huge pages, and base pages add a page-walk step from 64 MiB."""
    sizes = [2**k for k in range(12, 28)]
    huge = {s: 1.0 if s <= 32 * KIB else 4.0 if s <= 512 * KIB else 15.0 if s <= 4 * MIB else 120.0 for s in sizes}
    base = {s: huge[s] * (1.0 if s <= 32 * MIB else 1.6) for s in sizes}
    rows = [_row("size", s, base[s]) for s in sizes] + [_row("size", s, huge[s], page="thp") for s in sizes]
    summary = _summary(rows)
    assert summary["plateaus_page"] == "2MiB-THP"
    assert [(p["level"], p["size_bytes"]) for p in summary["plateaus"]] == [
        ("L1", 32 * KIB), ("L2", 512 * KIB), ("L3", 4 * MIB), ("DRAM", 2**27)]
    assert [f["code"] for f in summary["findings"]] == ["cache-size-mismatch"]
    assert "huge pages" in summary["findings"][0]["hint"]
    assert summary["findings"][0]["message"].startswith("the L3 plateau ends at 4 MiB (capacity ")  # sizes read
    assert "0.15x the 32 MiB the device reports" in summary["findings"][0]["message"]
    assert "hypervisor" not in summary["findings"][0]["hint"]
    for row in rows:
        row.params["hypervisor"] = True
    assert "under a hypervisor" in _summary(rows)["findings"][0]["hint"]
    base_curve = summary["size_curves"][0]
    assert [p["level"] for p in base_curve["plateaus"]] == ["L1", "L2", "L3", "DRAM", "DRAM+page-walks"]
    assert base_curve["page_walk_from_bytes"] == 64 * MIB
    assert summary["headline"]["L3_s"] == 15.0 * NS


def test_level_names_do_not_depend_on_row_order() -> None:
    """A resume reads the stored rows back in whatever order the store returns them: the
    summary, names included, must be the same."""
    import random

    sizes = [2**k for k in range(12, 28)]
    lat = {s: 1.0 if s <= 32 * KIB else 4.0 if s <= 512 * KIB else 15.0 if s <= 32 * MIB else 120.0 for s in sizes}
    rows = [_row("size", s, lat[s]) for s in sizes]
    shuffled = list(rows)
    random.Random(4).shuffle(shuffled)
    assert _summary(shuffled)["plateaus"] == _summary(rows)["plateaus"]


def test_headline_keeps_the_reported_levels_and_memory_only() -> None:
    """A 9 ns stretch from 1 to 4 MiB is L3-part1, which noise may make or unmake: the headline,
    which runs are compared by, leaves it out."""
    sizes = [2**k for k in range(12, 28)]
    lat = {s: 1.0 if s <= 32 * KIB else 4.0 if s <= 512 * KIB else 9.0 if s <= 4 * MIB else 15.0 if s <= 32 * MIB
           else 120.0 for s in sizes}
    summary = _summary([_row("size", s, lat[s]) for s in sizes])
    assert [p["level"] for p in summary["plateaus"]] == ["L1", "L2", "L3-part1", "L3", "DRAM"]
    assert list(summary["headline"]) == ["L1_s", "L2_s", "L3_s", "DRAM_s"]


def test_report_says_where_memory_is_read() -> None:
    from rich.console import Console

    from parity.families.latency.views import render_latency

    sizes = [2**k for k in range(12, 28)]  # to 128 MiB: memory read at 64 and 128 MiB
    lat = {s: 1.0 if s <= 32 * KIB else 4.0 if s <= 512 * KIB else 15.0 if s <= 32 * MIB else 120.0 for s in sizes}
    console = Console(width=200, record=True)
    console.print(render_latency(_summary([_row("size", s, lat[s]) for s in sizes])))
    assert "DRAM is the median of the 2 working sets where the sweep has left the last cache" in console.export_text()


def test_summary_says_when_a_reported_level_has_no_plateau() -> None:
    sizes = [2**k for k in range(12, 28)]  # to 128 MiB, 4x the reported L3
    lat = {s: 1.0 if s <= 32 * KIB else 4.0 if s <= 512 * KIB else 120.0 for s in sizes}
    summary = _summary([_row("size", s, lat[s]) for s in sizes])
    assert [f["code"] for f in summary["findings"]] == ["cache-level-not-found"]
    assert "L3" in summary["findings"][0]["message"] and "--pages thp" in summary["findings"][0]["hint"]


@needs_native
def test_latency_command_writes_plateaus_and_knees(tmp_path: Path, db_path: Path) -> None:
    out = tmp_path / "latency.json"
    result = CliRunner().invoke(cli, ["latency", "--quick", "--pages", "base", "--max-bytes", "64KiB", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = orjson.loads(out.read_bytes())
    assert data["figures"] and f"run {data['run_id']}" in result.output
    data = {**data["summary"], **data}  # the family JSON nests the suite's summary
    assert data["kind"] == "latency"
    for plateau in data["plateaus"]:
        assert {"level", "size_bytes", "latency_s", "page"} <= set(plateau)
    assert "knees" in data["blocks_curves"][0] and len(data["blocks_curves"][0]["points"]) >= 2
    assert [p["working_set_bytes"] for p in data["size_curves"][0]["points"]][0] == 4 * KIB
    if view_for("latency") is not None:  # the family's own text once it registers its view
        assert "4KiB pages" in result.output


@pytest.mark.cuda
def test_gpu_chase_runs_in_triton() -> None:
    pytest.importorskip("triton")
    from parity.device import get_device

    gpu = get_device("cuda")
    common = {"device": gpu.name, "stride_bytes": 128, "quick": True, "page": "device"}
    for curve, blocks in (("size", 1), ("blocks", 8)):
        case = CaseSpec(suite="latency", key=f"{curve}/device/{blocks}",
                        params={**common, "curve": curve, "working_set_bytes": 16 * KIB, "blocks": blocks})
        result = LatencySuite().measure(case, device=gpu, options=LatencyOptions(budget_s=0.05))
        assert result.ok, (result.error, result.check)
        assert result.metrics["page_label"] == "device-default"
        assert 1 < result.metrics["ns_per_load_min"] < 2000


def test_working_sets_reach_past_the_last_level_cache() -> None:
    """4x the last-level cache in quick mode, 8x in full, whatever its size (a 32 MiB L3 or a
    300 MiB one); free memory caps it at a power of two, and says so."""
    from parity.families.latency.suite import largest_working_set

    assert largest_working_set(32 * MIB, quick=True, free_bytes=None) == (128 * MIB, None)
    assert largest_working_set(300 * MIB, quick=True, free_bytes=64 * 2**30) == (1200 * MIB, None)
    assert largest_working_set(50 * MIB, quick=True, free_bytes=None) == (200 * MIB, None)  # H200-like L2
    assert largest_working_set(32 * MIB, quick=False, free_bytes=None) == (256 * MIB, None)
    # 0.25 x 3 GiB = 768 MiB, rounded down to a power of two: 512 MiB.
    assert largest_working_set(300 * MIB, quick=True, free_bytes=3 * 2**30) == (512 * MIB, "free memory")
    assert working_sets(max_bytes=1200 * MIB)[-2:] == [1024 * MIB, 1200 * MIB]


def test_planned_sweep_leaves_this_hosts_last_cache() -> None:
    """Adapts to the host: whatever LLC this machine reports (32 MiB, 300 MiB, or none), quick
    mode plans sizes to 4x it unless free memory caps them, and every case records the cap."""
    from parity.families.latency.suite import QUICK_LLC_FACTOR
    from parity.device import get_device

    cpu = get_device("cpu")
    cases = LatencySuite().cases(device=cpu, quick=True, options=LatencyOptions(pages=("base",)))
    sizes = [c.params["working_set_bytes"] for c in cases if c.params["curve"] == "size"]
    llc = cpu.properties().llc_bytes or cpu.properties().l2_bytes or 32 * MIB
    if cases[0].params["sweep_limit"] is None:
        assert max(sizes) == QUICK_LLC_FACTOR * llc // (4 * KIB) * (4 * KIB)
    else:
        assert cases[0].params["sweep_limit"] == "free memory" and max(sizes) < QUICK_LLC_FACTOR * llc


def test_a_sweep_inside_the_last_cache_says_so_and_names_no_memory() -> None:
    sizes = [2**k for k in range(12, 26)]  # to 32 MiB: under 2x the reported 32 MiB L3
    lat = {s: 1.0 if s <= 32 * KIB else 4.0 if s <= 512 * KIB else 15.0 for s in sizes}
    rows = [_row("size", s, lat[s]) for s in sizes]
    for row in rows:
        row.params["sweep_limit"] = "free memory"
    summary = _summary(rows)
    assert [p["level"] for p in summary["plateaus"]] == ["L1", "L2", "L3"]
    assert not any(p["memory"] for p in summary["plateaus"])
    finding = next(f for f in summary["findings"] if f["code"] == "sweep-inside-cache")
    assert "never left the last cache" in finding["message"] and "free memory" in finding["hint"]
    assert "--max-bytes" in finding["hint"]  # the flag parity latency has


def test_available_memory_is_read_from_meminfo(tmp_path: Path) -> None:
    from parity.device.pages import available_memory_bytes

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n")
    assert available_memory_bytes(meminfo=meminfo) == 2048 * 1024


def test_probe_keeps_the_shortest_synchronized_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake clock reads 0, 5 | 10, 12 | 20, 27: calls of 5, 2 and 7 s; the probe is 2 s and
    synchronizes before and after every call."""
    from parity.timing import probe

    ticks = iter([0.0, 5.0, 10.0, 12.0, 20.0, 27.0])
    monkeypatch.setattr(probe.time, "perf_counter", lambda: next(ticks))
    syncs = []

    class Device:
        def synchronize(self) -> None:
            syncs.append(1)

    assert probe.time_best_of(lambda: None, device=Device(), repeats=3) == 2.0
    assert len(syncs) == 6
    with pytest.raises(ValueError, match="repeats"):
        probe.time_best_of(lambda: None, device=Device(), repeats=0)


def test_chains_past_the_last_cache_take_more_samples() -> None:
    from parity.families.latency.suite import MIN_SAMPLES, PAST_CACHE_MIN_SAMPLES, _min_samples

    caches = [["L1", 32 * KIB], ["L3", 32 * MIB]]
    assert _min_samples({"curve": "size", "working_set_bytes": 32 * MIB, "caches": caches}) == MIN_SAMPLES
    assert _min_samples({"curve": "size", "working_set_bytes": 64 * MIB, "caches": caches}) == PAST_CACHE_MIN_SAMPLES
    assert _min_samples({"curve": "size", "working_set_bytes": 64 * MIB}) == MIN_SAMPLES  # nothing reported


def test_a_slope_that_stays_non_positive_becomes_an_error_row(monkeypatch) -> None:
    """Interference can make the short chain slower than the long one; after SLOPE_ATTEMPTS
    tries the case is an error row (errors are data) rather than a negative latency."""
    import parity.timing.slope
    from parity.families.latency import suite as latency_module
    from parity.model import Samples
    from parity.stats import summarize

    calls = []

    class Disturbed:
        def __init__(self, seconds: float) -> None:
            self.samples = Samples(values_s=(seconds,) * 5, method="fake")
            self.summary = summarize(self.samples.values_s)
            self.findings = ()

    def fake_measure(fn, **_):
        calls.append(fn)
        return Disturbed(2e-3 if len(calls) % 2 else 1e-3)  # short slower than long

    class Rings:
        page_label, slots, stride_bytes = "4KiB", 256, 64

        def step(self, loads: int, *, many: bool) -> None:
            pass

        def verify(self) -> bool:
            return True

    monkeypatch.setattr(parity.timing.slope, "measure", fake_measure)
    monkeypatch.setattr(latency_module, "_loads_for", lambda run, **_: 4096)
    case = CaseSpec(suite="latency", key="size/base/16384",
                    params={"curve": "size", "page": "base", "working_set_bytes": 16 * KIB,
                            "blocks": 1, "quick": True})
    result = LatencySuite()._measure_rings(case, Rings(), device=None, options=LatencyOptions())
    assert len(calls) == 2 * latency_module.SLOPE_ATTEMPTS
    assert result.error is not None and "not positive" in result.error
    assert not result.ok


def test_latency_point_off_trend_is_measured_again_and_flagged_only_if_it_stays() -> None:
    """A 40 ns point inside a 4 ns L2 plateau (another job took the core mid-chase) is measured
    again: back on trend it is replaced; still off, it stays and carries an off-trend finding."""
    from dataclasses import replace

    sizes = [2**k for k in range(12, 28)]
    lat = {s: 1.0 if s <= 32 * KIB else 4.0 if s <= 512 * KIB else 15.0 if s <= 32 * MIB else 120.0 for s in sizes}
    lat[128 * KIB] = 40.0
    rows = [_row("size", s, lat[s]) for s in sizes] + [_row("blocks", n, v) for n, v in [(1, 1.0), (2, 1.0), (3, 1.5), (4, 2.0)]]
    suite = LatencySuite()
    (again,) = suite.recheck(rows, options=LatencyOptions())
    assert again.key == f"size/base/{128 * KIB}/again" and again.params["again_of"] == f"size/base/{128 * KIB}"
    assert suite.recheck(rows, options=LatencyOptions(estimator="median"))[0].key == again.key

    def measured_again(ns: float) -> CaseResult:
        first = _row("size", 128 * KIB, ns)
        return replace(first, key=again.key, params={**first.params, "again_of": first.key})

    fixed = _summary(rows + [measured_again(4.1)])
    points = {p["working_set_bytes"]: p["latency_s"] for p in fixed["size_curves"][0]["points"]}
    assert points[128 * KIB] == 4.1 * NS and len(points) == len(sizes)
    assert fixed["findings"] == [] and fixed["headline"]["L2_s"] == 4.0 * NS
    stays = _summary(rows + [measured_again(38.0)])
    points = {p["working_set_bytes"]: p["latency_s"] for p in stays["size_curves"][0]["points"]}
    assert points[128 * KIB] == 40.0 * NS
    (finding,) = [f for f in stays["findings"] if f["code"] == "off-trend"]
    assert f"size/base/{128 * KIB} 40 ns then 38 ns" in finding["message"]


def test_a_latency_point_off_the_blocks_curve_is_measured_again() -> None:
    rows = [_row("blocks", n, v) for n, v in [(1, 1.0), (2, 9.0), (3, 1.5), (4, 2.0)]]
    assert [c.key for c in LatencySuite().recheck(rows, options=LatencyOptions())] == ["blocks/base/2/again"]
