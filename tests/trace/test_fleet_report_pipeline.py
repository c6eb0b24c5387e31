"""The fleet report, store and compare on what the map and the reduce really write: a synthetic
job (8 ranks, rank 5 slower in compute, rank 6 late every third step) through
``map_ranks`` and ``reduce_fleet``, then ``parity report --fleet``, ``store_fleet`` and
``parity compare``. The reduce's findings (``{code: {count, ...}}``) become finding dicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from parity.trace.fleet.folder import finding_dict, fleet_headline, read_fleet_folder

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from parity.trace.fleet.executor import map_ranks
    from parity.trace.fleet.reduce import reduce_fleet
    from parity.trace.fleet.synthetic import write_fleet

    tmp = tmp_path_factory.mktemp("fleet-pipeline")
    truth = write_fleet(tmp / "ranks", ranks=8, steps=9, slow_rank=5, late_rank=6, group_size=4, seed=3)
    map_ranks(list(truth.paths), str(tmp / "out"), executor="local", workers=1)
    reduce_fleet(str(tmp / "out"), ranks_per_node=4)
    return tmp / "out"


def test_the_reduce_output_reads_and_its_headline_is_its_own_columns(out: Path) -> None:
    import pyarrow.parquet as pq

    folder = read_fleet_folder(out)
    head = fleet_headline(folder)
    skew = pq.read_table(out / "collectives.parquet").column("skew_ns").to_numpy()
    assert head["skew_median_ns"] == float(np.median(skew)) and head["collectives"] == len(skew)
    assert head["wait_total_ns"] == int(pq.read_table(out / "ranks.parquet").column("wait_ns").to_numpy().sum())
    assert head["straggler_ranks"] == folder.summary["stragglers"] and 5 in head["straggler_ranks"]
    assert head["ranks"] == 8 and head["ranks_per_node"] == 4


def test_report_store_and_compare_on_the_reduce_output(out: Path, tmp_path: Path, db_path: Path) -> None:
    pytest.importorskip("vl_convert")
    from parity.cli.report import build_report
    from parity.compare import FleetInput, compare_fleets
    from parity.cli.fleet_store import store_fleet

    data, path, _ = build_report(runs=[], fleet_dirs=(str(out),), output=tmp_path / "fleet.html")
    charts = {c["id"]: c for c in data["charts"]}
    assert all(charts[f"fleet-0-{k}"]["draw"] for k in ("heatmap", "skew", "stragglers"))
    rows = charts["fleet-0-stragglers"]["spec"]["datasets"]["stragglers"]
    assert rows[0]["rank"] == 5 and rows[0]["straggler"] == "yes" and rows[0]["method"] in ("first-order", "replay")
    assert "Straggler rule: arrival-order vote" in charts["fleet-0-stragglers"]["note"]
    cells = charts["fleet-0-heatmap"]["spec"]["datasets"]["cells"]
    assert max((c for c in cells if c["lateness_s"] is not None), key=lambda c: c["lateness_s"])["lateness_rank"] in (5, 6)
    stored = store_fleet(db_path, out, paths=[])
    assert stored.paths and all(p.endswith(".json.gz") for p in stored.paths)  # from the map's rank_info
    same = FleetInput(label="x", headline=stored.headline, stragglers=stored.stragglers)
    doc = compare_fleets([same, same]).to_dict()
    assert all(c["ratio"] in (None, pytest.approx(1.0)) for c in doc["cases"]) and doc["audit"] == []


def test_the_reduce_findings_become_finding_dicts() -> None:
    f = finding_dict("incomplete", {"count": 2, "examples": [{"group": "0", "seq": 4, "ranks": 3, "members": 4}]})
    assert f["code"] == "incomplete" and f["severity"] == "warning"
    assert f["message"].startswith("2 collectives recorded by fewer ranks than their group has; ")
    assert finding_dict("p2p_not_matched", {"count": 6, "ranks": 2})["severity"] == "info"
    assert finding_dict("something_new", 3)["message"] == "3 something new"


def test_a_finding_reads_in_words_with_its_examples_and_how_many_more() -> None:
    details = {"count": 6, "ranks": 5, "examples": [{"rank": r, "ops": 2, "max_early_end_ns": 1_750_000} for r in range(5)]}
    f = finding_dict("clock_offset_suspected", details)
    assert f["severity"] == "warning" and "{" not in f["message"] and f["hint"]
    assert f["message"].startswith("6 ops ended more than 1 us before the last member of their collective arrived")
    assert f["message"].endswith("; ranks 5; rank 0, ops 2, max_early_end_ns 1750000; rank 1, ops 2, "
                                 "max_early_end_ns 1750000; rank 2, ops 2, max_early_end_ns 1750000; 2 more")


def test_real_ranks_without_sizes_give_no_bytes_median(traces_dir: Path, tmp_path: Path) -> None:
    """The shared two-rank Kineto job's send/recv record no size (bytes -1): the per-op
    median is none, not -1 B."""
    from parity.trace.fleet.executor import map_ranks
    from parity.trace.fleet.reduce import reduce_fleet

    ranks = sorted(str(p) for p in (traces_dir / "kineto/hta/trace_filter").glob("*.json.gz"))
    map_ranks(ranks, str(tmp_path / "out"), executor="local", workers=1)
    reduce_fleet(str(tmp_path / "out"))
    (op,) = fleet_headline(read_fleet_folder(tmp_path / "out"))["ops"]
    assert op["op"] == "sendrecv" and op["bytes_median"] is None and op["collectives"] == 10
