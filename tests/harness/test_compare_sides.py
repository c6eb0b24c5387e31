"""Compare with several runs per side on hand-built store rows: the compute-bound intersection and
its efficiencies over two runs a side, a between-run CI, and like-and-like figures (a scope that
differs is listed as not comparable with the reason; forced, computed and marked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_export_figures import _stored_gemm_run

from parity.compare import compare_runs
from parity.compare.scope import figure_comparability, scope_differences
from parity.model import ParityError
from parity.model.figure import Figure
from parity.store import Store
from parity.store.figures import StoredFigure


def test_two_runs_a_side_hand_case(tmp_path: Path) -> None:
    # B's runs are twice as fast as A's on every shape, in both runs: every ratio is 2 with a
    # between-run CI of [2, 2] (nothing varies), and the efficiencies are those of one run.
    with Store.open(tmp_path / "r.sqlite") as store:
        a = [_stored_gemm_run(store, (0.25, 0.4, 0.25)) for _ in range(2)]
        b = [_stored_gemm_run(store, (0.5, 0.8, 0.5)) for _ in range(2)]
        for run_id in a + b:
            _with_dtype(store, run_id, "bf16")
        doc = compare_runs(store, [",".join(a), ",".join(b)]).to_dict()
    assert doc["ci_kind"] == "between-run" and [r["runs"] for r in doc["runs"]] == [2, 2]
    assert [r["ids"] for r in doc["runs"]] == [a, b]
    shapes = [c for c in doc["cases"] if c["params"].get("kind") == "shape"]
    assert all(c["ratio"] == pytest.approx(2.0) and c["ratio_ci95"] == pytest.approx([2.0, 2.0]) for c in shapes)
    assert all(c["verdict"] == "faster" and c["ci_kind"] == "between-run" for c in shapes)
    assert all(len(c["run_values"][0]) == 2 for c in shapes)
    figures = {(f["name"], f["scope"].get("run")): f for f in doc["summary"]}
    bound = figures[("compare.gemm.median_ratio.compute-bound", None)]
    assert bound["value"] == pytest.approx(2.0) and bound["scope"]["cases"] == 2
    assert bound["scope"]["ci_kind"] == "between-run" and bound["scope"]["runs_per_side"] == [2, 2]
    assert figures[("gemm.median_efficiency.compute-bound.intersection", "A: NVIDIA H200")]["value"] == pytest.approx(0.325)
    assert figures[("gemm.median_efficiency.compute-bound.intersection", "B: NVIDIA H200")]["value"] == pytest.approx(0.65)
    claim = next(c for c in doc["claims"] if "compute-bound" in c)
    assert claim.startswith("on these 2 compute-bound bf16 gemm shapes, B: NVIDIA H200 ran a median of 2x [2, 2] "
                            "the speed of A: NVIDIA H200, over 2 runs per side (between-run CI); median efficiency "
                            "32.5% on A")
    ceiling = figures[("gemm.ceiling.ratio", None)]
    assert ceiling["value"] == pytest.approx(1.0) and ceiling["ci95"] == pytest.approx([1.0, 1.0])
    record = next(r for r in doc["ratios"] if r["level"] == "figure" and r["name"] == "gemm.ceiling")
    assert record["comparable"] and record["verdict"] == "no difference measured"
    assert ceiling["note"] == "no difference measured"  # said beside the figure too, as for the medians
    assert bound["note"] == ""  # [2, 2] holds no 1: a difference, no such note


def _figure(**scope: object) -> StoredFigure:
    return StoredFigure.of("gemm", Figure(name="gemm.ceiling", value=1e12, unit="FLOP/s", method="m", scope=scope))


def test_scopes_compare_on_conditions_not_on_what_a_run_found() -> None:
    same = [_figure(dtype="bf16", device="H200", shape={"m": 1}), _figure(dtype="bf16", device="MI300", shape={"m": 2})]
    assert figure_comparability(same, [frozenset({"a"})] * 2).comparable
    differ = [_figure(dtype="bf16", cases=3), _figure(dtype="fp32", cases=3)]
    check = figure_comparability(differ, [frozenset({"a"})] * 2)
    assert not check.comparable and check.reason == "scope differs: dtype: bf16 vs fp32"
    assert scope_differences([{"regime": "warm"}, {}]) == ["regime: warm vs none"]
    sets = [frozenset({"a", "b"}), frozenset({"a"})]
    check = figure_comparability([_figure(cases=2), _figure(cases=2)], sets)
    assert not check.comparable and "different case sets (1 case(s)" in check.reason
    assert figure_comparability([_figure(), _figure()], sets).comparable  # not a figure over cases
    plateaus = [StoredFigure.of("latency", Figure(name="latency.DRAM", value=v, unit="s", method="m", scope={
        "page": "base", "level": "DRAM", "from_bytes": start, "to_bytes": end, "memory": True}))
        for v, start, end in ((9e-8, 16 << 20, 1 << 30), (1.1e-7, 23724032, 2 << 30))]
    assert figure_comparability(plateaus, [frozenset({"a"})] * 2).comparable  # where each found its DRAM
    plateaus[1].scope["page"] = "thp"
    assert figure_comparability(plateaus, [frozenset({"a"})] * 2).reason == "scope differs: page: base vs thp"


def _with_dtype(store: Store, run_id: str, dtype: str) -> None:
    """The run's gemm figures with a ``gemm.ceiling`` of ``dtype`` added (the store keeps the
    figures of a suite given last)."""
    store.add_figures(run_id, "gemm", [*store.figures(run_id, "gemm"), Figure(name="gemm.ceiling", value=2e12 if dtype == "fp32" else 1e12,
                                              unit="FLOP/s", method="m", scope={"dtype": dtype})])


def test_a_figure_of_another_scope_is_not_comparable_unless_forced(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        a, b = _stored_gemm_run(store), _stored_gemm_run(store)
        _with_dtype(store, a, "bf16")  # the last of a name stored is the one compared
        _with_dtype(store, b, "fp32")
        doc = compare_runs(store, [a, b]).to_dict()
        forced = compare_runs(store, [a, b], force=True).to_dict()
    ceiling = next(f for f in doc["summary"] if f["name"] == "gemm.ceiling.ratio")
    assert ceiling["value"] is None and ceiling["note"] == "not comparable: scope differs: dtype: bf16 vs fp32"
    assert [r["name"] for r in doc["not_comparable"]] == ["gemm.ceiling"]
    again = next(f for f in forced["summary"] if f["name"] == "gemm.ceiling.ratio")
    assert again["value"] == pytest.approx(2.0) and again["note"].startswith("forced: not comparable")
    assert next(r for r in forced["ratios"] if r["name"] == "gemm.ceiling")["marked"]


def test_a_group_side_lists_its_runs_in_repeat_order(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        ids = []
        for index in (1, 0):
            run = store.create_run(config={"group": "rep-x", "repeat": {"index": index, "of": 2}, "label": "L"},
                                   provenance={})
            ids.append(run.run_id)
        from parity.compare.sides import side_run_ids

        assert side_run_ids(store, "group:rep-x") == ids[::-1] == side_run_ids(store, "group:rep")
        assert side_run_ids(store, "group:latest") == ids[::-1]
        with pytest.raises(ParityError, match="no repeat group matches 'other'"):
            side_run_ids(store, "group:other")
