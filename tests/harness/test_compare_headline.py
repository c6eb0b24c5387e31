"""Each case's headline in a comparison: the metric the case declares (``headline_metric``), its
unit read from its name, else the harness's canonical metrics; no table of family metric names."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.compare import compare_runs
from parity.compare.join import headline, metric_unit
from parity.model import ParityError
from parity.model.result import CaseResult
from parity.model.samples import Samples
from parity.store import Store
from parity.store.headlines import declared_medians, medians_weights


@pytest.mark.parametrize(("name", "unit"), [
    ("achieved_flops", ("FLOP/s", 1.0)), ("flop_per_s", ("FLOP/s", 1.0)), ("gbps", ("B/s", 1e9)),
    ("busbw_gbps", ("B/s", 1e9)), ("bandwidth_bps", ("B/s", 1.0)), ("bytes_per_s", ("B/s", 1.0)),
    ("tokens_per_s", ("tok/s", 1.0)), ("ns_per_load", ("s", 1e-9)), ("ttft_ms", ("s", 1e-3)),
    ("latency_us", ("s", 1e-6)), ("median_s", ("s", 1.0)), ("requests_per_s", None), ("score", None)])
def test_a_metric_name_gives_its_unit(name: str, unit: tuple[str, float] | None) -> None:
    assert metric_unit(name) == unit


def _case(metrics: dict[str, object], key: str = "k") -> CaseResult:
    return CaseResult(suite="plug", key=key, metrics=metrics, check={"passed": True},
                      samples={"main": Samples(values_s=(1.0, 1.0, 1.0), method="host-clock")})


def test_a_declared_headline_wins_then_the_canonical_metrics() -> None:
    chosen = headline(_case({"headline_metric": "ns_per_load", "ns_per_load": 4.0, "median_s": 1.0}))
    assert chosen is not None and (chosen.metric, chosen.unit, chosen.scale) == ("ns_per_load", "s", 1e-9)
    assert chosen.higher_is_better is False and chosen.from_main_samples is False
    chosen = headline(_case({"headline_metric": "gbps", "headline_from_samples": True, "gbps": 4.0}))
    assert chosen is not None and chosen.from_main_samples and chosen.higher_is_better and chosen.scale == 1e9
    for metrics, metric in (({"headline_metric": "gbps", "gbps": 0.0, "bytes_per_s": 2.0}, "bytes_per_s"),
                            ({"flop_per_s": 1.0, "bytes_per_s": 2.0, "median_s": 1.0}, "flop_per_s"),
                            ({"median_s": 1.0, "achieved_flops": 3.0}, "median_s")):
        chosen = headline(_case(metrics))
        assert chosen is not None and chosen.metric == metric and chosen.from_main_samples
    assert headline(_case({"achieved_flops": 3.0})) is None
    with pytest.raises(ParityError, match="plug/k declares headline metric 'score'"):
        headline(_case({"headline_metric": "score", "score": 3.0}))


def test_a_family_of_another_package_compares_on_its_declared_headline(tmp_path: Path) -> None:
    # B answers in 2 ns where A takes 4 ns: B is twice as fast; values in s.
    with Store.open(tmp_path / "r.sqlite") as store:
        ids = []
        for ns in (4.0, 2.0):
            run = store.create_run(config={"suites": ["plug"]}, provenance={})
            store.add_case(run.run_id, _case({"headline_metric": "probe_ns", "probe_ns": ns}, key="probe"))
            store.finish_run(run.run_id, status="complete", summary={"ok": True})
            ids.append(run.run_id)
        doc = compare_runs(store, ids).to_dict()
    (row,) = doc["cases"]
    assert row["metric"] == "probe_ns" and row["unit"] == "s" and row["higher_is_better"] is False
    assert row["values"] == [pytest.approx(4e-9), pytest.approx(2e-9)]
    assert row["ratio"] == pytest.approx(2.0) and row["ratio_ci95"] is None


def test_the_sample_sets_a_case_stored_before_schema_6_is_made_of_by_hand() -> None:
    """The engine's slope: batch 4 on 2 cards, t(2) = 30 ms, t(32) = 180 ms: 5 ms a step,
    400 tok/s per card; ``c = 400 x 0.005 = 2`` (batch / cards), weights ``±1 / (2 x 30)``, and
    ``1 / (180 - 30 ms) / 60`` gives back 400. Latency: 1,000 and 4,000 loads, ``±1e9 / 3000``.
    A declaration whose medians do not give the stored headline back is not made."""
    engine = {"headline_metric": "tokens_per_s_per_card", "tokens_per_s_per_card": 400.0, "step_s": 0.005,
              "short": 2, "long": 32}
    weights = medians_weights(engine)
    assert weights == {"short": pytest.approx(-1 / 60), "long": pytest.approx(1 / 60)}
    assert declared_medians(engine, {"short": [0.03], "long": [0.18]}) == {"headline_medians": weights}
    assert declared_medians(engine, {"short": [0.03], "long": [0.20]}) == {}
    assert declared_medians(engine, {"long": [0.18]}) == {}
    latency = {"headline_metric": "ns_per_load", "ns_per_load": 10.0, "short_loads": 1000, "long_loads": 4000}
    assert declared_medians(latency, {"short": [9e-6, 10e-6, 11e-6], "long": [40e-6]}) == {
        "headline_medians": {"short": pytest.approx(-1e9 / 3000), "long": pytest.approx(1e9 / 3000)}}
    assert medians_weights({**latency, "headline_medians": {"long": 1.0}}) == {}  # declared already
    assert medians_weights({"headline_metric": "bytes_per_s", "bytes_per_s": 1e9}) == {}
