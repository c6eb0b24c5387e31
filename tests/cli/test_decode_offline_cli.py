"""``parity decode offline`` end to end on the CPU, and the ``decode`` suite through ``parity run``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from parity.cli.main import main
from parity.compare.join import headline, headline_medians
from parity.model.result import CaseResult
from parity.report.views import view_for
from verdicts import ok_or_contended, verdict_line

pytestmark = pytest.mark.torch


@pytest.fixture(autouse=True)
def _store(db_path: Path) -> Path:
    """Every test here writes to a fresh store (``PARITY_DB``), never the user's."""
    return db_path


def parity(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


FAST = ("--context", "64", "--budget-s", "0.01", "--device", "cpu")


def test_offline_writes_points_pareto_and_targets_labelled_offline(capsys, tmp_path: Path, db_path: Path) -> None:
    out_json = tmp_path / "out.json"
    status, out, err = parity(capsys, "decode", "offline", "--config", "tiny", "--batches", "1,2,4",
                              "--tpot-ms", "0.001,5,100000", *FAST, "--json", str(out_json))
    assert status == 0, err
    if view_for("decode") is not None:  # the family's own text once it registers its view
        assert "offline engine step" in out and "excludes scheduling and load balancing" in out
        assert "layers run: dense 2 of 4, head 1 of 1" in out
    assert "[3/3 100%] decode/batch=4 ok" in err
    run = orjson.loads(out_json.read_bytes())
    assert ok_or_contended(verdict_line(out, f"run {run['run_id']}: "))
    doc = {**run["summary"], "cases": run["cases"]}
    assert doc["mode"] == "offline" and doc["cards"] == 1 and doc["tpot_statistic"] == "median step"
    assert [p["batch"] for p in doc["points"]] == [1, 2, 4]
    for p in doc["points"]:
        assert {"batch", "tpot_s", "tokens_per_s_per_card", "step_s", "memory_bytes"} <= set(p)
        assert p["tokens_per_s_per_card"] == pytest.approx(p["batch"] / p["tpot_s"])
    assert doc["pareto"] and all(set(f) == {"batch", "tpot_s", "tokens_per_s_per_card"} for f in doc["pareto"])
    low, mid, high = doc["at_target"]
    assert low["value"] is None and low["status"] == "not reached" and "below the fastest" in low["reason"]
    assert high["value"] is None and high["status"] == "not reached" and "above the front's slowest TPOT" in high["reason"]
    assert low["mode"] == "offline" and low["cards"] == 1
    assert "scaled" in doc["scaling"] or "x the config's layers" in doc["scaling"]
    case = doc["cases"][0]
    # the declared medians give back tokens/s per card, so compare can resample each kind
    stored = CaseResult.from_dict(case)
    medians = headline_medians(stored, headline(stored))
    assert medians is not None and 1 / medians.time() == pytest.approx(case["metrics"]["tokens_per_s_per_card"],
                                                                      rel=1e-12)
    assert case["params"]["layers_run"] == {"dense": 2, "head": 1}
    assert case["params"]["layers_total"] == {"dense": 4, "head": 1}
    assert case["metrics"]["scaling"] == doc["scaling"] and case["check"]["passed"] is True
    assert set(case["samples"]) == {"dense", "head"}
    with sqlite3.connect(db_path) as db:
        (config,) = db.execute("select config from runs").fetchone()
    assert orjson.loads(config)["modes"] == {"decode": "offline"}


def test_step_scales_each_kind_to_the_model(capsys, tmp_path: Path, db_path: Path) -> None:
    out_json = tmp_path / "moe.json"
    status, _, err = parity(capsys, "decode", "offline", "--config", "tiny-moe", "--batch", "2", "--layers", "1",
                            "--accepted-tokens", "1.5", "--cards", "2", *FAST, "--json", str(out_json))
    assert status == 0, err
    case = orjson.loads(out_json.read_bytes())["cases"][0]
    m = case["metrics"]
    kinds = m["kinds"]
    assert {k: (v["layers_run"], v["layers_total"]) for k, v in kinds.items()} == {
        "dense": (1, 1), "moe": (1, 3), "head": (1, 1)}
    assert m["step_s"] == pytest.approx(sum(v["median_s"] * v["layers_total"] / v["layers_run"] for v in kinds.values()))
    assert m["tpot_s"] == pytest.approx(m["step_s"] / 1.5)
    assert m["tokens_per_s_per_card"] == pytest.approx(2 / m["tpot_s"] / 2)
    assert case["check"]["kinds"]["moe"]["errors"]["moe_vs_pairwise"] < 3e-2
    from parity.families.decode.moe import grouped_products_supported
    from parity.device import get_device

    import torch

    grouped = grouped_products_supported(get_device("cpu"), torch.bfloat16)
    assert m["moe_method"] == "grouped_mm" if grouped else m["moe_method"].startswith("one expert at a time")


def test_a_bad_config_is_one_line_and_exit_2(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "m.toml"
    bad.write_text("name = 3\n")
    status, _, err = parity(capsys, "decode", "offline", "--config", str(bad))
    assert status == 2 and f"{bad}: name = 3 must be text" in err and err.count("\n") == 1
    status, _, err = parity(capsys, "decode", "offline", "--batches", "1,x")
    assert status == 2 and "'--batches'" in err and "'x'" in err


def test_help_has_an_example(capsys) -> None:
    status, out, _ = parity(capsys, "decode", "offline", "--help")
    assert status == 0 and "Example:" in out and "--tpot-ms 5,10" in out and "--json" in out


def test_the_suite_runs_through_parity_run(capsys, tmp_path: Path) -> None:
    out_json = tmp_path / "run.json"
    status, out, err = parity(capsys, "run", "--device", "cpu", "--suite", "decode", "--set", "decode.config=tiny",
                              "--set", "decode.batches=1,2", "--set", "decode.context=32",
                              "--set", "decode.budget_s=0.01", "--json", str(out_json))
    assert status == 0, err
    doc = orjson.loads(out_json.read_bytes())
    suite = next(s for s in doc["suites"] if s["suite"] == "decode")
    names = [f["name"] for f in suite["figures"]]
    assert "decode.offline.tokens_per_s_per_card.at_5ms" in names and "decode.offline.tokens_per_s_per_card.at_10ms" in names
    figure = next(f for f in suite["figures"] if f["name"].endswith("at_5ms"))
    assert figure["scope"]["mode"] == "offline" and figure["scope"]["excludes"] == "scheduling and load balancing"
    assert figure["scope"]["tpot_statistic"] == "median step" and figure["scope"]["cards"] == 1
    assert any(n.startswith("decode.offline.pareto.batch_") for n in names)
    assert doc["run"]["config"]["modes"] == {"decode": "offline"}
