"""The link bars on two namespace nodes of two ranks each, the link between them shaped to
1 Gbit/s with tc tbf: the preflight names that link and the comm run after it records the
preflight; the inter-node busbw of all_reduce at 16 MiB is within 15% of the shaped rate's bus
equivalent and the intra-node figure is not; the α-β fit from sizes up to 4 MiB predicts the
16 MiB and 64 MiB times within 15% (judged when its points are clean: measured under contention,
which parity flags, a miss is a skip with the reason); a duration run shows a shaping change
mid-run as drift.

The bus equivalent of the shaped rate ``R`` (B/s each way) for an inter-node group: all_reduce on
``n = 2`` ranks sends ``S·2(n-1)/n = S`` bytes each way, so busbw = S/t tends to ``R`` for one
group alone; the inter dimension runs its ``g`` groups (the i-th rank of every node) at once
over the one link, so each group's share is ``R/g``. Frames and TCP/IP headers take a few
percent of ``R``, inside the 15% asked.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from links_launch import launch
from netns import Nodes, NodesUnavailable, make_nodes

from parity.store import Store

RATE_BIT = 1e9
RATE_BPS = RATE_BIT / 8
MIB = 2**20


@pytest.fixture(scope="module")
def shaped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Nodes, Path]]:
    try:
        manager = make_nodes(2, rate_bit=RATE_BIT)
        nodes = manager.__enter__()
    except NodesUnavailable as error:
        pytest.skip(str(error))
    try:
        yield nodes, tmp_path_factory.mktemp("links") / "runs.sqlite"
    finally:
        manager.__exit__(None, None, None)


@pytest.fixture(scope="module")
def preflight(shaped: tuple[Nodes, Path]) -> dict:
    nodes, db = shaped
    out = db.parent / "preflight.json"
    done = launch(nodes, ["preflight", "--budget", "4", "--size-bytes", "2MiB"], db=db, json_path=out,
                  timeout_s=240)
    assert done.returncode == 0, done.stdout[-2000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def sweep(shaped: tuple[Nodes, Path], preflight: dict) -> dict:
    nodes, db = shaped
    out = db.parent / "sweep.json"
    done = launch(nodes, ["collectives", "--ops", "all_reduce", "--dimensions", "intra,inter", "--min-bytes", "64KiB",
                          "--max-bytes", "64MiB", "--factor", "4", "--iterations", "5"], db=db, json_path=out,
                  timeout_s=280)
    assert done.returncode == 0, done.stdout[-2000:]
    return json.loads(out.read_text())


def test_the_preflight_names_the_shaped_link(preflight: dict) -> None:
    summary = preflight["summary"]
    inter = [k for k in summary["links"] if k["scope"] == "inter-node"]
    assert len(inter) == 1 and len(summary["nodes"]) == 2
    assert summary["slow"] == [inter[0]["link"]] and summary["slowest"] == inter[0]["link"]
    assert inter[0]["bandwidth_bps"] == pytest.approx(RATE_BPS, rel=0.15)
    assert all(p["ok"] for p in summary["pairs"]) and len(summary["pairs"]) == 6


def _row(sweep: dict, dimension: str, size: int) -> dict:
    rows = [r for r in sweep["summary"]["rows"] if r.get("dimension") == dimension and r["size_bytes"] == size]
    assert rows, f"no {dimension} row at {size} B"
    return rows[0]


def test_inter_node_busbw_is_the_shaped_rate_and_intra_node_is_not(sweep: dict) -> None:
    inter, intra = _row(sweep, "inter", 16 * MIB), _row(sweep, "intra", 16 * MIB)
    groups = 2  # the inter dimension's groups (ranks 0,2 and 1,3) share the one link
    expected = RATE_BPS / groups
    assert inter["busbw_bps"] == pytest.approx(expected, rel=0.15)
    assert abs(intra["busbw_bps"] / expected - 1) > 0.15
    assert sweep["summary"]["wrong"] == 0


def test_the_comm_run_records_the_preflight(shaped: tuple[Nodes, Path], preflight: dict, sweep: dict) -> None:
    with Store.open(shaped[1]) as store:
        run = store.get_run(sweep["run_id"])
    assert run.provenance["preflight"]["run_id"] == preflight["run_id"]
    assert sweep["provenance"]["preflight"]["run_id"] == preflight["run_id"]  # in --json too
    assert run.provenance["topology"]["nodes"] == 2


def test_the_fit_up_to_4_mib_predicts_16_and_64_mib(shaped: tuple[Nodes, Path], sweep: dict) -> None:
    from parity.export.points import stored_points
    from parity.metrics.alphabeta import check_predictions, fit_alpha_beta

    with Store.open(shaped[1]) as store:
        _, points = stored_points(store, [sweep["run_id"]])
    inter = [p for p in points if p.op == "all_reduce" and p.dimension == "inter"]
    fit = fit_alpha_beta([p for p in inter if p.size_bytes <= 4 * MIB])
    check = check_predictions(fit, [p for p in inter if p.size_bytes in (16 * MIB, 64 * MIB)], tolerance=0.15)
    assert len(check.predictions) == 2
    if not check.within and fit.doubtful_points + check.doubtful_points:
        # the model is judged on clean measurements; on these parity said they are not (a
        # busy CI host once slowed the small sizes: beta 28% low, the run DOUBTFUL, contended)
        codes = sorted(set(fit.doubts) | {c for p in check.predictions for c in p.doubts})
        pytest.skip(f"{fit.doubtful_points} of the fit's {fit.points} points and {check.doubtful_points} of the 2 "
                    f"predicted were measured {' or '.join(codes)}, as parity flagged them: the fit's "
                    f"accuracy is not judged on them (max error {check.max_abs_error:.1%})")
    assert check.within, check.to_dict()


def _reshape_once_running(db: Path, before: set[str], nodes: Nodes, *, after_s: float, stop: threading.Event) -> None:
    """Shape the link to a quarter of its rate ``after_s`` seconds after a new run appears in the store (the
    runner creates it before the first case), so the change lands inside the timed case."""
    while not stop.is_set():
        if db.exists():
            with Store.open(db, read_only=True) as store:
                if {r.run_id for r in store.list_runs()} - before:
                    break
        stop.wait(0.5)
    if not stop.wait(after_s):
        nodes.shape(RATE_BIT / 4)


def test_a_shaping_change_mid_run_shows_as_drift(shaped: tuple[Nodes, Path]) -> None:
    nodes, db = shaped
    out = db.parent / "duration.json"
    before: set[str] = set()
    if db.exists():
        with Store.open(db, read_only=True) as store:
            before = {r.run_id for r in store.list_runs()}
    stop = threading.Event()
    change = threading.Thread(target=_reshape_once_running, args=(db, before, nodes),
                              kwargs={"after_s": 8.0, "stop": stop}, daemon=True)
    change.start()
    try:
        done = launch(nodes, ["collectives", "--ops", "all_reduce", "--dimensions", "inter", "--duration", "12",
                              "--window", "2", "--size-bytes", "1MiB"], db=db, json_path=out, timeout_s=400)
    finally:
        stop.set()
        change.join(timeout=10)
        nodes.shape(RATE_BIT)
    assert done.returncode == 0, done.stdout[-2000:]
    drift = json.loads(out.read_text())["summary"]["drift"]
    assert len(drift) == 1 and len(drift[0]["windows"]) >= 4
    assert drift[0]["drift_last_first"] < -0.3  # the link went to a quarter of its rate
    assert drift[0]["drift_spread"] > 0.5
    names = {f["name"] for f in json.loads(out.read_text())["figures"]}
    assert "collectives.all_reduce.busbw.drift_spread" in names
